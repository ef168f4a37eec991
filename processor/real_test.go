package processor

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// brokenReal names the events of testdata/real that no reading accepts
// (line number -> why): the rest must all decode.
var brokenReal = map[int]string{
	37:  "Flink expected-event template without eventTime",
	126: "Flink expected-event template without eventTime",
	127: "Flink expected-event template: eventTime is the matcher \"${json-unit.any-string}\"",
	128: "Flink expected-event template without eventTime",
	129: "Flink expected-event template without eventTime",
	130: "Flink expected-event template without eventTime",
	131: "Flink expected-event template: eventTime is the matcher \"${json-unit.any-string}\"",
	132: "Flink expected-event template: eventTime is the matcher \"${json-unit.any-string}\"",
	133: "Flink expected-event template: eventTime is the matcher \"${json-unit.any-string}\"",
	134: "Flink expected-event template: eventTime is the matcher \"${json-unit.any-string}\"",
	135: "Flink expected-event template: eventTime is the matcher \"${json-unit.any-string}\"",
	136: "Flink expected-event template: eventTime is the matcher \"${json-unit.any-string}\"",
	137: "Flink expected-event template without eventTime",
	138: "Flink expected-event template without eventTime",
	139: "Flink expected-event template: eventTime is the matcher \"${json-unit.any-string}\"",
	140: "Flink expected-event template without eventTime",
	141: "Flink expected-event template without eventTime",
	142: "Flink expected-event template without eventTime",
	143: "Flink expected-event template without eventTime",
	144: "Flink expected-event template without eventTime",
	145: "Flink expected-event template without eventTime",
	146: "Flink expected-event template without eventTime",
}

// TestRealEvents replays the corpus of real OpenLineage events
// (testdata/real, sources in testdata/real/SOURCES) through a shard: no
// dead letter but the named broken events (which the reference model
// refuses too), and the graph is exactly the reference model's, for every
// -runs mode. The corpus has a Spark-on-Glue run (S3 paths with Glue
// TABLE symlinks) and FAILed runs with an errorMessage.
func TestRealEvents(t *testing.T) {
	data, err := os.ReadFile("../testdata/real/events.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	recs := untemplateRunIDs(refmodel.SplitNDJSON(data))
	if len(recs) < 50 {
		t.Fatalf("%d events in the corpus, want 50+", len(recs))
	}
	for i, r := range recs {
		_, err := lineage.Decode(r)
		_, broken := brokenReal[i+1]
		switch {
		case err != nil && !broken:
			t.Errorf("line %d: dead letter: %v", i+1, err)
		case err == nil && broken:
			t.Errorf("line %d: named broken (%s) but decodes", i+1, brokenReal[i+1])
		}
		if (refmodel.Valid(r) == nil) != (err == nil) {
			t.Errorf("line %d: decoder (%v) and reference model (%v) disagree", i+1, err, refmodel.Valid(r))
		}
	}
	for _, runs := range []semantics.RunRecords{semantics.RunsFailed, semantics.RunsAll, semantics.RunsNone} {
		t.Run("runs="+string(runs), func(t *testing.T) {
			got, st := runRecords(t, recs, runs)
			want := refmodel.Build(recs, refmodel.Options{Runs: string(runs)})
			if d := refmodelCompare(want, got); d != "" {
				t.Fatalf("graph differs from the reference:\n%s", d)
			}
			if n := st.InvalidTotal(); n != int64(len(brokenReal)) {
				t.Errorf("%d dead letters, want %d (%v)", n, len(brokenReal), st.Invalid())
			}
			labels := map[string]int{}
			errMsgs := 0
			for _, v := range got.Vertices {
				labels[v.Label]++
				if p, ok := v.Props.Get(lineage.PropErrorMessage); ok && p.Str != "" {
					errMsgs++
				}
			}
			for _, e := range got.Edges {
				labels[e.Label]++
			}
			t.Logf("corpus graph: %v; Runs with an errorMessage: %d; lenient: %v", labels, errMsgs, st.Lenient())
			if labels[lineage.LabelDatasetAlias] == 0 || labels[lineage.EdgeAliasOf] == 0 {
				t.Error("no DatasetAlias from the Glue symlinks")
			}
			if runs != semantics.RunsNone && errMsgs == 0 {
				t.Error("no failed Run with its errorMessage")
			}
			// The dbt run (line 40) derives stg_locations' three fields from raw_stores.
			raw := lineage.Dataset{Namespace: "bigquery", Name: "example-bigquery-project.raw.raw_stores"}
			stg := lineage.Dataset{Namespace: "bigquery", Name: "example-bigquery-project.jaffle_shop.stg_locations"}
			for _, f := range [][2]string{{"id", "location_id"}, {"name", "location_name"}, {"tax_rate", "tax_rate"}} {
				id := lineage.EdgeID(lineage.EdgeColumnDerives, lineage.DatasetFieldID(raw, f[0]), lineage.DatasetFieldID(stg, f[1]))
				if _, ok := got.Edges[id]; !ok {
					t.Errorf("COLUMN_DERIVES %s -> %s missing", f[0], f[1])
				}
			}
			if labels[lineage.EdgeColumnDerives] != 3 || labels[lineage.LabelDatasetField] != 6 || labels[lineage.EdgeFieldOf] != 6 {
				t.Errorf("column lineage: %d COLUMN_DERIVES, %d DatasetField, %d FIELD_OF; want 3, 6, 6 (the corpus' one valid columnLineage facet)",
					labels[lineage.EdgeColumnDerives], labels[lineage.LabelDatasetField], labels[lineage.EdgeFieldOf])
			}
			glue := lineage.AliasID(lineage.Dataset{Namespace: "arn:aws:glue:us-west-2:123456789012", Name: "table/peopledatabase/peopledestination"})
			if _, ok := got.Vertices[glue]; !ok {
				t.Errorf("Glue table alias %s missing", glue)
			}
		})
	}
}

// untemplateRunIDs gives each job of the dbt integration's fixtures a run
// id of its own: they write the placeholder "{{ any(result) }}" ("any
// value") for the runs of 37 jobs, which as one run id would make every
// event after the first job's a run_job_mismatch dead letter (DESIGN.md,
// Lineage semantics 3).
func untemplateRunIDs(recs [][]byte) [][]byte {
	const placeholder = "{{ any(result) }}"
	for i, r := range recs {
		if !bytes.Contains(r, []byte(placeholder)) {
			continue
		}
		var ev struct {
			Job struct{ Namespace, Name string }
		}
		if json.Unmarshal(r, &ev) != nil {
			continue
		}
		recs[i] = bytes.ReplaceAll(r, []byte(placeholder), []byte("any-"+ev.Job.Namespace+"/"+ev.Job.Name))
	}
	return recs
}
