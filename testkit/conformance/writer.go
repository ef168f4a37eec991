package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
)

// Writer runs the [sink.Writer] conformance suite, each subtest on a
// graph from newGraph (which may be shared: the suite writes under names
// of its own). The contract the processor's drain relies on (sink/sink.go,
// lineage.Batch): applying a batch any number of times, in any order
// relative to other batches, gives the same graph, namely the reference
// fold of every batch delivered (lineage.MergeVertexInto, MergeInto):
//
//   - a batch written is read back: every vertex (label, namespace, name,
//     properties) and every edge (label, endpoints, firstSeen, lastSeen,
//     lastRunId, properties);
//   - a batch written twice, or any batches in any order and number of
//     deliveries, leave the fold: idempotent upserts, never a second
//     vertex or edge for one id;
//   - edges: firstSeen keeps the minimum, lastSeen the maximum, lastRunId
//     follows the maximum lastSeen (ties: the greater run id);
//   - properties (vertices and edges): of two values of one key the
//     greater (stamp, value) wins: last writer by stamp, maximum, minimum,
//     a terminal run state over a running one, whatever the delivery order;
//     the same vertex twice in one batch folds the same way;
//   - an edge whose endpoints an earlier batch wrote needs no vertex in its
//     own batch; an empty batch is a no-op; a batch larger than one
//     request is written whole;
//   - WriteBatch is safe from several goroutines at once;
//   - with ctx done, WriteBatch returns promptly; nil means written.
func Writer(t *testing.T, newGraph func(*testing.T) Graph) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("a batch is read back", func(t *testing.T) {
		g, w := newGraph(t), newWorld(t)
		b := w.batch(0)
		write(t, ctx, g, b)
		w.check(t, ctx, g, []lineage.Batch{b})
	})
	t.Run("a batch written twice leaves the same graph", func(t *testing.T) {
		g, w := newGraph(t), newWorld(t)
		b := w.batch(0)
		write(t, ctx, g, b)
		write(t, ctx, g, b)
		w.check(t, ctx, g, []lineage.Batch{b})
	})
	t.Run("any order, any number of deliveries", func(t *testing.T) {
		g, w := newGraph(t), newWorld(t)
		var batches []lineage.Batch
		for i := range 12 {
			batches = append(batches, w.batch(i))
		}
		order := append(append([]lineage.Batch(nil), batches...), batches[3], batches[7], batches[7], batches[0])
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, b := range order {
			write(t, ctx, g, b)
		}
		w.check(t, ctx, g, batches)
	})
	t.Run("edge merge rules", func(t *testing.T) {
		g, w := newGraph(t), newWorld(t)
		deliveries := []struct {
			first, last int64
			run         string
		}{{5, 10, "b"}, {3, 10, "a"}, {7, 12, "a"}, {7, 12, "c"}, {9, 11, "z"}}
		var all []lineage.Batch
		var ids []string
		for p, perm := range permutations(len(deliveries), 6, 3) {
			a, b := w.dataset(fmt.Sprint("a", p)), w.dataset(fmt.Sprint("b", p))
			ids = append(ids, a.ID)
			for _, i := range perm {
				d := deliveries[i]
				batch := lineage.Batch{Key: "k", Vertices: []lineage.Vertex{a, b},
					Edges: []lineage.Edge{lineage.NewEdge(lineage.EdgeDerives, a.ID, b.ID, d.first, d.last, d.run)}}
				write(t, ctx, g, batch)
				all = append(all, batch)
			}
		}
		_, es := w.check(t, ctx, g, all)
		if len(es) != len(ids) {
			t.Fatalf("%d edges, want %d", len(es), len(ids))
		}
		for _, e := range es {
			if e.FirstSeen != 3 || e.LastSeen != 12 || e.LastRunID != "c" {
				t.Fatalf("edge %s: firstSeen %d, lastSeen %d, lastRunId %q; want 3, 12, c", e.ID, e.FirstSeen, e.LastSeen, e.LastRunID)
			}
		}
	})
	t.Run("property merge rules", func(t *testing.T) {
		g, w := newGraph(t), newWorld(t)
		state := func(typ lineage.EventType, ms int64) lineage.Prop { p, _ := lineage.RunStateProp(typ, ms); return p }
		deliveries := []lineage.Props{
			lineage.MakeProps(lineage.StrLWW("schema", "v1", 10), lineage.NumMin("startedAt", 50), lineage.NumMax("updatedAt", 50), state(lineage.TypeStart, 50)),
			lineage.MakeProps(lineage.StrLWW("schema", "v2", 20), lineage.NumMin("startedAt", 40), lineage.NumMax("updatedAt", 70)),
			lineage.MakeProps(lineage.StrLWW("schema", "v0", 20), lineage.NumMax("updatedAt", 60), state(lineage.TypeRunning, 99)),
			lineage.MakeProps(lineage.StrLWW("description", "d", 5), lineage.NumLWW("rows", 7, 30), state(lineage.TypeFail, 45)),
			lineage.MakeProps(lineage.NumLWW("rows", 9, 25), state(lineage.TypeComplete, 46), lineage.StrConst("kind", "table")),
		}
		want := map[string]any{"schema": "v2", "startedAt": int64(40), "updatedAt": int64(70), "state": "FAIL",
			"description": "d", "rows": int64(7), "kind": "table"}
		var all []lineage.Batch
		var ids []string
		for p, perm := range permutations(len(deliveries), 6, 4) {
			ds, run := w.dataset(fmt.Sprint("d", p)), lineage.RunVertex(w.prefix+fmt.Sprint("run", p))
			e := lineage.NewEdge(lineage.EdgeWrote, run.ID, ds.ID, 1, 2, "r")
			ids = append(ids, ds.ID, run.ID)
			var one lineage.Batch // every delivery in one batch, folded by the writer
			for _, i := range perm {
				d, r, x := ds, run, e
				d.Props, r.Props, x.Props = deliveries[i], deliveries[i], deliveries[i]
				batch := lineage.Batch{Key: "k", Vertices: []lineage.Vertex{d, r}, Edges: []lineage.Edge{x}}
				if p%2 == 1 {
					one.Vertices = append(one.Vertices, batch.Vertices...)
					one.Edges = append(one.Edges, batch.Edges...)
					continue
				}
				write(t, ctx, g, batch)
				all = append(all, batch)
			}
			if p%2 == 1 {
				write(t, ctx, g, one)
				all = append(all, one)
			}
		}
		vs, es := w.check(t, ctx, g, all)
		if len(vs) != len(ids) || len(es) != len(ids)/2 {
			t.Fatalf("%d vertices and %d edges, want %d and %d", len(vs), len(es), len(ids), len(ids)/2)
		}
		for _, props := range append(propsOfVertices(vs), propsOfEdges(es)...) {
			for k, v := range want {
				if p, ok := props.Get(k); !ok || p.Value() != v {
					t.Fatalf("property %s = %+v (present %v), want %v; all: %v", k, p, ok, v, props)
				}
			}
		}
	})
	t.Run("edges of vertices written earlier", func(t *testing.T) {
		g, w := newGraph(t), newWorld(t)
		b := w.batch(0)
		vertices := lineage.Batch{Key: "v", Vertices: b.Vertices}
		edges := lineage.Batch{Key: "e", Edges: b.Edges}
		write(t, ctx, g, vertices)
		write(t, ctx, g, edges)
		w.check(t, ctx, g, []lineage.Batch{vertices, edges})
	})
	t.Run("empty batch", func(t *testing.T) {
		g, w := newGraph(t), newWorld(t)
		b := w.batch(0)
		write(t, ctx, g, b)
		write(t, ctx, g, lineage.Batch{Key: "empty"})
		w.check(t, ctx, g, []lineage.Batch{b})
	})
	t.Run("large batch", func(t *testing.T) {
		g, w := newGraph(t), newWorld(t)
		var big lineage.Batch
		for i := range 30 {
			b := w.batch(i)
			big.Vertices = append(big.Vertices, b.Vertices...)
			big.Edges = append(big.Edges, b.Edges...)
		}
		write(t, ctx, g, big)
		w.check(t, ctx, g, []lineage.Batch{big})
	})
	t.Run("concurrent writers", func(t *testing.T) {
		g, w := newGraph(t), newWorld(t)
		var batches []lineage.Batch
		for i := range 24 {
			batches = append(batches, w.batch(i))
		}
		var wg sync.WaitGroup
		var next atomic.Int64
		errs := make([]error, 6)
		for j := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= 2*len(batches) { // each batch twice, from two goroutines
						return
					}
					if err := g.WriteBatch(ctx, batches[i%len(batches)]); err != nil {
						errs[j] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		w.check(t, ctx, g, batches)
	})
	t.Run("done context", func(t *testing.T) {
		g, w := newGraph(t), newWorld(t)
		done, cancel := context.WithCancel(ctx)
		cancel()
		b := w.batch(0)
		start := time.Now()
		err := g.WriteBatch(done, b)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("WriteBatch with a done context took %v", d)
		}
		if err == nil {
			w.check(t, ctx, g, []lineage.Batch{b})
		}
	})
}

