package explorer

// Authentication of the explorer (issue 25): lineage names every table,
// job, owner and SQL text of an estate, so `serve` beyond loopback verifies
// who asks. It verifies a JWT (RS256 or ES256) against a key set: a JWKS
// (an OIDC issuer's jwks_uri, or a file), or a per-key URL with {kid} (the
// ALB's https://public-keys.auth.elb.<region>.amazonaws.com/{kid}, one PEM
// key per kid). The token comes from a trusted header set by the proxy in
// front (the ALB's x-amzn-oidc-data, oauth2-proxy's
// X-Forwarded-Access-Token) or from Authorization: Bearer. The identity
// (sub, email) goes to the access log, never the token.

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// AuthConfig configures [NewAuthenticator]. Set JWKSURL or JWKSFile.
type AuthConfig struct {
	// JWKSURL is the key set's URL (https://, or http:// on loopback for
	// tests). With "{kid}" in it, each key is fetched by its kid, as PEM or
	// one JWK (the ALB's public-keys endpoint).
	JWKSURL string
	// JWKSFile is a JWKS on disk (read once at start).
	JWKSFile string
	// Header is a trusted header that carries the JWT (x-amzn-oidc-data
	// behind an ALB with OIDC). Empty: Authorization: Bearer only. Only
	// trust a header that the proxy in front always sets or strips.
	Header string
	// Issuer is the required iss claim.
	Issuer string
	// Audience, if set, must be in the aud claim.
	Audience string
	// Client fetches keys (default: 5 s timeout).
	Client *http.Client
	// Logger gets the access log (method, path, status, identity).
	Logger *slog.Logger
	// Now (default time.Now).
	Now func() time.Time
}

// Enabled reports whether authentication is configured.
func (c AuthConfig) Enabled() bool { return c.JWKSURL != "" || c.JWKSFile != "" }

// Validate says what to fix, naming serve's flags.
func (c AuthConfig) Validate() error {
	var errs []error
	if c.JWKSURL != "" && c.JWKSFile != "" {
		errs = append(errs, errors.New("-auth-jwks-url and -auth-jwks-file: set one"))
	}
	if c.JWKSURL != "" {
		u, err := url.Parse(strings.ReplaceAll(c.JWKSURL, "{kid}", "kid"))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("-auth-jwks-url %q: %w", c.JWKSURL, err))
		case u.Scheme == "https" && u.Host != "":
		case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		default:
			errs = append(errs, fmt.Errorf("-auth-jwks-url %q: use an https:// URL (http:// only on loopback)", c.JWKSURL))
		}
	}
	if c.Enabled() && c.Issuer == "" {
		errs = append(errs, errors.New("-auth-issuer is required with -auth-jwks-url/-auth-jwks-file: the iss claim tokens must carry (an OIDC issuer URL)"))
	}
	if !c.Enabled() && (c.Issuer != "" || c.Audience != "" || c.Header != "") {
		errs = append(errs, errors.New("-auth-issuer, -auth-audience and -auth-header need -auth-jwks-url or -auth-jwks-file"))
	}
	return errors.Join(errs...)
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Identity is who a verified token names.
type Identity struct {
	Subject string
	Email   string
}

func (id Identity) String() string {
	if id.Email != "" {
		return id.Subject + " <" + id.Email + ">"
	}
	return id.Subject
}

type identityKey struct{}

// IdentityFrom returns the identity of an authenticated request.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// Authenticator verifies tokens. Safe for concurrent use.
type Authenticator struct {
	cfg AuthConfig
	mu  struct {
		sync.Mutex
		keys      map[string]crypto.PublicKey
		lastFetch time.Time
	}
}

var kidRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// NewAuthenticator validates cfg and loads the key set (a JWKS that cannot
// be read fails the start; a per-kid URL is read on first use).
func NewAuthenticator(ctx context.Context, cfg AuthConfig) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 5 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &Authenticator{cfg: cfg}
	a.mu.keys = map[string]crypto.PublicKey{}
	switch {
	case cfg.JWKSFile != "":
		b, err := os.ReadFile(cfg.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("-auth-jwks-file: %w", err)
		}
		keys, err := parseJWKS(b)
		if err != nil {
			return nil, fmt.Errorf("-auth-jwks-file %s: %w", cfg.JWKSFile, err)
		}
		a.mu.keys = keys
	case !strings.Contains(cfg.JWKSURL, "{kid}"):
		keys, err := a.fetchJWKS(ctx)
		if err != nil {
			return nil, fmt.Errorf("-auth-jwks-url: %w", err)
		}
		a.mu.keys, a.mu.lastFetch = keys, cfg.Now()
	}
	return a, nil
}

func (a *Authenticator) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := a.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return b, nil
}

