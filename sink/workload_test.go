package sink

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/leakcheck"
)

// workload is a seeded set of batches, as windows of several shards would
// seal them, and the graph they must give.
type workload struct {
	batches  []Batch
	vertices []lineage.Vertex // reference, sorted by id
	edges    []lineage.Edge   // reference: lineage.Edge.Merge fold, sorted by id
}

// genWorkload makes nBatches batches of about edgesPer edges over
// nDatasets datasets and nJobs jobs. Names hold '/', ':', quotes and
// Unicode.
func genWorkload(seed uint64, nBatches, edgesPer, nDatasets, nJobs int) workload {
	return genWorkloadNS("", seed, nBatches, edgesPer, nDatasets, nJobs)
}

// genWorkloadNS is genWorkload with every namespace prefixed by ns (tests
// sharing one Gremlin Server keep apart by namespace).
func genWorkloadNS(ns string, seed uint64, nBatches, edgesPer, nDatasets, nJobs int) workload {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ds := make([]lineage.Vertex, nDatasets)
	for i := range ds {
		ds[i] = lineage.DatasetVertex(lineage.Dataset{Namespace: fmt.Sprintf("%ss3://b%d", ns, i%7), Name: fmt.Sprintf("t/%d:'x\"ß", i)})
	}
	js := make([]lineage.Vertex, nJobs)
	for i := range js {
		js[i] = lineage.JobVertex(lineage.Job{Namespace: ns + "spark", Name: fmt.Sprintf("job|%d", i)})
	}
	var w workload
	ref := map[string]lineage.Edge{}
	vs := map[string]lineage.Vertex{}
	for b := 0; b < nBatches; b++ {
		bv := map[string]lineage.Vertex{}
		be := map[string]lineage.Edge{}
		for len(be) < edgesPer {
			in, out, job := ds[r.IntN(nDatasets)], ds[r.IntN(nDatasets)], js[r.IntN(nJobs)]
			if in.ID == out.ID {
				continue
			}
			t := int64(1_700_000_000_000 + r.IntN(1_000_000))
			run := fmt.Sprintf("run-%03d", r.IntN(50))
			// Ties on lastSeen with different runs exercise the tie rule.
			if r.IntN(4) == 0 {
				t = 1_700_000_000_000
			}
			for _, e := range []lineage.Edge{
				lineage.NewEdge(lineage.EdgeInputTo, in.ID, job.ID, t, t, run),
				lineage.NewEdge(lineage.EdgeOutputs, job.ID, out.ID, t, t, run),
				lineage.NewEdge(lineage.EdgeDerives, in.ID, out.ID, t, t, run),
			} {
				lineage.MergeInto(be, e)
			}
			bv[in.ID], bv[out.ID], bv[job.ID] = in, out, job
		}
		var batch Batch
		batch.Key = fmt.Sprintf("shard-%d/%d", b%3, b)
		for _, v := range bv {
			batch.Vertices = append(batch.Vertices, v)
			vs[v.ID] = v
		}
		for _, e := range be {
			batch.Edges = append(batch.Edges, e)
			lineage.MergeInto(ref, e)
		}
		sort.Slice(batch.Vertices, func(i, j int) bool { return batch.Vertices[i].ID < batch.Vertices[j].ID })
		sort.Slice(batch.Edges, func(i, j int) bool { return batch.Edges[i].ID < batch.Edges[j].ID })
		w.batches = append(w.batches, batch)
	}
	for _, v := range vs {
		w.vertices = append(w.vertices, v)
	}
	for _, e := range ref {
		w.edges = append(w.edges, e)
	}
	sort.Slice(w.vertices, func(i, j int) bool { return w.vertices[i].ID < w.vertices[j].ID })
	sort.Slice(w.edges, func(i, j int) bool { return w.edges[i].ID < w.edges[j].ID })
	return w
}

// checkGraph fails t unless vs, es equal the workload's reference.
func (w workload) checkGraph(t testing.TB, vs []lineage.Vertex, es []lineage.Edge) {
	t.Helper()
	if len(vs) != len(w.vertices) {
		t.Fatalf("graph has %d vertices, reference %d", len(vs), len(w.vertices))
	}
	for i := range vs {
		if vs[i] != w.vertices[i] {
			t.Fatalf("vertex %d: graph %+v, reference %+v", i, vs[i], w.vertices[i])
		}
	}
	if len(es) != len(w.edges) {
		t.Fatalf("graph has %d edges, reference %d", len(es), len(w.edges))
	}
	for i := range es {
		if es[i] != w.edges[i] {
			t.Fatalf("edge %d: graph %+v, reference %+v", i, es[i], w.edges[i])
		}
	}
}

// startSink starts a sink with cfg as changed by mod (if set) and closes
// it when t ends.
func startSink(t testing.TB, cfg Config, mod func(*Config)) *Neptune {
	t.Helper()
	if mod != nil {
		mod(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return n
}

// waitFor polls cond (a state change made by other goroutines, not a
// duration) until it holds or 10 s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// writeAll writes every batch, resending a batch until it is acknowledged
// (what the processor's outbox does), and fails t after maxResends.
func writeAll(t testing.TB, n *Neptune, batches []Batch, maxResends int) (resends int) {
	t.Helper()
	for _, b := range batches {
		for try := 0; ; try++ {
			err := n.WriteBatch(context.Background(), b)
			if err == nil {
				break
			}
			if try >= maxResends {
				t.Fatalf("batch %s not acknowledged after %d resends: %v", b.Key, try, err)
			}
			resends++
		}
	}
	return resends
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// checkNoLeaks is [leakcheck.Check].
func checkNoLeaks(t testing.TB, except ...string) { leakcheck.Check(t, except...) }
