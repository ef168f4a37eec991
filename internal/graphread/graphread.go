// Package graphread reads a whole lineage graph back over Gremlin, as plain
// values, for verify and for tests. It only reads; it never writes.
package graphread

import (
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

// Snapshot is the whole graph, sorted by id.
type Snapshot struct {
	Vertices []Vertex
	Edges    []Edge
}

// Connect opens a quiet gremlin-go connection to endpoint (ws:// or
// wss://) and returns its traversal source and the function that closes it.
func Connect(endpoint string) (*gremlingo.GraphTraversalSource, func(), error) {
	conn, err := gremlingo.NewDriverRemoteConnection(endpoint, func(s *gremlingo.DriverRemoteConnectionSettings) {
		s.LogVerbosity = gremlingo.Off
		s.ConnectionTimeout = 10 * time.Second
	})
	if err != nil {
		return nil, nil, fmt.Errorf("graphread: connect %s: %w", endpoint, err)
	}
	return gremlingo.Traversal_().WithRemote(conn), conn.Close, nil
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

// Dump reads every vertex and edge from the Gremlin endpoint (ws:// or
// wss://). It blocks until done or until timeout passes (gremlin-go has no
// context; the call is abandoned and the connection closed on timeout).
func Dump(endpoint string, timeout time.Duration) (*Snapshot, error) {
	g, closeFn, err := Connect(endpoint)
	if err != nil {
		return nil, err
	}
	type result struct {
		s   *Snapshot
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := dump(g)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		closeFn()
		return r.s, r.err
	case <-time.After(timeout):
		go closeFn()
		return nil, fmt.Errorf("graphread: no answer from %s within %v", endpoint, timeout)
	}
}

func dump(g *gremlingo.GraphTraversalSource) (*Snapshot, error) {
	T := gremlingo.T
	__ := gremlingo.T__
	vs, err := g.V().Project("id", "label", "props").
		By(T.Id).By(T.Label).By(__.ValueMap()).ToList()
	if err != nil {
		return nil, fmt.Errorf("graphread: read vertices: %w", err)
	}
	snap := &Snapshot{}
	for _, r := range vs {
		m, ok := r.GetInterface().(map[any]any)
		if !ok {
			return nil, fmt.Errorf("graphread: vertex row is %T", r.GetInterface())
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
		return nil, fmt.Errorf("graphread: read edges: %w", err)
	}
	for _, r := range es {
		m, ok := r.GetInterface().(map[any]any)
		if !ok {
			return nil, fmt.Errorf("graphread: edge row is %T", r.GetInterface())
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
