package sink

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// Tests against the real Gremlin Server stand-in (skipped when it is not
// running; see internal/testenv). Each test writes under its own namespace
// prefix, so tests sharing a server do not see each other's graph.

func realSink(t testing.TB, endpoint string, mod func(*Config)) *Neptune {
	t.Helper()
	return startSink(t, Config{Endpoint: endpoint, Logger: testLogger(t), RequestTimeout: 10 * time.Second, CoalesceWait: -1,
		Retry: RetryPolicy{MaxAttempts: 8, BaseBackoff: 5 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}}, mod)
}

// shapes are the traversal shapes every real-server test runs with.
var shapes = []string{ShapeChained, ShapeFlat}

// forShapes runs f as one subtest per traversal shape.
func forShapes(t *testing.T, f func(t *testing.T, shape string)) {
	for _, shape := range shapes {
		t.Run("shape="+shape, func(t *testing.T) { f(t, shape) })
	}
}

// testNS is a namespace prefix unique to this test run.
func testNS(t testing.TB) string {
	return fmt.Sprintf("t%d-%s/", time.Now().UnixNano(), t.Name())
}

// dumpGraph reads back every vertex whose namespace starts with ns and
// every edge out of them, with all their properties. It fails t if a
// property has more than one value (set cardinality leaking) or two
// edges share (out, label, in).
func dumpGraph(t testing.TB, endpoint, ns string) ([]lineage.Vertex, []lineage.Edge) {
	t.Helper()
	g, closeFn, err := graph.Connect(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	T__ := gremlingo.T__
	vres, err := g.V().Has(lineage.PropNamespace, gremlingo.TextP.StartingWith(ns)).
		Project("id", "label", "ns", "name", "props").
		By(gremlingo.T.Id).By(gremlingo.T.Label).By(lineage.PropNamespace).By(lineage.PropName).
		By(T__.Properties().Count()).ToList()
	if err != nil {
		t.Fatal(err)
	}
	var vs []lineage.Vertex
	for _, r := range vres {
		m := r.GetInterface().(map[interface{}]interface{})
		if m["props"].(int64) != 2 {
			t.Fatalf("vertex %v has %d property values, want 2 (single cardinality)", m["id"], m["props"])
		}
		vs = append(vs, lineage.Vertex{ID: m["id"].(string), Label: m["label"].(string),
			Namespace: m["ns"].(string), Name: m["name"].(string)})
	}
	eres, err := g.V().Has(lineage.PropNamespace, gremlingo.TextP.StartingWith(ns)).OutE().
		Project("id", "label", "out", "in", "f", "l", "r", "props").
		By(gremlingo.T.Id).By(gremlingo.T.Label).By(T__.OutV().Id()).By(T__.InV().Id()).
		By(lineage.PropFirstSeen).By(lineage.PropLastSeen).By(lineage.PropLastRunID).By(T__.Properties().Count()).ToList()
	if err != nil {
		t.Fatal(err)
	}
	var es []lineage.Edge
	triples := map[[3]string]bool{}
	for _, r := range eres {
		m := r.GetInterface().(map[interface{}]interface{})
		e := lineage.Edge{ID: m["id"].(string), Label: m["label"].(string), OutV: m["out"].(string), InV: m["in"].(string),
			FirstSeen: m["f"].(int64), LastSeen: m["l"].(int64), LastRunID: m["r"].(string)}
		if m["props"].(int64) != 3 {
			t.Fatalf("edge %s has %d properties, want 3", e.ID, m["props"])
		}
		k := [3]string{e.OutV, e.Label, e.InV}
		if triples[k] {
			t.Fatalf("duplicate edge %v", k)
		}
		triples[k] = true
		es = append(es, e)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].ID < vs[j].ID })
	sort.Slice(es, func(i, j int) bool { return es[i].ID < es[j].ID })
	return vs, es
}

