package main

import (
	"context"
	"log/slog"

	"github.com/lineageflow/lineageflow/ops/httpserver"
	"github.com/lineageflow/lineageflow/ops/metrics"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/source"
)

// ops is the run command's operational side: the Prometheus exporter and
// the /metrics, /healthz, /readyz server.
type ops struct {
	mx        *metrics.Exporter
	sinkStats metrics.SinkStats
	dedup     interface{ Status() error } // the shared dedup tier, nil: none
}

// instrument returns w measured for /metrics, and the ops that serve it.
func instrument(w sink.Writer) (sink.Writer, *ops) {
	o := &ops{}
	if s, ok := w.(metrics.SinkStats); ok {
		o.sinkStats = s
	}
	o.mx = metrics.New(metrics.Config{Sink: o.sinkStats, Process: true})
	return o.mx.WrapSink(w), o
}

// serve exports wk and starts the HTTP server on addr (empty: none). The
// server keeps answering while the worker drains after ctx ends (liveness
// probes and the last scrape), and stops when the returned func is called,
// when the run command returns.
func (o *ops) serve(ctx context.Context, addr string, wk *source.Worker, l *slog.Logger) (func(), error) {
	o.mx.SetWorker(wk)
	if addr == "" {
		return func() {}, nil
	}
	rd := &httpserver.Readiness{Running: wk.Running, Leases: func() int { return len(wk.Shards()) },
		LastSinkError: o.mx.LastSinkError, Blocked: wk.Unready}
	if o.sinkStats != nil {
		rd.SinkStats = o.sinkStats.Stats
	}
	if o.dedup != nil {
		rd.SharedDedup = o.dedup.Status
	}
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	srv, err := httpserver.Start(hctx, httpserver.Config{Addr: addr, Metrics: o.mx.Handler(),
		Ready: rd.Check, Status: rd.Status, Logger: l})
	if err != nil {
		cancel()
		return nil, err
	}
	return func() { cancel(); _ = srv.Wait() }, nil
}
