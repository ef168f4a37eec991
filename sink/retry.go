package sink

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
)

// do runs one request with retries: each failure is classified (see
// [classify]); the writer reconnects or backs off as its class says and
// tries again, up to Retry.MaxAttempts, then returns an [*Error]. A done
// ctx ends it with ctx's error; a closing sink with an error that
// [errors.Is] [ErrClosed].
func (w *writer) do(r *request) error {
	n := w.n
	op := "vertices"
	if r.edges != nil {
		op = "edges"
	}
	var ids []string
	if n.cfg.inFlight != nil {
		ids = requestVertexIDs(r)
		n.cfg.inFlight(w.id, ids, true)
		defer n.cfg.inFlight(w.id, ids, false)
	}
	for attempt := 1; ; attempt++ {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		err := w.call(r)
		if err == nil {
			n.stats.requests.Add(1)
			n.stats.records.Add(uint64(len(r.vertices) + len(r.edges)))
			if runs := runVertices(r.vertices); runs > 0 {
				n.stats.runRecords.Add(uint64(runs))
			}
			return nil
		}
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		code, act := classify(err)
		if act == actReconnect {
			w.dropConn()
		}
		if act == actFail || attempt >= n.cfg.Retry.MaxAttempts {
			n.stats.failures.Add(1)
			return &Error{Code: code, Retriable: act != actFail || code == CodeMissingVertex,
				Attempts: attempt, Writer: w.id, Err: err, Op: op}
		}
		n.stats.retry(code)
		n.log.Debug("sink: retrying", "writer", w.id, "op", op, "code", string(code), "attempt", attempt, "err", err)
		if !w.backoff(r.ctx, attempt) {
			if err := r.ctx.Err(); err != nil {
				return err
			}
			return ErrClosed
		}
	}
}

// call sends r once on the writer's connection, opening it first if
// needed, and abandons it after RequestTimeout.
func (w *writer) call(r *request) error {
	n := w.n
	if w.c == nil {
		dctx, cancel := context.WithTimeout(r.ctx, n.cfg.DialTimeout)
		c, err := n.cfg.dial(dctx, w.id)
		cancel()
		if err != nil {
			return fmt.Errorf("dial: %w", err)
		}
		w.c = c
	}
	c := w.c
	ch := make(chan error, 1)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if r.edges != nil {
			ch <- c.UpsertEdges(r.edges)
		} else {
			ch <- c.UpsertVertices(r.vertices)
		}
	}()
	t := time.NewTimer(n.cfg.RequestTimeout)
	defer t.Stop()
	select {
	case err := <-ch:
		return err
	case <-t.C:
		return graph.ErrTimeout
	case <-r.ctx.Done():
		// The request may still land; that is harmless (idempotent), but
		// the connection must not carry its answer into the next call.
		w.dropConn()
		return r.ctx.Err()
	case <-n.quit:
		w.dropConn()
		return ErrClosed
	}
}

// dropConn closes the writer's connection in the background (a close may
// wait for the socket) and forgets it; the next call dials again.
func (w *writer) dropConn() {
	if w.c == nil {
		return
	}
	c := w.c
	w.c = nil
	w.n.wg.Add(1)
	go func() { defer w.n.wg.Done(); c.Close() }()
}

// backoff waits before retry number attempt: exponential, full jitter.
// It reports false when ctx is done or the sink is closing.
func (w *writer) backoff(ctx context.Context, attempt int) bool {
	p := w.n.cfg.Retry
	ceil := p.BaseBackoff << min(attempt-1, 30)
	if ceil > p.MaxBackoff || ceil <= 0 {
		ceil = p.MaxBackoff
	}
	d := time.Duration(0)
	if ceil > 0 {
		d = time.Duration(rand.Int64N(int64(ceil)))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-w.n.quit:
		return false
	}
}

// requestVertexIDs returns the vertex ids r writes (for the inFlight test
// hook): its vertices, or its edges' out-vertices.
func requestVertexIDs(r *request) []string {
	var ids []string
	for _, v := range r.vertices {
		ids = append(ids, v.ID)
	}
	for _, e := range r.edges {
		ids = append(ids, e.OutV)
	}
	return ids
}

// runVertices counts the Run vertices (run history) among vs.
func runVertices(vs []lineage.Vertex) int {
	n := 0
	for i := range vs {
		if vs[i].Label == lineage.LabelRun {
			n++
		}
	}
	return n
}
