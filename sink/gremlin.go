package sink

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"
	"sync"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/lineage"
)

// Vertex and edge property keys in the graph.
const (
	PropNamespace = "namespace"
	PropName      = "name"
	PropFirstSeen = "firstSeen"
	PropLastSeen  = "lastSeen"
	PropLastRunID = "lastRunId"
)

// newGremlinDialer returns the dialFunc of real Gremlin connections: one
// gremlin-go DriverRemoteConnection (one websocket) per writer.
func newGremlinDialer(cfg Config) (dialFunc, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("sink: endpoint: %w", err)
	}
	var signer *sigV4Auth
	if cfg.IAMAuth {
		signer, err = newSigV4Auth(context.Background(), u, cfg.Region)
		if err != nil {
			return nil, err
		}
	}
	tlsCfg := cfg.TLS
	if tlsCfg == nil {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return func(ctx context.Context, w int) (conn, error) {
		var auth gremlingo.AuthInfoProvider = &gremlingo.AuthInfo{}
		if signer != nil {
			// Sign now, so a credential problem surfaces as a dial error,
			// and again on any reconnect gremlin-go makes by itself.
			if _, err := signer.header(ctx); err != nil {
				return nil, err
			}
			auth = gremlingo.NewDynamicAuth(signer.provider)
		}
		type res struct {
			drc *gremlingo.DriverRemoteConnection
			err error
		}
		ch := make(chan res, 1)
		go func() {
			drc, err := gremlingo.NewDriverRemoteConnection(cfg.Endpoint, func(s *gremlingo.DriverRemoteConnectionSettings) {
				s.TraversalSource = "g"
				s.AuthInfo = auth
				s.TlsConfig = tlsCfg.Clone()
				s.ConnectionTimeout = cfg.DialTimeout
				s.WriteBufferSize = cfg.WriteBufferSize
				s.MaximumConcurrentConnections = 1
				s.InitialConcurrentConnections = 1
				s.Logger = slogAdapter{cfg.Logger.With("writer", w)}
				s.LogVerbosity = gremlingo.Warning
			})
			ch <- res{drc, err}
		}()
		select {
		case r := <-ch:
			if r.err != nil {
				return nil, r.err
			}
			return &gremlinConn{drc: r.drc, g: gremlingo.Traversal_().WithRemote(r.drc), flat: cfg.TraversalShape == ShapeFlat}, nil
		case <-ctx.Done():
			go func() {
				if r := <-ch; r.drc != nil {
					r.drc.Close()
				}
			}()
			return nil, ctx.Err()
		}
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

// vertexTraversal is one traversal of chained mergeV steps. The search map
// is the vertex's id and label; a created vertex gets its namespace and
// name with single cardinality. A matched vertex is left as it is: its
// properties are a pure function of its id.
func vertexTraversal(g *gremlingo.GraphTraversalSource, vs []lineage.Vertex) *gremlingo.GraphTraversal {
	var t *gremlingo.GraphTraversal
	for _, v := range vs {
		match := map[interface{}]interface{}{gremlingo.T.Id: v.ID, gremlingo.T.Label: v.Label}
		create := map[interface{}]interface{}{
			PropNamespace: gremlingo.CardinalityValue.Single(v.Namespace),
			PropName:      gremlingo.CardinalityValue.Single(v.Name),
		}
		if t == nil {
			t = g.MergeV(match)
		} else {
			t = t.MergeV(match)
		}
		t = t.Option(gremlingo.Merge.OnCreate, create)
	}
	return t.Count()
}

// edgeTraversal is one traversal of chained mergeE steps, each followed
// by the merge rules as conditional side effects, so that any number of
// deliveries in any order converge:
//
//	mergeE([T.id: id, T.label: l, from: out, to: in])
//	  .option(onCreate, [firstSeen: f, lastSeen: s, lastRunId: r])
//	  .sideEffect(has('firstSeen', gt(f)).property('firstSeen', f))
//	  .sideEffect(or(has('lastSeen', lt(s)),
//	                 has('lastSeen', s).has('lastRunId', lt(r)))
//	              .property('lastSeen', s).property('lastRunId', r))
func edgeTraversal(g *gremlingo.GraphTraversalSource, es []lineage.Edge) *gremlingo.GraphTraversal {
	var t *gremlingo.GraphTraversal
	P, T__ := gremlingo.P, gremlingo.T__
	for _, e := range es {
		match := map[interface{}]interface{}{
			gremlingo.T.Id: e.ID, gremlingo.T.Label: e.Label,
			gremlingo.Direction.From: e.OutV, gremlingo.Direction.To: e.InV,
		}
		create := map[interface{}]interface{}{
			PropFirstSeen: e.FirstSeen, PropLastSeen: e.LastSeen, PropLastRunID: e.LastRunID,
		}
		if t == nil {
			t = g.MergeE(match)
		} else {
			t = t.MergeE(match)
		}
		t = t.Option(gremlingo.Merge.OnCreate, create).
			SideEffect(T__.Has(PropFirstSeen, P.Gt(e.FirstSeen)).Property(PropFirstSeen, e.FirstSeen)).
			SideEffect(T__.Or(
				T__.Has(PropLastSeen, P.Lt(e.LastSeen)),
				T__.Has(PropLastSeen, e.LastSeen).Has(PropLastRunID, P.Lt(e.LastRunID)),
			).Property(PropLastSeen, e.LastSeen).Property(PropLastRunID, e.LastRunID))
	}
	return t.Count()
}

// Keys of the rows of the flat shape. The property keys of an edge row
// are the edge's own (PropFirstSeen, ...), so one by() modulator reads the
// same key from the edge and from the row.
const (
	rowMatch  = "m" // mergeV/mergeE search map (T.id, T.label, Direction.out/in)
	rowCreate = "c" // vertex onCreate map
	rowLabel  = "r" // step label of the current row
)

// flatVertexTraversal is the flat shape of [vertexTraversal]: the same
// steps for any number of vertices, the vertices as injected rows.
//
//	inject([[m: [T.id: id, T.label: l], c: [namespace: single(ns), name: single(n)]], ...])
//	  .unfold().mergeV(select('m')).option(onCreate, select('c')).count()
func flatVertexTraversal(g *gremlingo.GraphTraversalSource, vs []lineage.Vertex) *gremlingo.GraphTraversal {
	rows := make([]interface{}, len(vs))
	for i, v := range vs {
		rows[i] = map[interface{}]interface{}{
			rowMatch: map[interface{}]interface{}{gremlingo.T.Id: v.ID, gremlingo.T.Label: v.Label},
			rowCreate: map[interface{}]interface{}{
				PropNamespace: gremlingo.CardinalityValue.Single(v.Namespace),
				PropName:      gremlingo.CardinalityValue.Single(v.Name),
			},
		}
	}
	T__ := gremlingo.T__
	return g.Inject(rows).Unfold().
		MergeV(T__.Select(rowMatch)).Option(gremlingo.Merge.OnCreate, T__.Select(rowCreate)).
		Count()
}

// flatEdgeTraversal is the flat shape of [edgeTraversal]: the same steps
// for any number of edges, the edges as injected rows, the merge rules
// comparing the edge's properties with the row's (where(...).by(key)), no
// lambdas and no per-edge constants:
//
//	inject([[m: [T.id: id, T.label: l, Direction.out: o, Direction.in: i],
//	         firstSeen: f, lastSeen: s, lastRunId: r], ...])
//	  .unfold().as('r')
//	  .mergeE(select('m'))
//	  .option(onCreate, select('firstSeen', 'lastSeen', 'lastRunId'))
//	  .sideEffect(where(gt('r')).by('firstSeen')
//	              .property('firstSeen', select('r').select('firstSeen')))
//	  .sideEffect(or(where(lt('r')).by('lastSeen'),
//	                 and(where(eq('r')).by('lastSeen'), where(lt('r')).by('lastRunId')))
//	              .property('lastSeen', select('r').select('lastSeen'))
//	              .property('lastRunId', select('r').select('lastRunId')))
//	  .count()
func flatEdgeTraversal(g *gremlingo.GraphTraversalSource, es []lineage.Edge) *gremlingo.GraphTraversal {
	rows := make([]interface{}, len(es))
	for i, e := range es {
		rows[i] = map[interface{}]interface{}{
			rowMatch: map[interface{}]interface{}{
				gremlingo.T.Id: e.ID, gremlingo.T.Label: e.Label,
				gremlingo.Direction.Out: e.OutV, gremlingo.Direction.In: e.InV,
			},
			PropFirstSeen: e.FirstSeen, PropLastSeen: e.LastSeen, PropLastRunID: e.LastRunID,
		}
	}
	P, T__ := gremlingo.P, gremlingo.T__
	row := func(key string) *gremlingo.GraphTraversal { return T__.Select(rowLabel).Select(key) }
	return g.Inject(rows).Unfold().As(rowLabel).
		MergeE(T__.Select(rowMatch)).
		Option(gremlingo.Merge.OnCreate, T__.Select(PropFirstSeen, PropLastSeen, PropLastRunID)).
		SideEffect(T__.Where(P.Gt(rowLabel)).By(PropFirstSeen).
			Property(PropFirstSeen, row(PropFirstSeen))).
		SideEffect(T__.Or(
			T__.Where(P.Lt(rowLabel)).By(PropLastSeen),
			T__.And(T__.Where(P.Eq(rowLabel)).By(PropLastSeen), T__.Where(P.Lt(rowLabel)).By(PropLastRunID)),
		).Property(PropLastSeen, row(PropLastSeen)).Property(PropLastRunID, row(PropLastRunID))).
		Count()
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
	func() {
		// gremlin-go v3.7.4 may close the transport from its read loop at
		// the same time ("close of closed channel"); the socket is closed
		// either way.
		defer func() { _ = recover() }()
		c.drc.Close()
	}()
	c.mu.Lock()
	pending := c.mu.pending
	c.mu.pending = nil
	c.mu.Unlock()
	for rs := range pending {
		rs.Close()
	}
}

// slogAdapter routes gremlin-go's logs to slog.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Log(verbosity gremlingo.LogVerbosity, v ...interface{}) {
	a.l.Log(context.Background(), level(verbosity), "gremlin-go: "+fmt.Sprint(v...))
}

func (a slogAdapter) Logf(verbosity gremlingo.LogVerbosity, format string, v ...interface{}) {
	a.l.Log(context.Background(), level(verbosity), "gremlin-go: "+fmt.Sprintf(format, v...))
}

func level(v gremlingo.LogVerbosity) slog.Level {
	switch v {
	case gremlingo.Debug:
		return slog.LevelDebug
	case gremlingo.Info:
		return slog.LevelInfo
	case gremlingo.Warning:
		return slog.LevelWarn
	}
	return slog.LevelError
}
