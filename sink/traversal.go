package sink

import (
	"sort"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/lineage"
)

// vertexTraversal is one traversal of chained mergeV steps. The search map
// is the vertex's id and label; a created vertex gets its namespace and
// name (when not empty) and its properties (each with its stamp, see
// [lineage.Prop]) with single cardinality. On a matched vertex, each
// property is set when the vertex lacks it or holds a smaller (stamp,
// value), so that any number of deliveries in any order converge:
//
//	mergeV([T.id: id, T.label: l])
//	  .option(onCreate, [namespace: single(ns), name: single(n), k: single(v), k_ts: single(s), ...])
//	  .sideEffect(or(hasNot('k_ts'), has('k_ts', lt(s)), has('k_ts', s).has('k', lt(v)))
//	              .property(single, 'k', v).property(single, 'k_ts', s))   per property k
func vertexTraversal(g *gremlingo.GraphTraversalSource, vs []lineage.Vertex) *gremlingo.GraphTraversal {
	var t *gremlingo.GraphTraversal
	P, T__, single := gremlingo.P, gremlingo.T__, gremlingo.Cardinality.Single
	for _, v := range vs {
		match := map[interface{}]interface{}{gremlingo.T.Id: v.ID, gremlingo.T.Label: v.Label}
		props := v.Props.List()
		if t == nil {
			t = g.MergeV(match)
		} else {
			t = t.MergeV(match)
		}
		t = t.Option(gremlingo.Merge.OnCreate, createMap(v, props))
		for _, p := range props {
			ts := p.Key + lineage.StampSuffix
			t = t.SideEffect(T__.Or(
				T__.HasNot(ts),
				T__.Has(ts, P.Lt(p.Stamp)),
				T__.Has(ts, p.Stamp).Has(p.Key, P.Lt(p.Value())),
			).Property(single, p.Key, p.Value()).Property(single, ts, p.Stamp))
		}
	}
	return t.Count()
}

// createMap is the onCreate map of v: namespace and name when not empty,
// and every property with its stamp, all with single cardinality.
func createMap(v lineage.Vertex, props []lineage.Prop) map[interface{}]interface{} {
	c := make(map[interface{}]interface{}, 2+2*len(props))
	if v.Namespace != "" || v.Name != "" {
		c[lineage.PropNamespace] = gremlingo.CardinalityValue.Single(v.Namespace)
		c[lineage.PropName] = gremlingo.CardinalityValue.Single(v.Name)
	}
	for _, p := range props {
		c[p.Key] = gremlingo.CardinalityValue.Single(p.Value())
		c[p.Key+lineage.StampSuffix] = gremlingo.CardinalityValue.Single(p.Stamp)
	}
	return c
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
			lineage.PropFirstSeen: e.FirstSeen, lineage.PropLastSeen: e.LastSeen, lineage.PropLastRunID: e.LastRunID,
		}
		props := e.Props.List()
		for _, p := range props {
			create[p.Key], create[p.Key+lineage.StampSuffix] = p.Value(), p.Stamp
		}
		if t == nil {
			t = g.MergeE(match)
		} else {
			t = t.MergeE(match)
		}
		t = t.Option(gremlingo.Merge.OnCreate, create).
			SideEffect(T__.Has(lineage.PropFirstSeen, P.Gt(e.FirstSeen)).Property(lineage.PropFirstSeen, e.FirstSeen)).
			SideEffect(T__.Or(
				T__.Has(lineage.PropLastSeen, P.Lt(e.LastSeen)),
				T__.Has(lineage.PropLastSeen, e.LastSeen).Has(lineage.PropLastRunID, P.Lt(e.LastRunID)),
			).Property(lineage.PropLastSeen, e.LastSeen).Property(lineage.PropLastRunID, e.LastRunID))
		// Further properties (lineage.Edge.Props), guarded like a vertex's.
		for _, p := range props {
			ts := p.Key + lineage.StampSuffix
			t = t.SideEffect(T__.Or(
				T__.HasNot(ts),
				T__.Has(ts, P.Lt(p.Stamp)),
				T__.Has(ts, p.Stamp).Has(p.Key, P.Lt(p.Value())),
			).Property(p.Key, p.Value()).Property(ts, p.Stamp))
		}
	}
	return t.Count()
}

// Keys of the rows of the flat shape. The property keys of an edge row
// are the edge's own (lineage.PropFirstSeen, ...), so one by() modulator reads the
// same key from the edge and from the row.
const (
	rowMatch  = "m" // mergeV/mergeE search map (T.id, T.label, Direction.out/in)
	rowCreate = "c" // vertex onCreate map
	rowLabel  = "r" // step label of the current row
)

