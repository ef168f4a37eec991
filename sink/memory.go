package sink

import (
	"context"
	"sort"
	"sync"

	"github.com/lineageflow/lineageflow/lineage"
)

// Memory is an in-memory [Writer] for tests: it applies the same merge
// rules as the graph sink and counts deliveries. Safe for concurrent use.
type Memory struct {
	mu struct {
		sync.Mutex
		vertices   map[string]lineage.Vertex
		edges      map[string]lineage.Edge
		batches    int
		edgeWrites int
	}
	// Fail, if set, is called before each batch; a non-nil error fails it.
	Fail func(b Batch) error
}

// NewMemory returns an empty in-memory graph.
func NewMemory() *Memory {
	m := &Memory{}
	m.mu.vertices = map[string]lineage.Vertex{}
	m.mu.edges = map[string]lineage.Edge{}
	return m
}

// WriteBatch merges b into the graph.
func (m *Memory) WriteBatch(ctx context.Context, b Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.Fail != nil {
		if err := m.Fail(b); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.batches++
	for _, v := range b.Vertices {
		lineage.MergeVertexInto(m.mu.vertices, v)
	}
	for _, e := range b.Edges {
		m.mu.edgeWrites++
		lineage.MergeInto(m.mu.edges, e)
	}
	return nil
}

// Close does nothing.
func (m *Memory) Close(context.Context) error { return nil }

// Edges returns the graph's edges sorted by id.
func (m *Memory) Edges() []lineage.Edge {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]lineage.Edge, 0, len(m.mu.edges))
	for _, e := range m.mu.edges {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Vertices returns the graph's vertices sorted by id.
func (m *Memory) Vertices() []lineage.Vertex {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]lineage.Vertex, 0, len(m.mu.vertices))
	for _, v := range m.mu.vertices {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Stats returns the number of batches applied (not those Fail failed)
// and of edge writes.
func (m *Memory) Stats() (batches, edgeWrites int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.batches, m.mu.edgeWrites
}