// TestRealIdempotent: the same batches applied 1, 2 and 3 times, and in
// shuffled order, give the graph of the reference fold, read back over
// Gremlin; merge rules hold for smaller and larger values in a second
// delivery.
func TestRealIdempotent(t *testing.T) {
	ep := testenv.Gremlin(t)
	checkNoLeaks(t)
	forShapes(t, func(t *testing.T, shape string) {
		for _, times := range []int{1, 2, 3} {
			for _, shuffle := range []bool{false, true} {
				t.Run(fmt.Sprintf("times=%d/shuffle=%v", times, shuffle), func(t *testing.T) {
					ns := testNS(t)
					w := genWorkloadNS(ns, uint64(times), 20, 40, 30, 6)
					n := realSink(t, ep, func(c *Config) { c.BatchRecords = 50; c.TraversalShape = shape })
					var order []Batch
					for i := 0; i < times; i++ {
						order = append(order, w.batches...)
					}
					if shuffle {
						r := rand.New(rand.NewPCG(uint64(times), 1))
						r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
					}
					writeAll(t, n, order, 0)
					vs, es := dumpGraph(t, ep, ns)
					w.checkGraph(t, vs, es)
				})
			}
		}
	})
}

// TestRealMergeRules: one edge delivered with smaller, larger and tied
// values, in every order.
func TestRealMergeRules(t *testing.T) {
	ep := testenv.Gremlin(t)
	checkNoLeaks(t)
	forShapes(t, func(t *testing.T, shape string) {
		n := realSink(t, ep, func(c *Config) { c.TraversalShape = shape })
		ns := testNS(t)
		a := lineage.DatasetVertex(lineage.Dataset{Namespace: ns, Name: "a"})
		b := lineage.DatasetVertex(lineage.Dataset{Namespace: ns, Name: "b"})
		mk := func(f, l int64, r string) Batch {
			return Batch{Key: "k", Vertices: []lineage.Vertex{a, b}, Edges: []lineage.Edge{lineage.NewEdge(lineage.EdgeDerives, a.ID, b.ID, f, l, r)}}
		}
		deliveries := []Batch{mk(50, 60, "r5"), mk(40, 55, "r9"), mk(70, 80, "r1"), mk(45, 80, "r3"), mk(45, 80, "r0")}
		want := deliveries[0].Edges[0]
		for _, d := range deliveries[1:] {
			want.Merge(d.Edges[0])
		}
		if want.FirstSeen != 40 || want.LastSeen != 80 || want.LastRunID != "r3" {
			t.Fatalf("reference fold %+v", want)
		}
		perm := []int{0, 1, 2, 3, 4}
		r := rand.New(rand.NewPCG(1, 2))
		for round := 0; round < 6; round++ {
			r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			var order []Batch
			for _, i := range perm {
				order = append(order, deliveries[i])
			}
			writeAll(t, n, order, 0)
			_, es := dumpGraph(t, ep, ns)
			if len(es) != 1 || es[0] != want {
				t.Fatalf("round %d order %v: graph %+v, want %+v", round, perm, es, want)
			}
		}
		// All deliveries in one request: the rules also hold between the
		// rows of one traversal.
		for round := 0; round < 6; round++ {
			r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			ns := fmt.Sprintf("%sone%d/", testNS(t), round)
			a := lineage.DatasetVertex(lineage.Dataset{Namespace: ns, Name: "a"})
			b := lineage.DatasetVertex(lineage.Dataset{Namespace: ns, Name: "b"})
			one := Batch{Key: "k", Vertices: []lineage.Vertex{a, b, a}}
			for _, i := range perm {
				d := deliveries[i].Edges[0]
				one.Edges = append(one.Edges, lineage.NewEdge(lineage.EdgeDerives, a.ID, b.ID, d.FirstSeen, d.LastSeen, d.LastRunID))
			}
			want := lineage.NewEdge(lineage.EdgeDerives, a.ID, b.ID, 40, 80, "r3")
			writeAll(t, n, []Batch{one}, 0)
			vs, es := dumpGraph(t, ep, ns)
			if len(vs) != 2 || len(es) != 1 || es[0] != want {
				t.Fatalf("one request, order %v: graph %+v %+v, want %+v", perm, vs, es, want)
			}
		}
	})
}

