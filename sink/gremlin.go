package sink

import (
	"context"
	"fmt"
	"sync"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
)

// newGremlinDialer returns the dialFunc of real Gremlin connections: one
// gremlin-go DriverRemoteConnection (one websocket) per writer, opened by
// one [graph.Dialer].
func newGremlinDialer(cfg Config) (dialFunc, error) {
	d, err := graph.NewDialer(cfg.DialConfig())
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, w int) (conn, error) {
		drc, err := d.Dial(ctx, graph.DialOptions{Connections: 1, Logger: cfg.Logger.With("writer", w)})
		if err != nil {
			return nil, err
		}
		return &gremlinConn{drc: drc, g: gremlingo.Traversal_().WithRemote(drc), flat: cfg.TraversalShape == ShapeFlat}, nil
	}, nil
}

// gremlinConn runs upserts over one DriverRemoteConnection.
type gremlinConn struct {
	drc  *gremlingo.DriverRemoteConnection
	g    *gremlingo.GraphTraversalSource
	flat bool // Config.TraversalShape == ShapeFlat
	mu   struct {
		sync.Mutex
		closed  bool
		pending map[gremlingo.ResultSet]struct{}
	}
}

// UpsertVertices runs the vertex traversal of the connection's shape for
// vs.
func (c *gremlinConn) UpsertVertices(vs []lineage.Vertex) error {
	if c.flat {
		return c.run(flatVertexTraversal(c.g, vs))
	}
	return c.run(vertexTraversal(c.g, vs))
}

// UpsertEdges runs the edge traversal of the connection's shape for es.
func (c *gremlinConn) UpsertEdges(es []lineage.Edge) error {
	if c.flat {
		return c.run(flatEdgeTraversal(c.g, es))
	}
	return c.run(edgeTraversal(c.g, es))
}

// run submits t and waits for its whole answer (All, not Next: Next hides
// server errors in gremlin-go v3.7.4). Close unblocks it.
func (c *gremlinConn) run(t *gremlingo.GraphTraversal) (err error) {
	// gremlin-go v3.7.4 closes a broken connection's write channel before
	// it marks the connection dead, so a request in that window panics
	// with "send on closed channel": that is a connection error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sink: gremlin-go connection broke: %v", r)
		}
	}()
	rs, err := t.GetResultSet()
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		rs.Close()
		return errConnClosed
	}
	if c.mu.pending == nil {
		c.mu.pending = map[gremlingo.ResultSet]struct{}{}
	}
	c.mu.pending[rs] = struct{}{}
	c.mu.Unlock()
	_, err = rs.All()
	c.mu.Lock()
	closed := c.mu.closed
	delete(c.mu.pending, rs)
	c.mu.Unlock()
	if closed && err == nil {
		return errConnClosed
	}
	return err
}

var errConnClosed = fmt.Errorf("sink: connection closed")

// Close closes the websocket and then unblocks calls still waiting for an
// answer (gremlin-go leaves them waiting forever otherwise).
func (c *gremlinConn) Close() {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	c.mu.closed = true
	c.mu.Unlock()
	graph.CloseQuietly(c.drc)
	c.mu.Lock()
	pending := c.mu.pending
	c.mu.pending = nil
	c.mu.Unlock()
	for rs := range pending {
		rs.Close()
	}
}
