package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/lineageflow/lineageflow/explorer"
	"github.com/lineageflow/lineageflow/explorer/web"
	"github.com/lineageflow/lineageflow/internal/cli"
)

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var (
		endpoint  = fs.String("gremlin-endpoint", "ws://127.0.0.1:8182/gremlin", "Gremlin endpoint to read (ws:// or wss://; in production a Neptune reader endpoint)")
		httpAddr  = fs.String("http-addr", "127.0.0.1:8080", "listen address of the explorer (web UI at /, API under /api/)")
		conns     = fs.Int("explorer-connections", 4, "Gremlin websockets the explorer reads over")
		reqTO     = fs.Duration("explorer-request-timeout", 10*time.Second, "abandon one Gremlin read after this long (the API answers 503 graph_timeout)")
		fanOut    = fs.Int("explorer-max-fanout", 100, "most neighbours of one node followed per direction and level; the rest are reported as \"more\"")
		maxNodes  = fs.Int("explorer-max-nodes", 2000, "largest maxNodes a lineage request may ask (and the node cap of /api/v1/lineage)")
		refresh   = fs.Duration("explorer-index-refresh", 30*time.Second, "add to the search index what is new this often (the endpoints of edges first seen since the last read, minus -explorer-index-lateness)")
		lateness  = fs.Duration("explorer-index-lateness", 5*time.Minute, "how far before its last read the search index looks for new edges (their firstSeen is the producers' event time: cover the workers' delay)")
		fullRef   = fs.Duration("explorer-index-full-refresh", 10*time.Minute, "reload the search index in full (every Dataset, Job and DatasetAlias id) this often: drops deleted vertices, finds late ones")
		poll      = fs.Duration("explorer-poll-interval", 500*time.Millisecond, "how often a watched view is read again (one shared poller per distinct view)")
		stale     = fs.Duration("explorer-stale-after", 30*24*time.Hour, "a lineage edge not seen (lastSeen) for this long is stale: left out of the explorer's lineage unless asked for (stale=show, the UI's toggle); 0: never stale")
		heavy     = fs.Int("explorer-max-heavy-reads", 8, "most subgraph reads (lineage, impact, column lineage, neighbours, Marquez lineage) served at once; beyond, 429 with Retry-After")
		watchCap  = fs.Int("explorer-max-watches-per-client", 16, "most watch streams one client (its verified identity, else its IP address) holds open; beyond, 429")
		pollers   = fs.Int("explorer-max-pollers", 256, "most distinct watched views polled at once (one poller each, shared by their viewers); beyond, 429")
		logFormat = fs.String("log-format", "text", "log format: json or text")
		logLevel  = fs.String("log-level", "info", "log level: debug, info, warn, error")
		grace     = fs.Duration("shutdown-grace", 20*time.Second, "on SIGTERM: how long in-flight requests may take to finish before the graph is closed")
		arch      = addServeArchiveFlags(fs)
		conn      = gremlinConnFlags(fs, arch.region)
		auth      = addServeAuthFlags(fs)
	)
	fs.Usage = cli.Usage(fs, "lineageflow serve [flags]",
		"Serve the lineage explorer: a read-only HTTP server over the Gremlin/Neptune graph the\n"+
			"workers write, with the web UI at /, a Marquez-compatible API under /api/v1 and the\n"+
			"explorer's own API (lineage, node, search, live watch over SSE) under /api/lf/v1.")
	if done, err := parseFlags(fs, args, "secret-access-key"); done || err != nil {
		return err
	}
	logger, err := newLogger(*logFormat, *logLevel)
	if err != nil {
		return &exitError{2, err}
	}
	if err := auth.check(*httpAddr, logger); err != nil {
		return &exitError{2, err}
	}
	archCfg, err := arch.config()
	if err != nil {
		return &exitError{2, err}
	}
	dialer, err := conn.dialer(*endpoint, logger)
	if err != nil {
		return err
	}
	if archCfg != nil {
		if archCfg.Store.S3, err = arch.client(ctx); err != nil {
			return err
		}
	}
	srv, err := explorer.New(explorer.Config{
		Dialer: dialer, Connections: *conns, RequestTimeout: *reqTO, MaxFanOut: *fanOut,
		MaxNodes: *maxNodes, IndexRefresh: *refresh, IndexLateness: *lateness, IndexFullRefresh: *fullRef, PollInterval: *poll, StaleAfter: *stale, UI: web.Handler(), Logger: logger,
		MaxHeavyReads: *heavy, MaxWatchesPerClient: *watchCap, MaxPollers: *pollers, Archive: archCfg,
	})
	if err != nil {
		return &exitError{2, err}
	}
	handler, err := auth.handler(ctx, srv.Handler(), *httpAddr, logger)
	if err != nil {
		srv.Close()
		return &exitError{2, err}
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		srv.Close()
		return fmt.Errorf("-http-addr: %w", err)
	}
	srv.Start()
	// No write timeout: /api/lf/v1/watch streams for as long as the viewer stays.
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	logger.Info("explorer listening", "url", "http://"+ln.Addr().String()+"/")
	return serveUntil(ctx, hs, ln, *grace, srv.EndStreams, srv.Close, logger)
}
