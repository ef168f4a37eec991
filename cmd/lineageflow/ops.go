package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/lineageflow/lineageflow/checkpoint"
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
		Ready: rd.Check, Status: rd.Status, Logger: l,
		Extra: map[string]http.Handler{"GET /deadletters": deadLettersHandler(wk)}})
	if err != nil {
		cancel()
		return nil, err
	}
	return func() { cancel(); _ = srv.Wait() }, nil
}

// deadLettersHandler serves the running worker's dead letters (or, with
// ?parked=1, its parked batches) as NDJSON, for `lineageflow deadletters
// -worker-addr`: the Pebble directory is locked while the worker runs. The
// records' bytes are left out (they stay on the worker's disk).
func deadLettersHandler(wk *source.Worker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		enc := json.NewEncoder(w)
		n := 0
		started := func() {
			if n == 0 {
				w.Header().Set("Content-Type", "application/x-ndjson")
			}
			n++
		}
		var err error
		if r.URL.Query().Get("parked") == "1" {
			err = wk.ListParked(func(p checkpoint.Parked) error { started(); return enc.Encode(listLine{Parked: &p}) })
		} else {
			err = wk.ListDeadLetters(func(d checkpoint.DeadLetter) error {
				started()
				d.Raw = nil
				return enc.Encode(listLine{DeadLetter: &d})
			})
		}
		if n == 0 && errors.Is(err, source.ErrNotOpen) {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		// The last line says whether the list is complete.
		end := listLine{End: true, Count: n}
		if err != nil {
			end.Error = err.Error()
		}
		_ = enc.Encode(end)
	})
}

// listLine is one line of /deadletters: an entry, or the last line.
type listLine struct {
	DeadLetter *checkpoint.DeadLetter `json:"deadLetter,omitempty"`
	Parked     *checkpoint.Parked     `json:"parked,omitempty"`
	End        bool                   `json:"end,omitempty"`
	Count      int                    `json:"count,omitempty"`
	Error      string                 `json:"error,omitempty"`
}
