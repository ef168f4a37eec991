package verify

import (
	"testing"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
)

func expected() (Expected, *graph.Snapshot) {
	a := lineage.DatasetVertex(lineage.Dataset{Namespace: "s3://raw", Name: "a"})
	b := lineage.DatasetVertex(lineage.Dataset{Namespace: "s3://raw", Name: "b"})
	e := lineage.NewEdge(lineage.EdgeDerives, a.ID, b.ID, 10, 20, "r1")
	want := Expected{
		Vertices: map[string]lineage.Vertex{a.ID: a, b.ID: b},
		Edges:    map[string]lineage.Edge{e.ID: e},
	}
	snap := &graph.Snapshot{
		Vertices: []graph.Vertex{
			{ID: a.ID, Label: "Dataset", Props: map[string][]any{"namespace": {"s3://raw"}, "name": {"a"}}},
			{ID: b.ID, Label: "Dataset", Props: map[string][]any{"namespace": {"s3://raw"}, "name": {"b"}}},
		},
		Edges: []graph.Edge{{ID: e.ID, Label: e.Label, OutV: a.ID, InV: b.ID,
			Props: map[string]any{"firstSeen": int64(10), "lastSeen": int64(20), "lastRunId": "r1"}}},
	}
	return want, snap
}

func TestCompare(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*graph.Snapshot)
		check  func(*Report) int
	}{
		{"identical", func(*graph.Snapshot) {}, func(r *Report) int { return 0 }},
		{"missing edge", func(s *graph.Snapshot) { s.Edges = nil }, func(r *Report) int { return r.MissingEdges.Count }},
		{"ghost edge", func(s *graph.Snapshot) {
			e := s.Edges[0]
			e.OutV, e.InV = e.InV, e.OutV
			s.Edges = append(s.Edges, e)
		}, func(r *Report) int { return r.ExtraEdges.Count }},
		{"duplicate edge", func(s *graph.Snapshot) {
			e := s.Edges[0]
			e.ID = "other-id"
			s.Edges = append(s.Edges, e)
		}, func(r *Report) int { return r.DuplicateEdges.Count }},
		{"lastSeen differs", func(s *graph.Snapshot) { s.Edges[0].Props["lastSeen"] = int64(21) },
			func(r *Report) int { return r.MismatchedEdges.Count }},
		{"lastRunId differs", func(s *graph.Snapshot) { s.Edges[0].Props["lastRunId"] = "r0" },
			func(r *Report) int { return r.MismatchedEdges.Count }},
		{"missing vertex", func(s *graph.Snapshot) { s.Vertices = s.Vertices[:1] },
			func(r *Report) int { return r.MissingVertices.Count }},
		{"set cardinality", func(s *graph.Snapshot) { s.Vertices[0].Props["name"] = []any{"a", "a2"} },
			func(r *Report) int { return r.MismatchedVertices.Count }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, snap := expected()
			tt.mutate(snap)
			r := Compare(want, snap)
			if tt.name == "identical" {
				if !r.OK() {
					t.Fatalf("identical graphs differ:\n%s", r)
				}
				return
			}
			if r.OK() || tt.check(r) != 1 {
				t.Fatalf("difference not reported once:\n%s", r)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	_, snap := expected()
	got := Summary(snap)
	want := "graph: 2 vertices (Dataset=2), 1 edges (DERIVES=1)\nlongest lineage path (1 hops): s3://raw/a -> s3://raw/b\n"
	if got != want {
		t.Fatalf("Summary =\n%s\nwant\n%s", got, want)
	}
}
