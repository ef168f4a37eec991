package explorer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	lfgraph "github.com/lineageflow/lineageflow/graph" // the name graph is this package's reader type
)

// Error classes of [GraphError] (the "error" of a 503 answer and of a watch
// error event). They never name a host.
const (
	ClassUnreachable = "graph_unreachable" // no connection, or it broke
	ClassTimeout     = "graph_timeout"     // no answer within RequestTimeout
	ClassOverloaded  = "graph_overloaded"  // the server throttled the read
	ClassError       = "graph_error"       // any other server error
)

// probeTimeout bounds the dial made after a read timed out (to tell an
// unreachable graph from a slow one).
const probeTimeout = 500 * time.Millisecond

// GraphError is a read the graph did not answer (HTTP 503).
type GraphError struct {
	Class string
	Err   error
}

func (e *GraphError) Error() string { return fmt.Sprintf("explorer: %s: %v", e.Class, e.Err) }
func (e *GraphError) Unwrap() error { return e.Err }

// graph runs read traversals over one pooled gremlin-go connection, dialled
// lazily through the [lfgraph.Dialer] and replaced after a connection
// error. gremlin-go has no context: every read is bounded by
// RequestTimeout (its result set closed when abandoned).
type graph struct {
	dialer  *lfgraph.Dialer
	conns   int
	timeout time.Duration
	log     *slog.Logger
	okAt    atomic.Int64 // UnixNano of the last read that succeeded
	failAt  atomic.Int64 // UnixNano of the last read the graph failed (a GraphError)

	mu struct {
		sync.Mutex
		drc  *gremlingo.DriverRemoteConnection
		g    *gremlingo.GraphTraversalSource
		dial chan struct{} // one slot: the dial in progress (made lazily)
	}
}

func (gr *graph) source(ctx context.Context) (*gremlingo.GraphTraversalSource, *gremlingo.DriverRemoteConnection, error) {
	return gr.sourceWithin(ctx, gr.timeout)
}

// sourceWithin is source with the dial bounded by d. The mutex is held
// only to read or set the pool, never across a dial: one caller dials
// (holding the one-slot dial channel) while the others wait for it or for
// their own context and bound, whichever comes first.
func (gr *graph) sourceWithin(ctx context.Context, d time.Duration) (*gremlingo.GraphTraversalSource, *gremlingo.DriverRemoteConnection, error) {
	dctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	gr.mu.Lock()
	if gr.mu.g != nil {
		g, drc := gr.mu.g, gr.mu.drc
		gr.mu.Unlock()
		return g, drc, nil
	}
	if gr.mu.dial == nil {
		gr.mu.dial = make(chan struct{}, 1)
	}
	slot := gr.mu.dial
	gr.mu.Unlock()
	select {
	case slot <- struct{}{}:
	case <-dctx.Done():
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		return nil, nil, &GraphError{Class: ClassTimeout, Err: fmt.Errorf("no graph connection within %v", d)}
	}
	defer func() { <-slot }()
	gr.mu.Lock()
	if gr.mu.g != nil { // dialled by the caller we waited for
		g, drc := gr.mu.g, gr.mu.drc
		gr.mu.Unlock()
		return g, drc, nil
	}
	gr.mu.Unlock()
	drc, err := gr.dialer.Dial(dctx, lfgraph.DialOptions{Connections: gr.conns, Logger: gr.log, Verbosity: gremlingo.Error})
	if err != nil {
		return nil, nil, &GraphError{Class: ClassUnreachable, Err: err}
	}
	g := gremlingo.Traversal_().WithRemote(drc)
	gr.mu.Lock()
	gr.mu.drc, gr.mu.g = drc, g
	gr.mu.Unlock()
	return g, drc, nil
}

// reset drops drc (if still current) so that the next read dials again.
func (gr *graph) reset(drc *gremlingo.DriverRemoteConnection) {
	gr.mu.Lock()
	if gr.mu.drc != drc {
		gr.mu.Unlock()
		return
	}
	gr.mu.drc, gr.mu.g = nil, nil
	gr.mu.Unlock()
	go lfgraph.CloseQuietly(drc)
}

