package sink

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// readEdgeProps reads edge id's properties (each as a one-value list, as
// readProps returns a vertex's).
func readEdgeProps(t testing.TB, endpoint, id string) map[string][]any {
	t.Helper()
	g, closeFn, err := graph.Connect(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	res, err := g.E(id).ValueMap().ToList()
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("edge %s: %d results", id, len(res))
	}
	out := map[string][]any{}
	for k, v := range res[0].GetInterface().(map[interface{}]interface{}) {
		out[fmt.Sprint(k)] = []any{v}
	}
	return out
}

// TestRealEdgeProps: a COLUMN_DERIVES edge's further properties
// (transformationType, transformationDescription; lineage.Edge.Props)
// delivered with smaller, larger and tied (stamp, value), in many orders
// and in one request, end as the reference fold (lineage.Props.Merge), next
// to firstSeen/lastSeen/lastRunId, in both shapes; an edge without them
// gets none.
func TestRealEdgeProps(t *testing.T) {
	ep := testenv.Gremlin(t)
	checkNoLeaks(t)
	forShapes(t, func(t *testing.T, shape string) {
		n := realSink(t, ep, func(c *Config) { c.TraversalShape = shape; c.VertexCacheSize = -1 })
		deliveries := []lineage.Props{
			lineage.MakeProps(lineage.StrLWW(lineage.PropTransformationType, "DIRECT/IDENTITY", 10)),
			lineage.MakeProps(lineage.StrLWW(lineage.PropTransformationType, "DIRECT/AGGREGATION", 20),
				lineage.StrLWW(lineage.PropTransformationDescription, "sum(amount)", 20)),
			lineage.MakeProps(lineage.StrLWW(lineage.PropTransformationType, "DIRECT/AGGREGATION", 20),
				lineage.StrLWW(lineage.PropTransformationDescription, "avg(amount)", 20)),
			"",
		}
		var want lineage.Props
		for _, d := range deliveries {
			want = want.Merge(d)
		}
		if p, _ := want.Get(lineage.PropTransformationDescription); p.Str != "sum(amount)" {
			t.Fatalf("reference fold: %+v", p)
		}
		perm := []int{0, 1, 2, 3}
		r := rand.New(rand.NewPCG(5, 6))
		for round := 0; round < 4; round++ {
			ns := fmt.Sprintf("%sp%d/", testNS(t), round)
			d := lineage.Dataset{Namespace: ns, Name: "t"}
			a, b := lineage.DatasetFieldVertex(d, "a"), lineage.DatasetFieldVertex(d, "b")
			plain := lineage.NewEdge(lineage.EdgeFieldOf, a.ID, lineage.DatasetID(d), 5, 5, "r0")
			r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			var order []Batch
			for k, i := range perm {
				e := lineage.NewEdge(lineage.EdgeColumnDerives, a.ID, b.ID, int64(10*k+1), int64(10*k+1), fmt.Sprint("r", k))
				e.Props = deliveries[i]
				order = append(order, Batch{Key: "k", Vertices: []lineage.Vertex{a, b, lineage.DatasetVertex(d)}, Edges: []lineage.Edge{e, plain}})
			}
			if round%2 == 1 {
				var one Batch
				for _, b := range order {
					one.Vertices = append(one.Vertices, b.Vertices...)
					one.Edges = append(one.Edges, b.Edges...)
				}
				order = []Batch{one}
			}
			writeAll(t, n, order, 0)
			id := lineage.EdgeID(lineage.EdgeColumnDerives, a.ID, b.ID)
			checkProps(t, readEdgeProps(t, ep, id), want, lineage.PropFirstSeen, lineage.PropLastSeen, lineage.PropLastRunID)
			checkProps(t, readEdgeProps(t, ep, plain.ID), "", lineage.PropFirstSeen, lineage.PropLastSeen, lineage.PropLastRunID)
		}
	})
}
