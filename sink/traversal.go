package sink

import (
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
