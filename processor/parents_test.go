package processor

import (
	"testing"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// TestParentHierarchy: a Spark application run (no datasets) with two SQL
// execution runs whose parent run facet names it. Each child job is
// CHILD_OF the application's job, whatever its outcome, so the job with no
// datasets shows; a child Run names the application's run in its
// parentRunId property (no run edge). Delivering every record twice (not byte-identical:
// not deduplicated) gives the same graph. Exactly the reference model's.
func TestParentHierarchy(t *testing.T) {
	parent := `"facets":{"parent":{"run":{"runId":"a1"},"job":{"namespace":"spark","name":"app"}}}`
	recs := [][]byte{
		[]byte(`{"eventType":"START","eventTime":"2026-01-01T02:00:00Z","run":{"runId":"a1"},"job":{"namespace":"spark","name":"app"}}`),
		[]byte(`{"eventType":"START","eventTime":"2026-01-01T02:00:01Z","run":{"runId":"c1",` + parent + `},"job":{"namespace":"spark","name":"app.query_1"},"inputs":[{"namespace":"s3://raw","name":"orders"}]}`),
		[]byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T02:00:02Z","run":{"runId":"c1",` + parent + `},"job":{"namespace":"spark","name":"app.query_1"},"outputs":[{"namespace":"s3://mart","name":"daily"}]}`),
		[]byte(`{"eventType":"FAIL","eventTime":"2026-01-01T02:00:03Z","run":{"runId":"c2",` + parent + `},"job":{"namespace":"spark","name":"app.query_2"}}`),
		[]byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T02:00:04Z","run":{"runId":"a1"},"job":{"namespace":"spark","name":"app"}}`),
	}
	twice := append([][]byte{}, recs...)
	for _, r := range recs {
		twice = append(twice, append(append([]byte{}, r...), ' '))
	}
	app := lineage.JobID(lineage.Job{Namespace: "spark", Name: "app"})
	for _, runs := range []semantics.RunRecords{semantics.RunsFailed, semantics.RunsAll, semantics.RunsNone} {
		t.Run("runs="+string(runs), func(t *testing.T) {
			got, _ := runRecords(t, recs, runs)
			if d := refmodelCompare(refmodel.Build(recs, refmodel.Options{Runs: string(runs)}), got); d != "" {
				t.Fatalf("graph differs from the reference:\n%s", d)
			}
			again, _ := runRecords(t, twice, runs)
			if d := refmodelCompare(got, again); d != "" {
				t.Fatalf("twice delivered differs:\n%s", d)
			}
			want := map[string]bool{}
			for _, q := range []struct{ job, run string }{{"app.query_1", "c1"}, {"app.query_2", "c2"}} {
				// The job hierarchy only: a child run names its parent
				// run in a property (parentRunId), not an edge.
				want[lineage.EdgeID(lineage.EdgeChildOf, lineage.JobID(lineage.Job{Namespace: "spark", Name: q.job}), app)] = true
			}
			for _, e := range got.Edges {
				if e.Label != lineage.EdgeChildOf {
					continue
				}
				if !want[e.ID] {
					t.Errorf("unexpected CHILD_OF %s -> %s", e.OutV, e.InV)
				}
				delete(want, e.ID)
			}
			if len(want) != 0 {
				t.Errorf("%d CHILD_OF missing", len(want))
			}
			if v, ok := got.Vertices[app]; !ok || v.Label != lineage.LabelJob {
				t.Error("the application's job (no datasets) is not in the graph")
			}
			if runs == semantics.RunsNone {
				return
			}
			// The failed child names its parent run (and, -runs all, the
			// committed one too; the parent run is recorded itself).
			if p, _ := got.Vertices[lineage.RunVertexID("c2")].Props.Get(lineage.PropParentRunID); p.Str != "a1" {
				t.Errorf("failed child Run c2: parentRunId %q, want a1", p.Str)
			}
			if runs == semantics.RunsAll {
				if p, _ := got.Vertices[lineage.RunVertexID("c1")].Props.Get(lineage.PropParentRunID); p.Str != "a1" {
					t.Errorf("child Run c1: parentRunId %q, want a1", p.Str)
				}
				if p, _ := got.Vertices[lineage.RunVertexID("a1")].Props.Get(lineage.PropJob); p.Str != app {
					t.Errorf("parent Run a1: job %q, want %s", p.Str, app)
				}
			}
		})
	}
}