func write(t *testing.T, ctx context.Context, g sink.Writer, b lineage.Batch) {
	t.Helper()
	if err := g.WriteBatch(ctx, b); err != nil {
		t.Fatalf("WriteBatch %s: %v", b.Key, err)
	}
}

// world makes vertices and edges under a namespace prefix of its own.
type world struct {
	prefix string
	ids    map[string]bool // every vertex id made
}

// newWorld: one per subtest, so the time and the test's name make the
// prefix unique on a shared server.
func newWorld(t *testing.T) *world {
	return &world{prefix: fmt.Sprintf("conformance-%d-%s/", time.Now().UnixNano(), t.Name()), ids: map[string]bool{}}
}

func (w *world) dataset(name string) lineage.Vertex {
	v := lineage.DatasetVertex(lineage.Dataset{Namespace: w.prefix + "ns", Name: name})
	w.ids[v.ID] = true
	return v
}

// batch i of a workload whose batches share vertices and edges (with other
// times, runs and properties), so that their fold exercises every rule.
func (w *world) batch(i int) lineage.Batch {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	job := lineage.JobVertex(lineage.Job{Namespace: w.prefix + "jobs", Name: fmt.Sprint("job", i%5)})
	w.ids[job.ID] = true
	runID := fmt.Sprintf("%srun-%d", w.prefix, i%7)
	st, _ := lineage.RunStateProp([]lineage.EventType{lineage.TypeStart, lineage.TypeRunning, lineage.TypeComplete, lineage.TypeFail}[i%4], int64(1000+r.IntN(100)))
	run := lineage.RunVertex(runID, st, lineage.NumMin(lineage.PropStartedAt, int64(1000+r.IntN(50))),
		lineage.NumMax(lineage.PropUpdatedAt, int64(1000+r.IntN(500))), lineage.StrConst(lineage.PropRunID, runID))
	w.ids[run.ID] = true
	in, out := w.dataset(fmt.Sprint("in", i%4)), w.dataset(fmt.Sprint("out", i%6))
	out.Props = lineage.MakeProps(lineage.StrLWW("schema", fmt.Sprint("s", r.IntN(5)), int64(r.IntN(20))))
	t0 := int64(1_767_225_600_000 + r.IntN(1000))
	col := lineage.NewEdge(lineage.EdgeColumnDerives, in.ID, out.ID, t0, t0+int64(r.IntN(100)), runID)
	col.Props = lineage.MakeProps(lineage.StrLWW(lineage.PropTransformationType, fmt.Sprint("DIRECT/", r.IntN(3)), int64(r.IntN(10))))
	return lineage.Batch{Key: fmt.Sprint("batch-", i), Vertices: []lineage.Vertex{job, run, in, out},
		Edges: []lineage.Edge{
			lineage.NewEdge(lineage.EdgeInputTo, in.ID, job.ID, t0, t0+int64(r.IntN(100)), runID),
			lineage.NewEdge(lineage.EdgeOutputs, job.ID, out.ID, t0+1, t0+int64(r.IntN(100)), runID),
			lineage.NewEdge(lineage.EdgeRunOf, run.ID, job.ID, t0, t0, runID),
			col,
		}}
}