// flatVertexTraversal is the flat shape of [vertexTraversal]: the
// vertices as injected rows, one guarded side effect per property key that
// any row of the request carries (so the steps depend on the set of keys,
// never on the number of vertices); a row without the key skips it:
//
//	inject([[m: [T.id: id, T.label: l], c: [namespace: single(ns), name: single(n), k: single(v), k_ts: single(s)],
//	         k: v, k_ts: s, ...], ...])
//	  .unfold().as('r').mergeV(select('m')).option(onCreate, select('c'))
//	  .sideEffect(filter(select('r').select('k_ts'))
//	              .or(hasNot('k_ts'), where(lt('r')).by('k_ts'),
//	                  and(where(eq('r')).by('k_ts'), where(lt('r')).by('k')))
//	              .property(single, 'k', select('r').select('k'))
//	              .property(single, 'k_ts', select('r').select('k_ts')))   per key k
//	  .count()
func flatVertexTraversal(g *gremlingo.GraphTraversalSource, vs []lineage.Vertex) *gremlingo.GraphTraversal {
	rows := make([]interface{}, len(vs))
	keys := map[string]bool{}
	for i, v := range vs {
		props := v.Props.List()
		row := map[interface{}]interface{}{
			rowMatch:  map[interface{}]interface{}{gremlingo.T.Id: v.ID, gremlingo.T.Label: v.Label},
			rowCreate: createMap(v, props),
		}
		for _, p := range props {
			row[p.Key] = p.Value()
			row[p.Key+lineage.StampSuffix] = p.Stamp
			keys[p.Key] = true
		}
		rows[i] = row
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	P, T__, single := gremlingo.P, gremlingo.T__, gremlingo.Cardinality.Single
	row := func(key string) *gremlingo.GraphTraversal { return T__.Select(rowLabel).Select(key) }
	t := g.Inject(rows).Unfold().As(rowLabel).
		MergeV(T__.Select(rowMatch)).Option(gremlingo.Merge.OnCreate, T__.Select(rowCreate))
	for _, k := range sorted {
		ts := k + lineage.StampSuffix
		t = t.SideEffect(T__.Filter(row(ts)).Or(
			T__.HasNot(ts),
			T__.Where(P.Lt(rowLabel)).By(ts),
			T__.And(T__.Where(P.Eq(rowLabel)).By(ts), T__.Where(P.Lt(rowLabel)).By(k)),
		).Property(single, k, row(k)).Property(single, ts, row(ts)))
	}
	return t.Count()
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
	keys := map[string]bool{}
	for i, e := range es {
		row := map[interface{}]interface{}{
			rowMatch: map[interface{}]interface{}{
				gremlingo.T.Id: e.ID, gremlingo.T.Label: e.Label,
				gremlingo.Direction.Out: e.OutV, gremlingo.Direction.In: e.InV,
			},
			lineage.PropFirstSeen: e.FirstSeen, lineage.PropLastSeen: e.LastSeen, lineage.PropLastRunID: e.LastRunID,
		}
		for _, p := range e.Props.List() {
			row[p.Key], row[p.Key+lineage.StampSuffix] = p.Value(), p.Stamp
			keys[p.Key] = true
		}
		rows[i] = row
	}
	P, T__ := gremlingo.P, gremlingo.T__
	row := func(key string) *gremlingo.GraphTraversal { return T__.Select(rowLabel).Select(key) }
	t := g.Inject(rows).Unfold().As(rowLabel).
		MergeE(T__.Select(rowMatch)).
		Option(gremlingo.Merge.OnCreate, T__.Select(lineage.PropFirstSeen, lineage.PropLastSeen, lineage.PropLastRunID)).
		SideEffect(T__.Where(P.Gt(rowLabel)).By(lineage.PropFirstSeen).
			Property(lineage.PropFirstSeen, row(lineage.PropFirstSeen))).
		SideEffect(T__.Or(
			T__.Where(P.Lt(rowLabel)).By(lineage.PropLastSeen),
			T__.And(T__.Where(P.Eq(rowLabel)).By(lineage.PropLastSeen), T__.Where(P.Lt(rowLabel)).By(lineage.PropLastRunID)),
		).Property(lineage.PropLastSeen, row(lineage.PropLastSeen)).Property(lineage.PropLastRunID, row(lineage.PropLastRunID)))
	// Further properties (lineage.Edge.Props): one guarded side effect per
	// key any row carries, as for vertices (a created edge gets them here
	// too: it lacks k_ts).
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		ts := k + lineage.StampSuffix
		t = t.SideEffect(T__.Filter(row(ts)).Or(
			T__.HasNot(ts),
			T__.Where(P.Lt(rowLabel)).By(ts),
			T__.And(T__.Where(P.Eq(rowLabel)).By(ts), T__.Where(P.Lt(rowLabel)).By(k)),
		).Property(k, row(k)).Property(ts, row(ts)))
	}
	return t.Count()
}
