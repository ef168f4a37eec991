package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/lineageflow/lineageflow/explorer"
	"github.com/lineageflow/lineageflow/internal/webguard"
)

// serveAuthFlags are serve's authentication and exposure flags.
type serveAuthFlags struct {
	jwksURL, jwksFile, header, issuer, audience, hosts *string
	insecure                                           *bool
}

func addServeAuthFlags(fs *flag.FlagSet) *serveAuthFlags {
	return &serveAuthFlags{
		jwksURL:  fs.String("auth-jwks-url", "", "verify a JWT on every request against this key set: an OIDC issuer's JWKS (https://.../jwks.json) or, with {kid} in it, one key per kid (behind an ALB with OIDC: https://public-keys.auth.elb.<region>.amazonaws.com/{kid})"),
		jwksFile: fs.String("auth-jwks-file", "", "verify a JWT on every request against this JWKS file (instead of -auth-jwks-url)"),
		header:   fs.String("auth-header", "", "a trusted header carrying the JWT, set by the proxy in front (x-amzn-oidc-data behind an ALB with OIDC); Authorization: Bearer is always accepted"),
		issuer:   fs.String("auth-issuer", "", "the iss claim every token must carry (required with -auth-jwks-*)"),
		audience: fs.String("auth-audience", "", "if set, a value the aud claim must hold (the OIDC client id)"),
		hosts:    fs.String("allowed-hosts", "", "comma-separated host names a loopback listener also answers (besides localhost and loopback IPs); others get 421 (DNS rebinding protection)"),
		insecure: fs.Bool("insecure-no-auth", false, "listen beyond loopback without verifying identities (only when something in front authenticates every request and nothing else reaches the port)"),
	}
}

func (f *serveAuthFlags) config(l *slog.Logger) explorer.AuthConfig {
	return explorer.AuthConfig{JWKSURL: *f.jwksURL, JWKSFile: *f.jwksFile, Header: *f.header, Issuer: *f.issuer, Audience: *f.audience, Logger: l}
}

// check refuses, before anything is dialled, an explorer reachable beyond
// loopback that verifies no identity (lineage names every table, job,
// owner and SQL text of an estate).
func (f *serveAuthFlags) check(httpAddr string, l *slog.Logger) error {
	cfg := f.config(l)
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Enabled() && *f.insecure {
		return errors.New("-insecure-no-auth with -auth-jwks-*: choose one")
	}
	if !cfg.Enabled() && !*f.insecure && !webguard.IsLoopback(httpAddr) {
		return fmt.Errorf("-http-addr %s listens beyond loopback and no authentication is set: set -auth-jwks-url (or -auth-jwks-file) and -auth-issuer "+
			"(behind an ALB with OIDC: -auth-header x-amzn-oidc-data -auth-jwks-url https://public-keys.auth.elb.<region>.amazonaws.com/{kid} -auth-issuer <your IdP's issuer>), "+
			"listen on 127.0.0.1, or pass -insecure-no-auth if a proxy in front authenticates every request", httpAddr)
	}
	return nil
}

// handler wraps the explorer's handler: guard (security headers, Host
// allow-list on loopback), access log, authentication.
func (f *serveAuthFlags) handler(ctx context.Context, h http.Handler, httpAddr string, l *slog.Logger) (http.Handler, error) {
	cfg := f.config(l)
	if cfg.Enabled() {
		a, err := explorer.NewAuthenticator(ctx, cfg)
		if err != nil {
			return nil, err
		}
		h = a.Wrap(explorer.WithIdentityLog(h))
		l.Info("explorer: every request needs a verified JWT", "issuer", cfg.Issuer, "header", cfg.Header)
	} else if *f.insecure {
		l.Warn("explorer: -insecure-no-auth: no identity is verified; anyone who reaches the port reads the lineage")
	}
	var hosts []string
	if *f.hosts != "" {
		hosts = strings.Split(*f.hosts, ",")
	}
	return webguard.Wrap(explorer.AccessLog(h, l), httpAddr, hosts), nil
}

// serveUntil serves hs on ln until ctx ends, then shuts down gracefully:
// endStreams (the watch streams, which never end by themselves), then the
// in-flight requests drained (up to grace), then closeGraph. A clean
// shutdown returns nil (exit 0).
func serveUntil(ctx context.Context, hs *http.Server, ln net.Listener, grace time.Duration, endStreams, closeGraph func(), l *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		closeGraph()
		return err
	case <-ctx.Done():
	}
	l.Info("explorer: shutting down: draining in-flight requests", "grace", grace)
	endStreams()
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	closeGraph() // after the drain: in-flight reads still had their graph
	if err != nil {
		_ = hs.Close()
		return fmt.Errorf("explorer: requests still running after %v of shutdown grace: closed: %w", grace, err)
	}
	l.Info("explorer stopped cleanly")
	return nil
}
