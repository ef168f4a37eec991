package processor

import (
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// colFacet is a columnLineage facet deriving each output field of pairs
// from field in of s3://raw/orders.
func colFacet(pairs ...[2]string) string {
	s := `"columnLineage":{"fields":{`
	for i, p := range pairs {
		if i > 0 {
			s += ","
		}
		s += `"` + p[1] + `":{"inputFields":[{"namespace":"s3://raw","name":"orders","field":"` + p[0] + `"}],"transformationType":"IDENTITY"}`
	}
	return s + `}}`
}

var (
	rawOrders = lineage.Dataset{Namespace: "s3://raw", Name: "orders"}
	martDaily = lineage.Dataset{Namespace: "s3://mart", Name: "daily"}
)

// TestColumnLineage: a committed run gives exactly the field pairs of the
// columnLineage facets of all its events (the START's too), stamped with
// its COMPLETE eventTime and runId; a FAILed run gives none; a JobEvent
// gives its own (lastRunId ""). Each pair is two DatasetField vertices
// (namespace, name of the dataset, field), FIELD_OF each to its Dataset
// and COLUMN_DERIVES input -> output. The graph is exactly the reference
// model's.
func TestColumnLineage(t *testing.T) {
	out := func(facet string) string {
		return `"inputs":[{"namespace":"s3://raw","name":"orders"}],"outputs":[{"namespace":"s3://mart","name":"daily","facets":{` + facet + `}}]`
	}
	recs := [][]byte{
		[]byte(`{"eventType":"START","eventTime":"2026-01-01T02:00:00Z","run":{"runId":"c1"},"job":{"namespace":"spark","name":"daily"},` + out(colFacet([2]string{"id", "order_id"})) + `}`),
		[]byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T02:01:00Z","run":{"runId":"c1"},"job":{"namespace":"spark","name":"daily"},` + out(colFacet([2]string{"id", "order_id"}, [2]string{"amt", "amount"})) + `}`),
		// A failed run: none of its field pairs.
		[]byte(`{"eventType":"START","eventTime":"2026-01-01T02:02:00Z","run":{"runId":"f1"},"job":{"namespace":"spark","name":"daily"},` + out(colFacet([2]string{"country", "country"})) + `}`),
		[]byte(`{"eventType":"FAIL","eventTime":"2026-01-01T02:03:00Z","run":{"runId":"f1"},"job":{"namespace":"spark","name":"daily"}}`),
		// Design-time lineage.
		[]byte(`{"eventTime":"2026-01-01T02:04:00Z","job":{"namespace":"spark","name":"daily"},` + out(colFacet([2]string{"ts", "day"})) + `,"producer":"p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent"}`),
	}
	for _, runs := range []semantics.RunRecords{semantics.RunsFailed, semantics.RunsAll, semantics.RunsNone} {
		t.Run("runs="+string(runs), func(t *testing.T) {
			got, _ := runRecords(t, recs, runs)
			if d := refmodelCompare(refmodel.Build(recs, refmodel.Options{Runs: string(runs)}), got); d != "" {
				t.Fatalf("graph differs from the reference:\n%s", d)
			}
			t1 := time.Date(2026, 1, 1, 2, 1, 0, 0, time.UTC).UnixMilli()
			t4 := time.Date(2026, 1, 1, 2, 4, 0, 0, time.UTC).UnixMilli()
			want := map[string]lineage.Edge{}
			t0 := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC).UnixMilli()
			// transformationType: stamped by the run's first event naming the pair.
			for _, p := range []struct {
				in, out string
				t       int64
				run     string
				named   int64
			}{{"id", "order_id", t1, "c1", t0}, {"amt", "amount", t1, "c1", t1}, {"ts", "day", t4, "", t4}} {
				e := lineage.NewEdge(lineage.EdgeColumnDerives, lineage.DatasetFieldID(rawOrders, p.in), lineage.DatasetFieldID(martDaily, p.out), p.t, p.t, p.run)
				e.Props = lineage.MakeProps(lineage.StrLWW(lineage.PropTransformationType, "IDENTITY", p.named))
				want[e.ID] = e
			}
			fieldOf := 0
			for _, e := range got.Edges {
				switch e.Label {
				case lineage.EdgeColumnDerives:
					if w, ok := want[e.ID]; !ok || w != e {
						t.Errorf("COLUMN_DERIVES %+v, want %+v", e, w)
					}
					delete(want, e.ID)
				case lineage.EdgeFieldOf:
					fieldOf++
					v, d := got.Vertices[e.OutV], got.Vertices[e.InV]
					f, _ := v.Props.Get(lineage.PropField)
					if v.Label != lineage.LabelDatasetField || d.Label != lineage.LabelDataset || v.Namespace != d.Namespace || v.Name != d.Name ||
						v.ID != lineage.DatasetFieldID(lineage.Dataset{Namespace: d.Namespace, Name: d.Name}, f.Str) {
						t.Errorf("FIELD_OF %+v -> %+v", v, d)
					}
				}
			}
			if len(want) != 0 {
				t.Errorf("missing COLUMN_DERIVES %v", want)
			}
			if fieldOf != 6 { // id amt ts order_id amount day
				t.Errorf("%d FIELD_OF, want 6", fieldOf)
			}
			if _, ok := got.Vertices[lineage.DatasetFieldID(martDaily, "country")]; ok {
				t.Error("field of the failed run in the graph")
			}
		})
	}
}

