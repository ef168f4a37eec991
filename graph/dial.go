package graph

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
)

// Dialer opens gremlin-go connections to one Gremlin endpoint with the
// settings of its [Config]: TLS for wss://, Neptune IAM (SigV4, re-signed
// on every reconnect), the dial timeout, the write buffer and gremlin-go's
// logs routed to slog. The sink's writers, the explorer, verify and diff
// all dial through one, so they see an endpoint the same way. It is safe
// for concurrent use.
type Dialer struct {
	cfg    Config
	signer *sigV4Auth
	tls    *tls.Config
}

// NewDialer returns the Dialer of cfg (after [Config.WithDefaults]). With
// IAMAuth and no Credentials it loads the AWS default credential chain now.
// It does not validate cfg: call [Config.Validate] for a message that says
// what to fix.
func NewDialer(cfg Config) (*Dialer, error) {
	cfg = cfg.WithDefaults()
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("graph: endpoint: %w", err)
	}
	d := &Dialer{cfg: cfg, tls: cfg.TLS}
	if cfg.IAMAuth {
		d.signer, err = newSigV4Auth(context.Background(), u, cfg)
		if err != nil {
			return nil, err
		}
	}
	if d.tls == nil {
		d.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return d, nil
}

// Endpoint is the endpoint the Dialer dials (normalised).
func (d *Dialer) Endpoint() string { return d.cfg.Endpoint }

// HandshakeHeader returns the extra headers the next websocket handshake
// carries: with IAMAuth a fresh SigV4 signature (Authorization,
// X-Amz-Date, X-Amz-Security-Token for temporary credentials, Host),
// without it none (nil).
func (d *Dialer) HandshakeHeader(ctx context.Context) (http.Header, error) {
	if d.signer == nil {
		return nil, nil
	}
	return d.signer.header(ctx)
}

// DialOptions are the per-connection settings of [Dialer.Dial].
type DialOptions struct {
	// Connections is gremlin-go's pool size for this
	// DriverRemoteConnection (default 1: one websocket).
	Connections int
	// Logger receives gremlin-go's logs (default the Dialer's logger).
	Logger *slog.Logger
	// Verbosity is the least gremlin-go log level passed on (default
	// gremlingo.Warning; gremlingo.Off for none).
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
				CloseQuietly(r.drc)
			}
		}()
		return nil, ctx.Err()
	}
}

// CloseQuietly closes drc. gremlin-go v3.7.4 may close a broken transport
// twice, from its read loop and from Close ("close of closed channel"); the
// socket is closed either way, so that panic is swallowed.
func CloseQuietly(drc *gremlingo.DriverRemoteConnection) {
	defer func() { _ = recover() }()
	drc.Close()
}

// slogAdapter routes gremlin-go's logs to slog.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Log(verbosity gremlingo.LogVerbosity, v ...interface{}) {
	a.l.Log(context.Background(), level(verbosity), "gremlin-go: "+fmt.Sprint(v...))
}

func (a slogAdapter) Logf(verbosity gremlingo.LogVerbosity, format string, v ...interface{}) {
	a.l.Log(context.Background(), level(verbosity), "gremlin-go: "+fmt.Sprintf(format, v...))
}

func level(v gremlingo.LogVerbosity) slog.Level {
	switch v {
	case gremlingo.Debug:
		return slog.LevelDebug
	case gremlingo.Info:
		return slog.LevelInfo
	case gremlingo.Warning:
		return slog.LevelWarn
	}
	return slog.LevelError
}