func (a *Authenticator) fetchJWKS(ctx context.Context) (map[string]crypto.PublicKey, error) {
	b, err := a.get(ctx, a.cfg.JWKSURL)
	if err != nil {
		return nil, err
	}
	return parseJWKS(b)
}

// key returns the key of kid: cached; else the JWKS read again (at most
// every 30 s: a key rotation) or, with a per-kid URL, that key fetched.
func (a *Authenticator) key(ctx context.Context, kid string) (crypto.PublicKey, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if k, ok := a.mu.keys[kid]; ok {
		return k, nil
	}
	switch {
	case a.cfg.JWKSFile != "":
	case strings.Contains(a.cfg.JWKSURL, "{kid}"):
		if !kidRE.MatchString(kid) {
			return nil, errors.New("bad kid")
		}
		if len(a.mu.keys) >= 64 { // rotations only: never grows without bound
			clear(a.mu.keys)
		}
		b, err := a.get(ctx, strings.ReplaceAll(a.cfg.JWKSURL, "{kid}", url.PathEscape(kid)))
		if err != nil {
			return nil, err
		}
		k, err := parseKey(b)
		if err != nil {
			return nil, err
		}
		a.mu.keys[kid] = k
		return k, nil
	case a.cfg.Now().Sub(a.mu.lastFetch) >= 30*time.Second:
		keys, err := a.fetchJWKS(ctx)
		a.mu.lastFetch = a.cfg.Now()
		if err != nil {
			return nil, err
		}
		a.mu.keys = keys
		if k, ok := keys[kid]; ok {
			return k, nil
		}
	}
	return nil, errors.New("unknown kid")
}

// parseKey reads one key: PEM (PKIX) or one JWK.
func parseKey(b []byte) (crypto.PublicKey, error) {
	if blk, _ := pem.Decode(b); blk != nil {
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, err
		}
		switch k.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey:
			return k, nil
		}
		return nil, fmt.Errorf("key type %T: want RSA or EC P-256", k)
	}
	var j jwk
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("key: neither PEM nor a JWK: %w", err)
	}
	return j.key()
}

type jwk struct {
	Kty, Kid, Crv, N, E, X, Y, Use string
}

func parseJWKS(b []byte) (map[string]crypto.PublicKey, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	keys := map[string]crypto.PublicKey{}
	for _, j := range set.Keys {
		if j.Use != "" && j.Use != "sig" {
			continue
		}
		k, err := j.key()
		if err != nil {
			continue // a key type we do not verify with (e.g. RSA-OAEP, Ed25519)
		}
		keys[j.Kid] = k
	}
	if len(keys) == 0 {
		return nil, errors.New("the JWKS holds no RSA or EC P-256 signing key")
	}
	return keys, nil
}

func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func (j jwk) key() (crypto.PublicKey, error) {
	switch j.Kty {
	case "RSA":
		n, err1 := b64(j.N)
		e, err2 := b64(j.E)
		if err := errors.Join(err1, err2); err != nil || len(n) < 256 || len(e) == 0 || len(e) > 4 {
			return nil, errors.New("bad RSA key (2048 bits or more)")
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
	case "EC":
		x, err1 := b64(j.X)
		y, err2 := b64(j.Y)
		if err := errors.Join(err1, err2); err != nil || j.Crv != "P-256" || len(x) != 32 || len(y) != 32 {
			return nil, errors.New("bad EC key (P-256 only)")
		}
		pt := append(append([]byte{4}, x...), y...)
		// Refuses a point that is not on the curve.
		return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), pt)
	}
	return nil, fmt.Errorf("key type %q", j.Kty)
}