// TestNoColumnLineage: -column-lineage=false gives no field lineage, as
// the reference model with NoColumns.
func TestNoColumnLineage(t *testing.T) {
	rec := []byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T02:01:00Z","run":{"runId":"c1"},"job":{"namespace":"spark","name":"daily"},"inputs":[{"namespace":"s3://raw","name":"orders"}],"outputs":[{"namespace":"s3://mart","name":"daily","facets":{` + colFacet([2]string{"id", "order_id"}) + `}}]}`)
	got, _ := runRecordsWith(t, [][]byte{rec}, func(c *PipelineConfig) { c.Semantics.NoColumnLineage = true })
	if d := refmodelCompare(refmodel.Build([][]byte{rec}, refmodel.Options{NoColumns: true}), got); d != "" {
		t.Fatalf("graph differs from the reference:\n%s", d)
	}
	with := refmodel.Build([][]byte{rec}, refmodel.Options{})
	for _, g := range []*refmodel.Graph{got, with} {
		n := 0
		for _, v := range g.Vertices {
			if v.Label == lineage.LabelDatasetField {
				n++
			}
		}
		if want := map[bool]int{true: 0, false: 2}[g == got]; n != want {
			t.Errorf("%d DatasetField, want %d", n, want)
		}
	}
}

// TestColumnLineageBudget: field pairs count against the emission's edge
// budget (3 edges each: COLUMN_DERIVES and two FIELD_OF), those past it
// are left out and counted.
func TestColumnLineageBudget(t *testing.T) {
	pairs := make([][2]string, 10)
	for i := range pairs {
		pairs[i] = [2]string{"c" + itoa(i), "c" + itoa(i)}
	}
	rec := []byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T02:01:00Z","run":{"runId":"c1"},"job":{"namespace":"spark","name":"daily"},"inputs":[{"namespace":"s3://raw","name":"orders"}],"outputs":[{"namespace":"s3://mart","name":"daily","facets":{` + colFacet(pairs...) + `}}]}`)
	// INPUT_TO, OUTPUTS, DERIVES: 3 edges; 12 more fit 4 pairs.
	got, st := runRecordsWith(t, [][]byte{rec}, func(c *PipelineConfig) { c.Budgets.MaxEmissionEdges = 15 })
	n := 0
	for _, e := range got.Edges {
		if e.Label == lineage.EdgeColumnDerives {
			n++
		}
	}
	if n != 4 || st.Budget.EdgesDropped.Load() != 6 || st.Budget.EmissionsTruncated.Load() != 1 {
		t.Fatalf("%d COLUMN_DERIVES, %d dropped, %d truncated; want 4, 6, 1", n, st.Budget.EdgesDropped.Load(), st.Budget.EmissionsTruncated.Load())
	}
}
