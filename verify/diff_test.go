package verify

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/keyspace"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// snapshotOf is the snapshot a graph of refmodel would read back as.
func snapshotOf(g *refmodel.Graph) *graph.Snapshot {
	s := &graph.Snapshot{}
	for _, v := range g.Vertices {
		s.Vertices = append(s.Vertices, graph.Vertex{ID: v.ID, Label: v.Label,
			Props: map[string][]any{"namespace": {v.Namespace}, "name": {v.Name}}})
	}
	for _, e := range g.Edges {
		s.Edges = append(s.Edges, graph.Edge{ID: e.ID, Label: e.Label, OutV: e.OutV, InV: e.InV,
			Props: map[string]any{"firstSeen": e.FirstSeen, "lastSeen": e.LastSeen, "lastRunId": e.LastRunID}})
	}
	return s
}

// mirrored splits a generated stream as a mirror at share would: all of
// it for production, the events whose key is selected for the canary.
func mirrored(t testing.TB, seed int64, events int, share float64) (prod, canary [][]byte) {
	err := gen.Stream(gen.Config{Seed: seed, Events: events}, func(r gen.Record) error {
		prod = append(prod, r.Data)
		if k, ok := keyspace.EventKey(r.Data); ok && keyspace.Selected(k, share) {
			canary = append(canary, r.Data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return prod, canary
}

// TestDiffKeySpace: the graph of a 10% mirror equals production on the
// mirrored key space (divergence 0) though the whole graphs differ a lot;
// losing events of the canary, or one edge, shows.
func TestDiffKeySpace(t *testing.T) {
	const share = 0.1
	prod, canary := mirrored(t, 61, 4000, share)
	pg := refmodel.Build(prod, refmodel.Options{})
	cg := refmodel.Build(canary, refmodel.Options{})
	a, b := snapshotOf(pg), snapshotOf(cg)
	whole := Diff(a, b, DiffOptions{})
	if whole.Divergence < 0.5 {
		t.Fatalf("whole graphs: divergence %v, want most of production missing from a 10%% canary", whole.Divergence)
	}
	r := Diff(a, b, DiffOptions{KeyShare: share})
	if r.Diverging() != 0 || r.Compared == 0 || r.BEdges == 0 {
		t.Fatalf("mirrored key space: %s", r.String())
	}
	// A canary that lost a tenth of its events (an early checkpoint and a
	// kill would lose whole windows) diverges.
	lossy := refmodel.Build(canary[:len(canary)*9/10], refmodel.Options{})
	r = Diff(a, snapshotOf(lossy), DiffOptions{KeyShare: share})
	if r.Divergence <= 0 || r.MissingEdges.Count+r.DifferentEdges.Count == 0 {
		t.Fatalf("lossy canary: %s", r.Line())
	}
	// One edge gone, one property changed.
	bb := snapshotOf(cg)
	inScope := func(l string) bool { return l == lineage.EdgeInputTo || l == lineage.EdgeOutputs }
	sort.Slice(bb.Edges, func(i, j int) bool { // in-scope kinds (INPUT_TO, OUTPUTS) first
		a, b := inScope(bb.Edges[i].Label), inScope(bb.Edges[j].Label)
		return a && !b || a == b && bb.Edges[i].ID < bb.Edges[j].ID
	})
	bb.Edges[1].Props["lastRunId"] = "other"
	bb.Edges = bb.Edges[1:]
	r = Diff(a, bb, DiffOptions{KeyShare: share})
	if r.MissingEdges.Count != 1 || r.DifferentEdges.Count != 1 || r.Diverging() != 2 {
		t.Fatalf("one edge removed and one changed: %s", r.String())
	}
	if want := 2 / float64(r.Compared); r.Divergence != want {
		t.Fatalf("divergence %v, want 2/%d", r.Divergence, r.Compared)
	}
	// An extra edge in the canary (ghost lineage) in scope.
	bb = snapshotOf(cg)
	var job string // a job of the mirrored key space: one with lineage in the canary (a parent job may be out of it)
	for _, e := range bb.Edges {
		if e.Label == lineage.EdgeOutputs {
			job = e.OutV
			break
		}
	}
	bb.Edges = append(bb.Edges, graph.Edge{ID: "ghost", Label: lineage.EdgeOutputs, OutV: job, InV: "nowhere"})
	r = Diff(a, bb, DiffOptions{KeyShare: share})
	if r.ExtraEdges.Count != 1 || !strings.Contains(r.String(), "extra edge: OUTPUTS") {
		t.Fatalf("ghost edge: %s", r.String())
	}
}

// writeGraph writes a refmodel graph to the Gremlin endpoint.
func writeGraph(t testing.TB, endpoint string, g *refmodel.Graph) {
	n, err := sink.New(sink.Config{Endpoint: endpoint, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		RequestTimeout: 30 * time.Second, CoalesceWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	defer func() { _ = n.Close(ctx) }()
	var b lineage.Batch
	for _, v := range g.Vertices {
		b.Vertices = append(b.Vertices, v)
	}
	if err := n.WriteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	b = lineage.Batch{}
	for _, e := range g.Edges {
		b.Edges = append(b.Edges, e)
	}
	if err := n.WriteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// TestDiffLiveGraphs: the same comparison on two real Gremlin Servers
// (private ones: the comparison needs whole graphs to itself). Set
// LINEAGEFLOW_DIFF_ENDPOINTS=ws://a,ws://b to use running servers
// instead (their graphs are DROPPED first).
func TestDiffLiveGraphs(t *testing.T) {
	var epA, epB string
	if v := os.Getenv("LINEAGEFLOW_DIFF_ENDPOINTS"); v != "" {
		var ok bool
		epA, epB, ok = strings.Cut(v, ",")
		if !ok {
			t.Fatalf("LINEAGEFLOW_DIFF_ENDPOINTS=%q: want two endpoints, comma-separated", v)
		}
		for _, ep := range []string{epA, epB} {
			if err := graph.Drop(ep); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		testenv.Gremlin(t) // the stand-ins are installed and wanted
		epA, epB = testenv.PrivateGremlin(t), testenv.PrivateGremlin(t)
	}
	const share = 0.3
	prod, canary := mirrored(t, 62, 3000, share)
	writeGraph(t, epA, refmodel.Build(prod, refmodel.Options{}))
	cg := refmodel.Build(canary, refmodel.Options{})
	writeGraph(t, epB, cg)
	dump := func(ep string) *graph.Snapshot {
		s, err := graph.Dump(ep, 2*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := dump(epA), dump(epB)
	r := Diff(a, b, DiffOptions{KeyShare: share})
	t.Log(r.Line())
	// In the key space's scope: the jobs' INPUT_TO and OUTPUTS edges and
	// their Run vertices (by their job property; a run has no edge); not DERIVES,
	// aliases, column lineage or the job hierarchy.
	inScope := 0
	for _, e := range cg.Edges {
		if e.Label == lineage.EdgeInputTo || e.Label == lineage.EdgeOutputs || strings.HasPrefix(e.OutV, "run:") {
			inScope++
		}
	}
	if r.Diverging() != 0 || r.BEdges != inScope || r.BEdges == 0 {
		t.Fatalf("live graphs, mirrored key space: %s (canary holds %d edges in scope)", r.String(), inScope)
	}
	// Remove one in-scope edge from the canary graph: diff sees it.
	g, closeFn, err := graph.Connect(epB)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	var victim string
	for _, e := range b.Edges {
		if e.Label == lineage.EdgeInputTo {
			victim = e.ID
			break
		}
	}
	if _, err := g.E(victim).Drop().ToList(); err != nil {
		t.Fatal(err)
	}
	r = Diff(a, dump(epB), DiffOptions{KeyShare: share})
	if r.MissingEdges.Count != 1 || r.Diverging() != 1 {
		t.Fatalf("one edge dropped from the canary: %s", r.String())
	}
}
