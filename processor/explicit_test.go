package processor

import (
	"os"
	"sort"
	"testing"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// TestExplicitLineage: the fixture built from the OpenLineage spec's own
// LineageJobFacet and LineageDatasetFacet examples. A run whose events
// carry them while it is open gets exactly the DERIVES pairs they name;
// one without them the inputs x outputs product; a facet arriving after
// the run committed leaves its product; an empty inputs array gives no
// DERIVES; a FAILed run none; a JobEvent follows the same rule. Tags
// facets become properties; a jobDependencies run facet (Airflow's
// example) gives DEPENDS_ON job edges. Exactly the reference model's graph.
func TestExplicitLineage(t *testing.T) {
	data, err := os.ReadFile("../testdata/explicit-lineage.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	recs := refmodel.SplitNDJSON(data)
	got, _ := runRecords(t, recs, semantics.RunsAll)
	if d := refmodelCompare(refmodel.Build(recs, refmodel.Options{}), got); d != "" {
		t.Fatalf("graph differs from the reference:\n%s", d)
	}
	names := map[string]string{}
	for id, v := range got.Vertices {
		names[id] = v.Name
	}
	var derives []string
	for _, e := range got.Edges {
		if e.Label == lineage.EdgeDerives {
			derives = append(derives, names[e.OutV]+" -> "+names[e.InV])
		}
	}
	sort.Strings(derives)
	want := []string{
		"public.a -> public.c", "public.b -> public.c", // no facet: the product
		"public.customers -> public.customer_summary", "public.orders -> public.customer_summary", // LineageDatasetFacet
		"public.d -> public.f", "public.e -> public.f", // facet after the commit: the product stays
		"public.source_table -> public.output_table", // LineageJobFacet (audit_log is only an input)
		"raw.x -> mart.y", // JobEvent
	}
	sort.Strings(want)
	if len(derives) != len(want) {
		t.Fatalf("DERIVES:\n%q\nwant\n%q", derives, want)
	}
	for i := range want {
		if derives[i] != want[i] {
			t.Fatalf("DERIVES:\n%q\nwant\n%q", derives, want)
		}
	}
	var deps []string
	for _, e := range got.Edges {
		if e.Label == lineage.EdgeDependsOn {
			deps = append(deps, names[e.OutV]+" -> "+names[e.InV])
		}
	}
	sort.Strings(deps)
	if want := []string{"dag_asset_consumer -> dag_asset_1_producer.produce_dataset_1", "dag_report.publish -> dag_asset_consumer"}; len(deps) != 2 || deps[0] != want[0] || deps[1] != want[1] {
		t.Errorf("DEPENDS_ON %q, want %q", deps, want)
	}
	get := func(v lineage.Vertex, k string) string { p, _ := v.Props.Get(k); return p.Str }
	job := got.Vertices[lineage.JobID(lineage.Job{Namespace: "airflow", Name: "warehouse.customer_summary"})]
	if tags := get(job, lineage.PropTags); tags != `[{"key":"environment","value":"production","source":"CONFIG"},{"key":"team","value":"analytics","source":"USER"}]` {
		t.Errorf("job tags %q", tags)
	}
	ds := got.Vertices[lineage.DatasetID(lineage.Dataset{Namespace: "postgresql://warehouse:5432", Name: "public.customer_summary"})]
	if tags := get(ds, lineage.PropTags); tags != `[{"key":"pii","value":"true","source":"CONFIG"}]` {
		t.Errorf("dataset tags %q", tags)
	}
}