// Verify checks token's signature, expiry, issuer and audience and
// returns the identity it names. Errors never hold the token.
func (a *Authenticator) Verify(ctx context.Context, token string) (Identity, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Identity{}, errors.New("not a JWT")
	}
	hb, err := b64(parts[0])
	if err != nil {
		return Identity{}, errors.New("bad JWT header")
	}
	var hdr struct{ Alg, Kid string }
	if err := json.Unmarshal(hb, &hdr); err != nil {
		return Identity{}, errors.New("bad JWT header")
	}
	if hdr.Alg != "RS256" && hdr.Alg != "ES256" {
		return Identity{}, fmt.Errorf("alg %q: RS256 or ES256 only", hdr.Alg)
	}
	sig, err := b64(parts[2])
	if err != nil {
		return Identity{}, errors.New("bad JWT signature encoding")
	}
	key, err := a.key(ctx, hdr.Kid)
	if err != nil {
		return Identity{}, fmt.Errorf("key %q: %w", hdr.Kid, err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	switch k := key.(type) {
	case *rsa.PublicKey:
		if hdr.Alg != "RS256" || rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig) != nil {
			return Identity{}, errors.New("bad signature")
		}
	case *ecdsa.PublicKey:
		if hdr.Alg != "ES256" || len(sig) != 64 ||
			!ecdsa.Verify(k, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
			return Identity{}, errors.New("bad signature")
		}
	default:
		return Identity{}, errors.New("bad key")
	}
	pb, err := b64(parts[1])
	if err != nil {
		return Identity{}, errors.New("bad JWT claims")
	}
	var cl struct {
		Iss   string          `json:"iss"`
		Sub   string          `json:"sub"`
		Email string          `json:"email"`
		Aud   json.RawMessage `json:"aud"`
		Exp   *json.Number    `json:"exp"`
		Nbf   *json.Number    `json:"nbf"`
	}
	dec := json.NewDecoder(bytes.NewReader(pb))
	dec.UseNumber()
	if err := dec.Decode(&cl); err != nil {
		return Identity{}, errors.New("bad JWT claims")
	}
	now := a.cfg.Now()
	const leeway = time.Minute
	if cl.Exp == nil {
		return Identity{}, errors.New("no exp claim")
	}
	if exp, err := cl.Exp.Float64(); err != nil || now.After(time.Unix(int64(exp), 0).Add(leeway)) {
		return Identity{}, errors.New("token expired")
	}
	if cl.Nbf != nil {
		if nbf, err := cl.Nbf.Float64(); err != nil || now.Add(leeway).Before(time.Unix(int64(nbf), 0)) {
			return Identity{}, errors.New("token not valid yet")
		}
	}
	if cl.Iss != a.cfg.Issuer {
		return Identity{}, fmt.Errorf("issuer %q is not %q", cl.Iss, a.cfg.Issuer)
	}
	if a.cfg.Audience != "" && !hasAudience(cl.Aud, a.cfg.Audience) {
		return Identity{}, fmt.Errorf("audience is not %q", a.cfg.Audience)
	}
	if cl.Sub == "" {
		return Identity{}, errors.New("no sub claim")
	}
	return Identity{Subject: cl.Sub, Email: cl.Email}, nil
}

func hasAudience(raw json.RawMessage, want string) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == want
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		for _, a := range many {
			if a == want {
				return true
			}
		}
	}
	return false
}

// token returns the request's JWT: the trusted header's, else a Bearer one.
func (a *Authenticator) token(r *http.Request) string {
	if a.cfg.Header != "" {
		if t := strings.TrimSpace(r.Header.Get(a.cfg.Header)); t != "" {
			return t
		}
	}
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// Wrap returns next behind the check: a request without a valid token is
// answered 401 (JSON, WWW-Authenticate: Bearer) and never reaches next;
// a verified one carries its identity ([IdentityFrom]). The health route
// (/api/lf/v1/health: no lineage in it) stays open for the kubelet's and
// the load balancer's probes.
func (a *Authenticator) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/lf/v1/health" {
			next.ServeHTTP(w, r)
			return
		}
		tok := a.token(r)
		if tok == "" {
			a.deny(w, r, "no token")
			return
		}
		id, err := a.Verify(r.Context(), tok)
		if err != nil {
			a.deny(w, r, err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	})
}

func (a *Authenticator) deny(w http.ResponseWriter, r *http.Request, why string) {
	a.cfg.Logger.Info("explorer: unauthenticated request refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "reason", why)
	w.Header().Set("WWW-Authenticate", `Bearer realm="lineageflow"`)
	writeError(w, http.StatusUnauthorized, "authentication required: a valid JWT in the "+a.where()+" header", "unauthenticated")
}

func (a *Authenticator) where() string {
	if a.cfg.Header != "" {
		return a.cfg.Header + " or Authorization: Bearer"
	}
	return "Authorization: Bearer"
}

// AccessLog returns next with one log line per request: method, path,
// status, duration and the identity of an authenticated request (never a
// token or a query string, which may hold one).
func AccessLog(next http.Handler, l *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		// The identity is set by an inner handler: collect it through a
		// holder in the context.
		h := &idHolder{}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), idHolderKey{}, h)))
		args := []any{"method", r.Method, "path", r.URL.Path, "status", rec.code, "ms", time.Since(start).Milliseconds(), "remote", r.RemoteAddr}
		if h.set {
			args = append(args, "identity", h.id.String())
		}
		l.Info("http", args...)
	})
}

type idHolderKey struct{}

type idHolder struct {
	id  Identity
	set bool
}

// WithIdentityLog returns next, recording the request's identity for
// [AccessLog] (it sits inside the authenticator).
func WithIdentityLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := r.Context().Value(idHolderKey{}).(*idHolder); ok {
			if id, ok := IdentityFrom(r.Context()); ok {
				h.id, h.set = id, true
			}
		}
		next.ServeHTTP(w, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Flush keeps the watch stream's server-sent events flowing.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
