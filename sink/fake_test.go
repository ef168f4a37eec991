package sink

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/lineageflow/lineageflow/lineage"
)

// fakeGraph is an in-memory graph behind fake connections. It applies the
// same rules as the traversals (mergeE fails when an endpoint is missing)
// and injects faults through fault.
type fakeGraph struct {
	mu       sync.Mutex
	vertices map[string]lineage.Vertex
	edges    map[string]lineage.Edge
	calls    int
	// fault, if set, is called (without the lock) before each request with
	// the request number (from 1); errStall makes the call block until its
	// connection is closed; any other error fails the request.
	fault func(call int, w int, edges bool) error
	// stalled receives one value per call that starts stalling.
	stalled chan struct{}
	dials   int
}

var errStall = errors.New("stall")

func newFakeGraph() *fakeGraph {
	return &fakeGraph{vertices: map[string]lineage.Vertex{}, edges: map[string]lineage.Edge{}, stalled: make(chan struct{}, 1024)}
}

func (g *fakeGraph) dial(ctx context.Context, w int) (conn, error) {
	g.mu.Lock()
	g.dials++
	g.mu.Unlock()
	return &fakeConn{g: g, w: w, closed: make(chan struct{})}, nil
}

func (g *fakeGraph) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.vertices = map[string]lineage.Vertex{}
	g.edges = map[string]lineage.Edge{}
}

func (g *fakeGraph) dump() ([]lineage.Vertex, []lineage.Edge) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var vs []lineage.Vertex
	for _, v := range g.vertices {
		vs = append(vs, v)
	}
	var es []lineage.Edge
	for _, e := range g.edges {
		es = append(es, e)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].ID < vs[j].ID })
	sort.Slice(es, func(i, j int) bool { return es[i].ID < es[j].ID })
	return vs, es
}

type fakeConn struct {
	g         *fakeGraph
	w         int
	closeOnce sync.Once
	closed    chan struct{}
}

func (c *fakeConn) Close() { c.closeOnce.Do(func() { close(c.closed) }) }

func (c *fakeConn) before(edges bool) error {
	select {
	case <-c.closed:
		return errConnClosed
	default:
	}
	c.g.mu.Lock()
	c.g.calls++
	n := c.g.calls
	f := c.g.fault
	c.g.mu.Unlock()
	if f == nil {
		return nil
	}
	err := f(n, c.w, edges)
	if errors.Is(err, errStall) {
		c.g.stalled <- struct{}{}
		<-c.closed
		return errConnClosed
	}
	return err
}

func (c *fakeConn) UpsertVertices(vs []lineage.Vertex) error {
	if err := c.before(false); err != nil {
		return err
	}
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	for _, v := range vs {
		if _, ok := c.g.vertices[v.ID]; !ok {
			c.g.vertices[v.ID] = v
		}
	}
	return nil
}

func (c *fakeConn) UpsertEdges(es []lineage.Edge) error {
	if err := c.before(true); err != nil {
		return err
	}
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	// One transaction: check everything first.
	for _, e := range es {
		for _, id := range []string{e.OutV, e.InV} {
			if _, ok := c.g.vertices[id]; !ok {
				return fmt.Errorf("E0502: error in read loop, error message '{code:500 message:Vertex does not exist for mergeE: %s}'. statusCode: 244", id)
			}
		}
	}
	for _, e := range es {
		lineage.MergeInto(c.g.edges, e)
	}
	return nil
}

// neptuneErr is how gremlin-go v3.7.4 shows a Neptune 500 with a code.
func neptuneErr(code string) error {
	return fmt.Errorf(`E0502: error in read loop, error message '{code:500 message:{"code":"%s","requestId":"r1","detailedMessage":"injected"} attributes:map[]}'. statusCode: 244`, code)
}
