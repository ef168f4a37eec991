package sink

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
)

// Dialer opens gremlin-go connections to one Gremlin endpoint with the
// project's connection settings: TLS for wss://, Neptune IAM (SigV4,
// re-signed on every reconnect), the dial timeout, the write buffer and
// gremlin-go's logs routed to slog. The sink's writers and `lineageflow
// serve` (the explorer) both dial through it, so the two see the same
// endpoint the same way.
type Dialer struct {
	cfg    Config
	signer *sigV4Auth
	tls    *tls.Config
}

// NewDialer returns the Dialer of cfg's Endpoint, TLS, IAMAuth, Region,
// DialTimeout, WriteBufferSize and Logger (after [Config.WithDefaults]). With
// IAMAuth it loads the AWS default credential chain now.
func NewDialer(cfg Config) (*Dialer, error) {
	cfg = cfg.WithDefaults()
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("sink: endpoint: %w", err)
	}
	d := &Dialer{cfg: cfg, tls: cfg.TLS}
	if cfg.IAMAuth {
		d.signer, err = newSigV4Auth(context.Background(), u, cfg.Region)
		if err != nil {
			return nil, err
		}
	}
	if d.tls == nil {
		d.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return d, nil
}

// DialOptions are the per-connection settings of [Dialer.Dial].
type DialOptions struct {
	// Connections is gremlin-go's pool size for this
	// DriverRemoteConnection (default 1: one websocket).
	Connections int
	// Logger receives gremlin-go's logs (default the Dialer's logger).
	Logger *slog.Logger
	// Verbosity is the least gremlin-go log level passed on (default
	// gremlingo.Warning).
	Verbosity gremlingo.LogVerbosity
}

// Dial opens one DriverRemoteConnection. It gives up when ctx is done or
// after the Dialer's DialTimeout; a connection finished after ctx is done
// is closed.
func (d *Dialer) Dial(ctx context.Context, o DialOptions) (*gremlingo.DriverRemoteConnection, error) {
	if o.Connections < 1 {
		o.Connections = 1
	}
	if o.Logger == nil {
		o.Logger = d.cfg.Logger
	}
	if o.Verbosity == 0 {
		o.Verbosity = gremlingo.Warning
	}
	var auth gremlingo.AuthInfoProvider = &gremlingo.AuthInfo{}
	if d.signer != nil {
		// Sign now, so a credential problem surfaces as a dial error, and
		// again on any reconnect gremlin-go makes by itself.
		if _, err := d.signer.header(ctx); err != nil {
			return nil, err
		}
		auth = gremlingo.NewDynamicAuth(d.signer.provider)
	}
	type res struct {
		drc *gremlingo.DriverRemoteConnection
		err error
	}
	ch := make(chan res, 1)
	go func() {
		drc, err := gremlingo.NewDriverRemoteConnection(d.cfg.Endpoint, func(s *gremlingo.DriverRemoteConnectionSettings) {
			s.TraversalSource = "g"
			s.AuthInfo = auth
			s.TlsConfig = d.tls.Clone()
			s.ConnectionTimeout = d.cfg.DialTimeout
			s.WriteBufferSize = d.cfg.WriteBufferSize
			s.MaximumConcurrentConnections = o.Connections
			s.InitialConcurrentConnections = o.Connections
			s.Logger = slogAdapter{o.Logger}
			s.LogVerbosity = o.Verbosity
		})
		ch <- res{drc, err}
	}()
	select {
	case r := <-ch:
		return r.drc, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.drc != nil {
				r.drc.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
