package graph

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
)

// Vertex is one vertex as stored: its id, label and every value of every
// property (a property with two values breaks single cardinality).
type Vertex struct {
	ID    string
	Label string
	Props map[string][]any
}

// Edge is one edge as stored.
type Edge struct {
	ID    string
	Label string
	OutV  string
	InV   string
	Props map[string]any
}

// Snapshot is a whole graph as plain values, sorted by id.
type Snapshot struct {
	Vertices []Vertex
	Edges    []Edge
}

// plainDialTimeout bounds the dial of the endpoint-only helpers below.
const plainDialTimeout = 10 * time.Second

// plainDialer is the Dialer of a bare endpoint (no TLS roots of its own, no
// IAM): the helpers for tests, tools and local graphs.
func plainDialer(endpoint string) (*Dialer, error) {
	cfg := Config{Endpoint: endpoint, DialTimeout: plainDialTimeout}.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return NewDialer(cfg)
}

// Connect opens a quiet connection (gremlin-go logs nothing) to endpoint
// (ws:// or wss://, no IAM) and returns its traversal source and the
// function that closes it.
func Connect(endpoint string) (*gremlingo.GraphTraversalSource, func(), error) {
	d, err := plainDialer(endpoint)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), plainDialTimeout)
	defer cancel()
	drc, err := d.Dial(ctx, DialOptions{Verbosity: gremlingo.Off})
	if err != nil {
		return nil, nil, fmt.Errorf("graph: connect %s: %w", endpoint, err)
	}
	return gremlingo.Traversal_().WithRemote(drc), func() { CloseQuietly(drc) }, nil
}

// Drop removes every vertex (and so every edge) of the graph at endpoint:
// for tests and benchmarks that own their graph, never for production.
func Drop(endpoint string) error {
	g, closeFn, err := Connect(endpoint)
	if err != nil {
		return fmt.Errorf("drop graph: %w", err)
	}
	defer closeFn()
	if _, err := g.V().Drop().ToList(); err != nil {
		return fmt.Errorf("drop graph: %w", err)
	}
	return nil
}

// Dump reads every vertex and edge of the graph at endpoint (ws:// or
// wss://, no IAM; see [Dialer.Dump] for the rest). It gives up after
// timeout.
func Dump(endpoint string, timeout time.Duration) (*Snapshot, error) {
	d, err := plainDialer(endpoint)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := d.Dump(ctx)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("graph: no answer from %s within %v", endpoint, timeout)
	}
	return s, err
}

// Dump reads every vertex and edge of the Dialer's graph over a quiet
// connection of its own. It blocks until done or ctx is done (gremlin-go
// has no context: the read is then abandoned and its connection closed).
func (d *Dialer) Dump(ctx context.Context) (*Snapshot, error) {
	drc, err := d.Dial(ctx, DialOptions{Verbosity: gremlingo.Off})
	if err != nil {
		return nil, fmt.Errorf("graph: connect %s: %w", d.cfg.Endpoint, err)
	}
	type result struct {
		s   *Snapshot
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			// gremlin-go v3.7.4 may send on a closed channel when the
			// connection broke under the request: a connection error.
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("graph: gremlin-go connection broke: %v", p)}
			}
			done <- r
		}()
		r.s, r.err = dump(gremlingo.Traversal_().WithRemote(drc))
	}()
	select {
	case r := <-done:
		CloseQuietly(drc)
		return r.s, r.err
	case <-ctx.Done():
		go CloseQuietly(drc)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("graph: no answer from %s: %w", d.cfg.Endpoint, ErrTimeout)
		}
		return nil, ctx.Err()
	}
}

// AsInt64 converts a numeric property value as GraphBinary returns it
// (int64, int32, int, or an integral float64) to int64.
func AsInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int:
		return int64(n), true
	case float64:
		return int64(n), float64(int64(n)) == n
	}
	return 0, false
}

func dump(g *gremlingo.GraphTraversalSource) (*Snapshot, error) {
	T := gremlingo.T
	__ := gremlingo.T__
	vs, err := g.V().Project("id", "label", "props").
		By(T.Id).By(T.Label).By(__.ValueMap()).ToList()
	if err != nil {
		return nil, fmt.Errorf("graph: read vertices: %w", err)
	}
	snap := &Snapshot{}
	for _, r := range vs {
		m, ok := r.GetInterface().(map[any]any)
		if !ok {
			return nil, fmt.Errorf("graph: vertex row is %T", r.GetInterface())
		}
		v := Vertex{ID: fmt.Sprint(m["id"]), Label: fmt.Sprint(m["label"]), Props: map[string][]any{}}
		if pm, ok := m["props"].(map[any]any); ok {
			for k, val := range pm {
				if list, ok := val.([]any); ok {
					v.Props[fmt.Sprint(k)] = list
				} else {
					v.Props[fmt.Sprint(k)] = []any{val}
				}
			}
		}
		snap.Vertices = append(snap.Vertices, v)
	}
	es, err := g.E().Project("id", "label", "out", "in", "props").
		By(T.Id).By(T.Label).By(__.OutV().Id()).By(__.InV().Id()).By(__.ValueMap()).ToList()
	if err != nil {
		return nil, fmt.Errorf("graph: read edges: %w", err)
	}
	for _, r := range es {
		m, ok := r.GetInterface().(map[any]any)
		if !ok {
			return nil, fmt.Errorf("graph: edge row is %T", r.GetInterface())
		}
		e := Edge{ID: fmt.Sprint(m["id"]), Label: fmt.Sprint(m["label"]),
			OutV: fmt.Sprint(m["out"]), InV: fmt.Sprint(m["in"]), Props: map[string]any{}}
		if pm, ok := m["props"].(map[any]any); ok {
			for k, val := range pm {
				e.Props[fmt.Sprint(k)] = val
			}
		}
		snap.Edges = append(snap.Edges, e)
	}
	sort.Slice(snap.Vertices, func(i, j int) bool { return snap.Vertices[i].ID < snap.Vertices[j].ID })
	sort.Slice(snap.Edges, func(i, j int) bool { return snap.Edges[i].ID < snap.Edges[j].ID })
	return snap, nil
}