// TestRealMissingVertex: an edge whose endpoints are in neither the batch
// nor the graph fails as MissingVertex (the server's mergeE answer is
// classified the same way for both shapes).
func TestRealMissingVertex(t *testing.T) {
	ep := testenv.Gremlin(t)
	checkNoLeaks(t)
	forShapes(t, func(t *testing.T, shape string) {
		n := realSink(t, ep, func(c *Config) { c.TraversalShape = shape; c.Retry.MaxAttempts = 2 })
		ns := testNS(t)
		a := lineage.DatasetVertex(lineage.Dataset{Namespace: ns, Name: "a"})
		b := lineage.DatasetVertex(lineage.Dataset{Namespace: ns, Name: "b"})
		err := n.WriteBatch(context.Background(), Batch{Key: "k", Edges: []lineage.Edge{lineage.NewEdge(lineage.EdgeDerives, a.ID, b.ID, 1, 2, "r")}})
		var se *Error
		if !errors.As(err, &se) || se.Code != CodeMissingVertex {
			t.Fatalf("err %v, want a %s *Error", err, CodeMissingVertex)
		}
	})
}

// readProps reads vertex id's properties (valueMap) from the graph.
func readProps(t testing.TB, endpoint, id string) map[string][]any {
	t.Helper()
	g, closeFn, err := graph.Connect(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	res, err := g.V(id).ValueMap().ToList()
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("vertex %s: %d results", id, len(res))
	}
	out := map[string][]any{}
	for k, v := range res[0].GetInterface().(map[interface{}]interface{}) {
		out[fmt.Sprint(k)] = v.([]interface{})
	}
	return out
}

// checkProps fails t unless got holds exactly want's properties (with
// their stamps), single-valued, besides the extra keys.
func checkProps(t testing.TB, got map[string][]any, want lineage.Props, extra ...string) {
	t.Helper()
	keys := map[string]any{}
	for _, p := range want.List() {
		keys[p.Key] = p.Value()
		keys[p.Key+lineage.StampSuffix] = p.Stamp
	}
	for _, k := range extra {
		keys[k] = nil
	}
	for k, vals := range got {
		w, ok := keys[k]
		switch {
		case !ok:
			t.Errorf("extra property %s=%v", k, vals)
		case len(vals) != 1:
			t.Errorf("property %s has %d values (single cardinality broken)", k, len(vals))
		case w != nil && fmt.Sprint(vals[0]) != fmt.Sprint(w):
			t.Errorf("property %s=%v, want %v", k, vals[0], w)
		}
	}
	for k := range keys {
		if _, ok := got[k]; !ok {
			t.Errorf("property %s missing", k)
		}
	}
}

// TestRealVertexProps: a vertex's properties delivered with smaller,
// larger and tied (stamp, value), in many orders and in one request, end
// as the reference fold (lineage.Props.Merge), for a Dataset vertex and a
// Run vertex (no namespace nor name), in both shapes.
func TestRealVertexProps(t *testing.T) {
	ep := testenv.Gremlin(t)
	checkNoLeaks(t)
	forShapes(t, func(t *testing.T, shape string) {
		n := realSink(t, ep, func(c *Config) { c.TraversalShape = shape; c.VertexCacheSize = -1 })
		deliveries := []lineage.Props{
			lineage.MakeProps(lineage.StrLWW("schema", "v1", 10), lineage.NumMin("startedAt", 50), lineage.NumMax("updatedAt", 50)),
			lineage.MakeProps(lineage.StrLWW("schema", "v2", 20), lineage.NumMin("startedAt", 40), lineage.NumMax("updatedAt", 70)),
			lineage.MakeProps(lineage.StrLWW("schema", "v0", 20), lineage.NumMax("updatedAt", 60)),
			lineage.MakeProps(lineage.StrLWW("description", "d", 5)),
			func() lineage.Props { p, _ := lineage.RunStateProp(lineage.TypeFail, 45); return lineage.MakeProps(p) }(),
			func() lineage.Props {
				p, _ := lineage.RunStateProp(lineage.TypeRunning, 99)
				return lineage.MakeProps(p)
			}(),
			func() lineage.Props {
				p, _ := lineage.RunStateProp(lineage.TypeComplete, 46)
				return lineage.MakeProps(p)
			}(),
		}
		var want lineage.Props
		for _, d := range deliveries {
			want = want.Merge(d)
		}
		if p, _ := want.Get("schema"); p.Str != "v2" {
			t.Fatalf("reference fold: schema %+v", p)
		}
		if p, _ := want.Get("state"); p.Str != "FAIL" {
			t.Fatalf("reference fold: state %+v", p)
		}
		perm := []int{0, 1, 2, 3, 4, 5, 6}
		r := rand.New(rand.NewPCG(3, 4))
		for round := 0; round < 4; round++ {
			ns := fmt.Sprintf("%sp%d/", testNS(t), round)
			ds := lineage.DatasetVertex(lineage.Dataset{Namespace: ns, Name: "a"})
			run := lineage.RunVertex(ns + "run")
			r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			var order []Batch
			for _, i := range perm {
				d, rv := ds, run
				d.Props, rv.Props = deliveries[i], deliveries[i]
				order = append(order, Batch{Key: "k", Vertices: []lineage.Vertex{d, rv}})
			}
			if round%2 == 1 {
				// one batch: the sink folds the rows before sending
				var one Batch
				for _, b := range order {
					one.Vertices = append(one.Vertices, b.Vertices...)
				}
				order = []Batch{one}
			}
			writeAll(t, n, order, 0)
			checkProps(t, readProps(t, ep, ds.ID), want, lineage.PropNamespace, lineage.PropName)
			checkProps(t, readProps(t, ep, run.ID), want)
		}
	})
}

