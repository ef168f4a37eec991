package processor

import (
	"strings"
	"testing"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// TestFacetProperties: facets become Dataset and Job properties, last
// writer wins by eventTime whatever the delivery order; an event without
// the facet leaves the property alone; a value over the cap is left out
// and counted (budget facet_props). Exactly the reference model's.
func TestFacetProperties(t *testing.T) {
	ev := func(runID, typ, ts, sql, desc string) []byte {
		job := `{"namespace":"dbt","name":"model.orders"`
		if sql != "" {
			job += `,"facets":{"sql":{"query":"` + sql + `"},"jobType":{"processingType":"BATCH","integration":"DBT","jobType":"MODEL"}}`
		}
		job += `}`
		out := `{"namespace":"pg","name":"orders"`
		if desc != "" {
			out += `,"facets":{"documentation":{"description":"` + desc + `"},"schema":{"fields":[{"name":"id","type":"int"}]}}`
		}
		out += `}`
		return []byte(`{"eventType":"` + typ + `","eventTime":"` + ts + `","run":{"runId":"` + runID + `"},"job":` + job + `,"outputs":[` + out + `]}`)
	}
	big := strings.Repeat("y", lineage.MaxFacetPropBytes+1)
	recs := [][]byte{
		ev("r2", "COMPLETE", "2026-01-01T03:00:00Z", "SELECT 2", "second"), // newer first
		ev("r1", "COMPLETE", "2026-01-01T02:00:00Z", "SELECT 1", "first"),
		ev("r3", "COMPLETE", "2026-01-01T04:00:00Z", "", ""), // carries none: changes nothing
		ev("r4", "FAIL", "2026-01-01T05:00:00Z", big, ""),    // sql over the cap: left out, counted
	}
	got, st := runRecords(t, recs, semantics.RunsNone)
	if d := refmodelCompare(refmodel.Build(recs, refmodel.Options{Runs: "none"}), got); d != "" {
		t.Fatalf("graph differs from the reference:\n%s", d)
	}
	job := got.Vertices[lineage.JobID(lineage.Job{Namespace: "dbt", Name: "model.orders"})]
	ds := got.Vertices[lineage.DatasetID(lineage.Dataset{Namespace: "pg", Name: "orders"})]
	get := func(v lineage.Vertex, k string) string { p, _ := v.Props.Get(k); return p.Str }
	if get(job, lineage.PropSQL) != "SELECT 2" || get(job, lineage.PropIntegration) != "DBT" || get(job, lineage.PropJobType) != "MODEL" {
		t.Errorf("job props %v", job.Props)
	}
	if get(ds, lineage.PropDescription) != "second" || get(ds, lineage.PropSchema) != `[{"name":"id","type":"int"}]` {
		t.Errorf("dataset props %v", ds.Props)
	}
	if n := st.Budget.FacetPropsCapped.Load(); n != 1 {
		t.Errorf("%d capped, want 1", n)
	}
}
