// Package httpserver serves a worker's operational endpoints: /metrics
// (Prometheus), /healthz (the process is alive and serving) and /readyz
// (the worker is running and the sink reaches the graph), for Kubernetes
// probes and scrapers. It reads the worker and the sink; it never changes
// them.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/lineageflow/lineageflow/internal/webguard"
)

// Config configures [Start].
type Config struct {
	// Addr is the listen address (":9090"; "127.0.0.1:0" in tests).
	Addr string
	// Metrics serves /metrics (nil: 404).
	Metrics http.Handler
	// Ready says why the worker is not ready (nil: ready). Nil Ready: always ready.
	Ready func() error
	// Status describes a ready worker in the /readyz body (optional).
	Status func() string
	// ShutdownTimeout bounds the wait for in-flight requests when ctx ends
	// (default 5 s).
	ShutdownTimeout time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Extra are more routes (pattern -> handler), e.g. the worker's
	// /deadletters. Optional.
	Extra map[string]http.Handler
}

// Server is a started server.
type Server struct {
	addr net.Addr
	done chan error
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.addr }

// Wait blocks until the server has shut down (after ctx ended) and returns
// the error that stopped it, nil after a clean shutdown.
func (s *Server) Wait() error { return <-s.done }

// Handler returns the mux of the endpoints.
func Handler(cfg Config) http.Handler {
	mux := http.NewServeMux()
	for pattern, h := range cfg.Extra {
		mux.Handle(pattern, h)
	}
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		var err error
		if cfg.Ready != nil {
			err = cfg.Ready()
		}
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		if cfg.Status != nil {
			fmt.Fprintf(w, "ready: %s\n", cfg.Status())
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// Start listens on cfg.Addr and serves [Handler] until ctx ends, then
// shuts down within cfg.ShutdownTimeout. A listen error is returned at
// once (a taken port fails the start, not a probe later).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("http server: listen on %q (flag -http-addr): %w", cfg.Addr, err)
	}
	// On loopback, refuse unknown Host headers (DNS rebinding); security
	// headers on every answer.
	srv := &http.Server{Handler: webguard.Wrap(Handler(cfg), cfg.Addr, nil), ReadHeaderTimeout: 5 * time.Second}
	s := &Server{addr: ln.Addr(), done: make(chan error, 1)}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	go func() {
		var err error
		select {
		case err = <-serveErr:
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
			err = srv.Shutdown(sctx)
			cancel()
			if e := <-serveErr; !errors.Is(e, http.ErrServerClosed) && err == nil {
				err = e
			}
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		if err != nil {
			cfg.Logger.Error("http server stopped", "err", err)
		}
		s.done <- err
	}()
	cfg.Logger.Info("http server listening", "addr", s.addr.String(), "endpoints", "/metrics /healthz /readyz")
	return s, nil
}