// check reads back every vertex of the world and fails t unless the graph
// is exactly the fold of batches; it returns what it read.
func (w *world) check(t *testing.T, ctx context.Context, g Graph, batches []lineage.Batch) ([]lineage.Vertex, []lineage.Edge) {
	t.Helper()
	wantV, wantE := map[string]lineage.Vertex{}, map[string]lineage.Edge{}
	for _, b := range batches {
		for _, v := range b.Vertices {
			lineage.MergeVertexInto(wantV, v)
			w.ids[v.ID] = true
		}
		for _, e := range b.Edges {
			lineage.MergeInto(wantE, e)
		}
	}
	ids := make([]string, 0, len(w.ids))
	for id := range w.ids {
		ids = append(ids, id)
	}
	vs, es, err := g.Read(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(wantV) || len(es) != len(wantE) {
		t.Fatalf("graph has %d vertices and %d edges, want %d and %d", len(vs), len(es), len(wantV), len(wantE))
	}
	for _, v := range vs {
		if want := wantV[v.ID]; v != want {
			t.Fatalf("vertex read back:\n  %+v (props %v)\nwant\n  %+v (props %v)", v, v.Props, want, want.Props)
		}
	}
	for _, e := range es {
		if want := wantE[e.ID]; e != want {
			t.Fatalf("edge read back:\n  %+v (props %v)\nwant\n  %+v (props %v)", e, e.Props, want, want.Props)
		}
	}
	return vs, es
}

func propsOfVertices(vs []lineage.Vertex) []lineage.Props {
	var out []lineage.Props
	for _, v := range vs {
		out = append(out, v.Props)
	}
	return out
}

func propsOfEdges(es []lineage.Edge) []lineage.Props {
	var out []lineage.Props
	for _, e := range es {
		out = append(out, e.Props)
	}
	return out
}

// permutations returns n of the permutations of 0..k-1, the identity and
// its reverse among them, the rest random (seeded).
func permutations(k, n int, seed uint64) [][]int {
	r := rand.New(rand.NewPCG(seed, seed))
	var out [][]int
	for i := range n {
		p := make([]int, k)
		for j := range p {
			p[j] = j
			if i == 1 {
				p[j] = k - 1 - j
			}
		}
		if i > 1 {
			r.Shuffle(k, func(a, b int) { p[a], p[b] = p[b], p[a] })
		}
		out = append(out, p)
	}
	return out
}
