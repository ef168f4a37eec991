package graph

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Config says how to reach one Gremlin endpoint. The zero value of every
// field but Endpoint means "use the default" (see [Config.WithDefaults]).
type Config struct {
	// Endpoint is the Gremlin websocket URL: ws://127.0.0.1:8182/gremlin
	// locally, wss://<cluster>.<region>.neptune.amazonaws.com:8182/gremlin
	// for Neptune. Required.
	Endpoint string

	// TLS configures wss:// connections (nil: system roots, server name
	// from the endpoint). Ignored for ws://.
	TLS *tls.Config

	// IAMAuth signs every websocket handshake with SigV4 (service
	// "neptune-db"), re-signed on every (re)connect. Region is required
	// with it.
	IAMAuth bool
	Region  string
	// Credentials sign the handshakes (nil: the AWS default credential
	// chain, loaded by [NewDialer]).
	Credentials aws.CredentialsProvider
	// Now is the clock of the signatures (nil: time.Now).
	Now func() time.Time

	// DialTimeout bounds opening a connection (default 5 s).
	DialTimeout time.Duration

	// WriteBufferSize is gremlin-go's websocket write buffer and its
	// largest request (default 1 MiB).
	WriteBufferSize int

	// Logger receives gremlin-go's logs (default slog.Default()).
	Logger *slog.Logger
}

// Defaults of [Config].
const (
	DefaultDialTimeout     = 5 * time.Second
	DefaultWriteBufferSize = 1 << 20
)

// WithDefaults returns c with every unset field set to its default and the
// endpoint normalised (see [NormalizeEndpoint]).
func (c Config) WithDefaults() Config {
	c.Endpoint = NormalizeEndpoint(c.Endpoint)
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.WriteBufferSize == 0 {
		c.WriteBufferSize = DefaultWriteBufferSize
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate says what is wrong with c (after [Config.WithDefaults]).
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("graph: "+format, a...)) }
	u, err := url.Parse(c.Endpoint)
	switch {
	case c.Endpoint == "":
		bad("Endpoint is empty: set it to ws://host:8182/gremlin (local) or wss://<neptune endpoint>:8182/gremlin")
	case err != nil:
		bad("Endpoint %q is not a URL: %v", c.Endpoint, err)
	case u.Scheme != "ws" && u.Scheme != "wss":
		bad("Endpoint %q: scheme must be ws or wss, not %q", c.Endpoint, u.Scheme)
	case u.Host == "":
		bad("Endpoint %q has no host", c.Endpoint)
	}
	if c.IAMAuth && err == nil && u.Scheme != "wss" {
		bad("IAMAuth needs a wss:// Endpoint (Neptune accepts IAM only over TLS)")
	}
	if c.IAMAuth && err == nil && u.Path != "/gremlin" {
		bad("Endpoint %q: with IAMAuth the path must be /gremlin (Neptune's; the handshake is signed for the path dialled)", c.Endpoint)
	}
	if c.IAMAuth && c.Region == "" {
		bad("IAMAuth is set but Region is empty: set Region to the Neptune cluster's region, e.g. us-east-1")
	}
	if c.DialTimeout < 0 {
		bad("DialTimeout must be positive")
	}
	if c.WriteBufferSize < 0 {
		bad("WriteBufferSize must be positive")
	}
	return errors.Join(errs...)
}

// NormalizeEndpoint gives an endpoint without a path (or with "/") the
// path /gremlin (Neptune's and Gremlin Server's), so that what is dialled
// is what IAM signs. Anything unparsable is returned as is, for Validate.
func NormalizeEndpoint(ep string) string {
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return ep
	}
	u.Path = "/gremlin"
	return u.String()
}