// lastOK is when a read last succeeded, the zero time if never or if a
// read failed since.
func (gr *graph) lastOK() time.Time {
	if n := gr.okAt.Load(); n != 0 && n > gr.failAt.Load() {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// lastFail is when the graph last failed a read (the zero time: never).
func (gr *graph) lastFail() time.Time {
	if n := gr.failAt.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

func (gr *graph) close() {
	gr.mu.Lock()
	drc := gr.mu.drc
	gr.mu.drc, gr.mu.g = nil, nil
	gr.mu.Unlock()
	if drc != nil {
		lfgraph.CloseQuietly(drc)
	}
}

// read builds a traversal on the graph's source and returns all its
// results, or a [*GraphError]. It records when the graph last answered and
// last failed (for /health).
func (gr *graph) read(ctx context.Context, build func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal) ([]*gremlingo.Result, error) {
	rs, err := gr.readOnce(ctx, build)
	var ge *GraphError
	switch {
	case err == nil:
		gr.okAt.Store(time.Now().UnixNano())
	case errors.As(err, &ge):
		gr.failAt.Store(time.Now().UnixNano())
	}
	return rs, err
}

func (gr *graph) readOnce(ctx context.Context, build func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal) ([]*gremlingo.Result, error) {
	// The request's bound runs from here: waiting for a connection
	// counts against it.
	start := time.Now()
	g, drc, err := gr.source(ctx)
	if err != nil {
		return nil, err
	}
	type res struct {
		rs  []*gremlingo.Result
		err error
	}
	ch := make(chan res, 1)
	var (
		rsMu sync.Mutex
		rs   gremlingo.ResultSet
	)
	go func() {
		var r res
		defer func() {
			// gremlin-go v3.7.4 may send on a closed channel when the
			// connection broke under the request: a connection error.
			if p := recover(); p != nil {
				r = res{err: fmt.Errorf("gremlin-go connection broke: %v", p)}
			}
			ch <- r
		}()
		set, err := build(g).GetResultSet()
		if err != nil {
			r.err = err
			return
		}
		rsMu.Lock()
		rs = set
		rsMu.Unlock()
		r.rs, r.err = set.All()
	}()
	timer := time.NewTimer(gr.timeout - time.Since(start))
	defer timer.Stop()
	abandon := func() {
		// gremlin-go v3.7.4 treats an answer to a closed result set as a
		// protocol error and drops the whole connection ("E0501: resultSet
		// was not created before data was received"), so a result set is
		// closed only when the read is abandoned for good, with the
		// connection replaced.
		rsMu.Lock()
		if rs != nil {
			rs.Close()
		}
		rsMu.Unlock()
		gr.reset(drc)
	}
	var r res
	select {
	case r = <-ch:
	case <-timer.C:
		abandon()
		// A request written on a connection the server had just dropped
		// waits here too (gremlin-go does not fail it): a graph that no
		// longer accepts connections is unreachable, not slow.
		// So dial the replacement now: if no new connection can be made
		// the graph is unreachable; if one can, it serves the next read.
		if _, _, err := gr.sourceWithin(context.WithoutCancel(ctx), probeTimeout); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, &GraphError{Class: ClassUnreachable, Err: fmt.Errorf("no answer within %v, and no new connection: %w", gr.timeout, err)}
		}
		return nil, &GraphError{Class: ClassTimeout, Err: fmt.Errorf("no answer within %v", gr.timeout)}
	case <-ctx.Done():
		// The caller went away: let the answer arrive (bounded by the
		// timeout) rather than break the pooled connection.
		go func() {
			t := time.NewTimer(gr.timeout)
			defer t.Stop()
			select {
			case <-ch:
			case <-t.C:
				abandon()
			}
		}()
		return nil, ctx.Err()
	}
	if r.err == nil {
		return r.rs, nil
	}
	var ge *GraphError
	if errors.As(r.err, &ge) {
		gr.reset(drc)
		return nil, ge
	}
	switch lfgraph.Classify(r.err) {
	case lfgraph.CodeConnection, lfgraph.CodeReadOnlyViolation:
		gr.reset(drc)
		return nil, &GraphError{Class: ClassUnreachable, Err: r.err}
	case lfgraph.CodeThrottling:
		return nil, &GraphError{Class: ClassOverloaded, Err: r.err}
	case lfgraph.CodeTimeout:
		gr.reset(drc)
		return nil, &GraphError{Class: ClassTimeout, Err: r.err}
	}
	return nil, &GraphError{Class: ClassError, Err: r.err}
}

// rowMap returns a result as the map a project()/valueMap() step gives.
func rowMap(r *gremlingo.Result) (map[any]any, error) {
	m, ok := r.GetInterface().(map[any]any)
	if !ok {
		return nil, fmt.Errorf("explorer: row is %T, want a map", r.GetInterface())
	}
	return m, nil
}

// errNotARow is a folded answer whose element is not a project() map.
var errNotARow = errors.New("explorer: folded row is not a map")

// foldedRows returns the project() maps of an answer whose results are
// lists of them (a fold() of the rows), in order; an element that is not
// a map is nil.
func foldedRows(rs []*gremlingo.Result) []map[any]any {
	var out []map[any]any
	for _, r := range rs {
		for _, e := range list(r.GetInterface()) {
			m, _ := e.(map[any]any)
			out = append(out, m)
		}
	}
	return out
}

// asString returns v as a string (a vertex id, a property value).
func asString(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// asInt64 returns a numeric property value as int64 (as GraphBinary
// returns it: int64, int32, int or an integral float64).
func asInt64(v any) (int64, bool) { return lfgraph.AsInt64(v) }

// anyStrings converts ids for g.V(...).
func anyStrings(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// props flattens a valueMap() row: single values as themselves, lists of
// one as their element, longer lists as lists.
func props(m map[any]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if l, ok := v.([]any); ok && len(l) == 1 {
			v = l[0]
		}
		out[asString(k)] = v
	}
	return out
}