// TestRealVertexCacheFacets: with the vertex cache on, facet properties
// delivered in random orders (repeats, older stamps, a changed value, the
// same value with a newer stamp, bare endpoint vertices) end as the
// reference fold: the cache leaves out only writes that change nothing,
// never a changed facet. Some deliveries must be left out for the test to
// mean anything.
func TestRealVertexCacheFacets(t *testing.T) {
	ep := testenv.Gremlin(t)
	checkNoLeaks(t)
	forShapes(t, func(t *testing.T, shape string) {
		n := realSink(t, ep, func(c *Config) { c.TraversalShape = shape })
		schema := func(v string, ts int64) lineage.Prop { return lineage.StrLWW(lineage.PropSchema, v, ts) }
		src := func(v string, ts int64) lineage.Prop { return lineage.StrLWW(lineage.PropDataSource, v, ts) }
		deliveries := []lineage.Props{
			lineage.MakeProps(schema("A", 10), src("s3://b", 10)),
			lineage.MakeProps(schema("A", 10), src("s3://b", 10)), // repeat: left out
			"",                                   // bare endpoint: left out once the vertex is known
			lineage.MakeProps(schema("A", 20)),   // same value, newer stamp: the graph's _ts moves
			lineage.MakeProps(schema("B", 30)),   // changed facet
			lineage.MakeProps(schema("A", 25)),   // older than B: changes nothing
			lineage.MakeProps(src("s3://a", 10)), // tie with s3://b: the greater wins
			lineage.MakeProps(schema("C", 30), src("s3://c", 40)),
		}
		var want lineage.Props
		for _, d := range deliveries {
			want = want.Merge(d)
		}
		if p, _ := want.Get(lineage.PropSchema); p.Str != "C" || p.Stamp != 30 {
			t.Fatalf("reference fold: schema %+v", p)
		}
		r := rand.New(rand.NewPCG(5, 6))
		perm := make([]int, len(deliveries))
		for i := range perm {
			perm[i] = i
		}
		hits0 := n.Stats().CacheHits
		for round := 0; round < 6; round++ {
			ds := lineage.DatasetVertex(lineage.Dataset{Namespace: fmt.Sprintf("%sp%d/", testNS(t), round), Name: "a"})
			if round > 0 {
				r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			}
			var sofar lineage.Props
			for _, i := range perm {
				d := ds
				d.Props = deliveries[i]
				writeAll(t, n, []Batch{{Key: "k", Vertices: []lineage.Vertex{d}}}, 0)
				// After each delivery the graph is the fold so far (a
				// first delivery that is bare creates the bare vertex).
				sofar = sofar.Merge(deliveries[i])
				checkProps(t, readProps(t, ep, ds.ID), sofar, lineage.PropNamespace, lineage.PropName)
			}
			if sofar != want {
				t.Fatal("fold differs")
			}
		}
		if n.Stats().CacheHits == hits0 {
			t.Fatal("no delivery left out by the cache: the test means nothing")
		}
	})
}
