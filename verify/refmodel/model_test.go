package refmodel

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
)

// Helpers that write OpenLineage events by hand.

type ds = lineage.Dataset

var (
	job  = lineage.Job{Namespace: "spark://prod", Name: "etl.write_b"}
	dsA  = ds{Namespace: "s3://raw", Name: "a"}
	dsB  = ds{Namespace: "glue://catalog", Name: "staging.b"}
	dsC  = ds{Namespace: "s3://raw", Name: "c"}
	t0   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jobV = lineage.JobVertex(job)
)

func ts(sec float64) string {
	return t0.Add(time.Duration(sec * float64(time.Second))).Format("2006-01-02T15:04:05.000Z07:00")
}
func ms(sec float64) int64 { return t0.Add(time.Duration(sec * float64(time.Second))).UnixMilli() }

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

func dsList(xs []ds) string {
	parts := make([]string, len(xs))
	for i, d := range xs {
		parts[i] = fmt.Sprintf(`{"namespace":%s,"name":%s}`, q(d.Namespace), q(d.Name))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// runEv is a RunEvent of job; typ "" leaves eventType out.
func runEv(typ, runID string, sec float64, j lineage.Job, in, out []ds) []byte {
	et := ""
	if typ != "" {
		et = fmt.Sprintf(`"eventType":%s,`, q(typ))
	}
	return []byte(fmt.Sprintf(`{%s"eventTime":%s,"run":{"runId":%s},"job":{"namespace":%s,"name":%s},"inputs":%s,"outputs":%s,"producer":"test","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`,
		et, q(ts(sec)), q(runID), q(j.Namespace), q(j.Name), dsList(in), dsList(out)))
}

func jobEv(sec float64, j lineage.Job, in, out []ds) []byte {
	return []byte(fmt.Sprintf(`{"eventTime":%s,"job":{"namespace":%s,"name":%s},"inputs":%s,"outputs":%s,"producer":"test","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent"}`,
		q(ts(sec)), q(j.Namespace), q(j.Name), dsList(in), dsList(out)))
}

func datasetEv(sec float64, d ds) []byte {
	return []byte(fmt.Sprintf(`{"eventTime":%s,"dataset":{"namespace":%s,"name":%s,"facets":{}},"producer":"test","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"}`,
		q(ts(sec)), q(d.Namespace), q(d.Name)))
}

// want builds an expected graph from edges (vertices follow) and extra
// vertices.
type wantEdge struct {
	label       string
	out, in     lineage.Vertex
	first, last int64
	run         string
}

func edge(label string, out, in lineage.Vertex, first, last float64, run string) wantEdge {
	return wantEdge{label, out, in, ms(first), ms(last), run}
}

func dv(d ds) lineage.Vertex { return lineage.DatasetVertex(d) }

func graphOf(edges []wantEdge, vertices ...lineage.Vertex) *Graph {
	g := &Graph{Vertices: map[string]lineage.Vertex{}, Edges: map[string]lineage.Edge{}}
	for _, v := range vertices {
		g.Vertices[v.ID] = v
	}
	for _, e := range edges {
		x := lineage.NewEdge(e.label, e.out.ID, e.in.ID, e.first, e.last, e.run)
		g.Edges[x.ID] = x
		g.Vertices[e.out.ID] = e.out
		g.Vertices[e.in.ID] = e.in
	}
	return g
}

// runEdges is the full edge set of one run of job over in x out.
func runEdges(j lineage.Job, in, out []ds, first, last float64, run string) []wantEdge {
	jv := lineage.JobVertex(j)
	var es []wantEdge
	for _, i := range in {
		es = append(es, edge(lineage.EdgeInputTo, dv(i), jv, first, last, run))
	}
	for _, o := range out {
		es = append(es, edge(lineage.EdgeOutputs, jv, dv(o), first, last, run))
	}
	for _, i := range in {
		for _, o := range out {
			if i != o {
				es = append(es, edge(lineage.EdgeDerives, dv(i), dv(o), first, last, run))
			}
		}
	}
	return es
}

func cat[T any](xs ...[]T) []T {
	var out []T
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}

func TestModelRules(t *testing.T) {
	t.Parallel()
	const r1, r2 = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
	weird1 := ds{Namespace: "s3://bucket", Name: "a/b"}
	weird2 := ds{Namespace: "s3://bucket/a", Name: "b"}
	weird3 := ds{Namespace: "jdbc://wh:5432", Name: `"Ventes" 'été'|売上:2026`}
	tests := []struct {
		name       string
		policy     string
		records    [][]byte
		want       *Graph
		invalid    int
		duplicates int
	}{
		{
			name: "ghost: a FAIL run gives nothing",
			records: [][]byte{
				runEv("START", r1, 0, job, []ds{dsA}, nil),
				runEv("FAIL", r1, 1, job, nil, []ds{dsB}),
			},
			want: graphOf(nil),
		},
		{
			name: "ghost: ABORT first, COMPLETE later gives nothing",
			records: [][]byte{
				runEv("START", r1, 0, job, []ds{dsA}, nil),
				runEv("ABORT", r1, 1, job, nil, []ds{dsB}),
				runEv("COMPLETE", r1, 2, job, nil, []ds{dsB}),
			},
			want: graphOf(nil),
		},
		{
			name: "no terminal event gives nothing",
			records: [][]byte{
				runEv("START", r1, 0, job, []ds{dsA}, nil),
				runEv("RUNNING", r1, 1, job, nil, []ds{dsB}),
			},
			want: graphOf(nil),
		},
		{
			name: "union across START, RUNNING, COMPLETE",
			records: [][]byte{
				runEv("START", r1, 0, job, []ds{dsA}, nil),
				runEv("RUNNING", r1, 1, job, []ds{dsC}, nil),
				runEv("COMPLETE", r1, 2, job, nil, []ds{dsB}),
			},
			want: graphOf(runEdges(job, []ds{dsA, dsC}, []ds{dsB}, 2, 2, r1)),
		},
		{
			name: "eventType absent and OTHER are non-terminal and add datasets",
			records: [][]byte{
				runEv("", r1, 0, job, []ds{dsA}, nil),
				runEv("OTHER", r1, 1, job, []ds{dsC}, nil),
				runEv("COMPLETE", r1, 2, job, nil, []ds{dsB}),
			},
			want: graphOf(runEdges(job, []ds{dsA, dsC}, []ds{dsB}, 2, 2, r1)),
		},
		{
			name: "two COMPLETEs stamp firstSeen and lastSeen, out of order",
			records: [][]byte{
				runEv("START", r1, 5, job, []ds{dsA}, nil),
				runEv("COMPLETE", r1, 9, job, nil, []ds{dsB}),
				runEv("COMPLETE", r1, 3, job, nil, []ds{dsB}), // clock skew: earlier eventTime
			},
			want: graphOf(runEdges(job, []ds{dsA}, []ds{dsB}, 3, 9, r1)),
		},
		{
			name: "datasets after the first COMPLETE join the union; a later FAIL does not uncommit",
			records: [][]byte{
				runEv("START", r1, 0, job, []ds{dsA}, nil),
				runEv("COMPLETE", r1, 1, job, nil, []ds{dsB}),
				runEv("FAIL", r1, 2, job, []ds{dsC}, nil),
			},
			want: graphOf(runEdges(job, []ds{dsA, dsC}, []ds{dsB}, 1, 1, r1)),
		},
		{
			name: "two runs merge: min firstSeen, lastRunId of max lastSeen",
			records: [][]byte{
				runEv("COMPLETE", r2, 10, job, []ds{dsA}, []ds{dsB}),
				runEv("COMPLETE", r1, 20, job, []ds{dsA}, []ds{dsB}),
			},
			want: graphOf(runEdges(job, []ds{dsA}, []ds{dsB}, 10, 20, r1)),
		},
		{
			name: "lastSeen tie goes to the larger runId",
			records: [][]byte{
				runEv("COMPLETE", r2, 10, job, []ds{dsA}, []ds{dsB}),
				runEv("COMPLETE", r1, 10, job, []ds{dsA}, []ds{dsB}),
			},
			want: graphOf(runEdges(job, []ds{dsA}, []ds{dsB}, 10, 10, r2)),
		},
		{
			name: "a dataset read and written: no DERIVES self-loop",
			records: [][]byte{
				runEv("COMPLETE", r1, 1, job, []ds{dsA, dsB}, []ds{dsB}),
			},
			want: graphOf(runEdges(job, []ds{dsA, dsB}, []ds{dsB}, 1, 1, r1)),
		},
		{
			name: "duplicates: byte-identical records count once; same content in other bytes is a new record",
			records: [][]byte{
				runEv("START", r1, 0, job, []ds{dsA}, nil),
				runEv("COMPLETE", r1, 1, job, nil, []ds{dsB}),
				runEv("START", r1, 0, job, []ds{dsA}, nil),
				runEv("COMPLETE", r1, 1, job, nil, []ds{dsB}),
				append([]byte(" "), runEv("COMPLETE", r1, 1, job, nil, []ds{dsB})...),
			},
			duplicates: 2,
			want:       graphOf(runEdges(job, []ds{dsA}, []ds{dsB}, 1, 1, r1)),
		},
		{
			name: "invalid records are refused every time, never counted as duplicates",
			records: [][]byte{
				[]byte(`{"eventTime":`),
				[]byte(`{"eventTime":`),
				runEv("COMPLETE", "", 1, job, []ds{dsA}, []ds{dsB}),
			},
			invalid: 3,
			want:    graphOf(nil),
		},
		{
			name: "JobEvent: design-time edges stamped with its eventTime, lastRunId empty",
			records: [][]byte{
				jobEv(4, job, []ds{dsA}, []ds{dsB, dsC}),
				jobEv(2, job, []ds{dsA}, []ds{dsB}),
			},
			want: graphOf(cat(
				runEdges(job, []ds{dsA}, []ds{dsB}, 2, 4, ""),
				runEdges(job, nil, []ds{dsC}, 4, 4, ""),
				[]wantEdge{edge(lineage.EdgeDerives, dv(dsA), dv(dsC), 4, 4, "")},
			)),
		},
		{
			name: "JobEvent and run merge; a run wins a lastSeen tie over the JobEvent",
			records: [][]byte{
				jobEv(7, job, []ds{dsA}, []ds{dsB}),
				runEv("COMPLETE", r1, 7, job, []ds{dsA}, []ds{dsB}),
				jobEv(1, job, []ds{dsA}, []ds{dsB}),
			},
			want: graphOf(runEdges(job, []ds{dsA}, []ds{dsB}, 1, 7, r1)),
		},
		{
			name:    "DatasetEvent gives its vertex only",
			records: [][]byte{datasetEv(1, dsC)},
			want:    graphOf(nil, dv(dsC)),
		},
		{
			name: "a committed run without datasets gives no vertex",
			records: [][]byte{
				runEv("START", r1, 0, job, nil, nil),
				runEv("COMPLETE", r1, 1, job, nil, nil),
			},
			want: graphOf(nil),
		},
		{
			name: "inputs only: INPUT_TO edges, no DERIVES",
			records: [][]byte{
				runEv("COMPLETE", r1, 1, job, []ds{dsA}, nil),
			},
			want: graphOf(runEdges(job, []ds{dsA}, nil, 1, 1, r1)),
		},
		{
			name: "awkward names stay apart",
			records: [][]byte{
				runEv("COMPLETE", r1, 1, job, []ds{weird1, weird2}, []ds{weird3}),
			},
			want: graphOf(runEdges(job, []ds{weird1, weird2}, []ds{weird3}, 1, 1, r1)),
		},
		{
			name:   "policy any: every RunEvent commits and stamps, FAIL included",
			policy: "any",
			records: [][]byte{
				runEv("START", r1, 0, job, []ds{dsA}, nil),
				runEv("FAIL", r1, 3, job, nil, []ds{dsB}),
				runEv("RUNNING", r2, 5, job, []ds{dsC}, []ds{dsB}),
			},
			want: graphOf(cat(
				runEdges(job, []ds{dsA}, []ds{dsB}, 0, 3, r1),
				[]wantEdge{
					edge(lineage.EdgeInputTo, dv(dsC), jobV, 5, 5, r2),
					edge(lineage.EdgeDerives, dv(dsC), dv(dsB), 5, 5, r2),
				},
			)),
		},
	}
	// policy any: the OUTPUTS edge job->B is stamped by both runs.
	anyCase := &tests[len(tests)-1]
	jb := lineage.NewEdge(lineage.EdgeOutputs, jobV.ID, dv(dsB).ID, ms(0), ms(5), r2)
	anyCase.want.Edges[jb.ID] = jb

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Build(tt.records, Options{Policy: tt.policy}).Lineage()
			if d := Compare(tt.want, got); !d.Empty() {
				t.Errorf("graph differs:\n%s", d)
			}
			if got.Invalid != tt.invalid || got.Duplicates != tt.duplicates || got.Events != len(tt.records) {
				t.Errorf("counts: events %d invalid %d duplicates %d, want %d %d %d",
					got.Events, got.Invalid, got.Duplicates, len(tt.records), tt.invalid, tt.duplicates)
			}
		})
	}
}

func TestValidity(t *testing.T) {
	t.Parallel()
	good := string(runEv("START", "r", 0, job, []ds{dsA}, []ds{dsB}))
	tests := []struct {
		name  string
		data  string
		valid bool
	}{
		{"run event", good, true},
		{"no eventType", string(runEv("", "r", 0, job, nil, nil)), true},
		{"null eventType, inputs, outputs", `{"eventTime":"2026-01-01T00:00:00Z","eventType":null,"run":{"runId":"r"},"job":{"namespace":"n","name":"j"},"inputs":null,"outputs":null}`, true},
		{"no inputs/outputs keys", `{"eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`, true},
		{"offset and microseconds", `{"eventTime":"2026-01-01T02:00:00.123456+02:00","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`, true},
		{"job event", string(jobEv(0, job, []ds{dsA}, nil)), true},
		{"dataset event", string(datasetEv(0, dsA)), true},
		{"empty job name", `{"eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":""}}`, false},
		{"empty dataset namespace", `{"eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"","name":"a"}]}`, false},
		{"null input", `{"eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":"j"},"inputs":[null]}`, false},
		{"eventType without run", `{"eventTime":"2026-01-01T00:00:00Z","eventType":"COMPLETE","job":{"namespace":"n","name":"j"}}`, false},
		{"null run is absent: a JobEvent", `{"eventTime":"2026-01-01T00:00:00Z","run":null,"job":{"namespace":"n","name":"j"}}`, true},
		{"null dataset is absent: a JobEvent", `{"eventTime":"2026-01-01T00:00:00Z","dataset":null,"job":{"namespace":"n","name":"j"}}`, true},
		{"last duplicate key counts", `{"eventTime":"bad","eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`, true},
		{"empty eventType", strings.Replace(good, `"START"`, `""`, 1), false},
		{"not json", `<html>502</html>`, false},
		{"truncated", good[:len(good)-1], false},
		{"array", `[` + good + `]`, false},
		{"missing runId", strings.Replace(good, `"runId":"r"`, `"x":"r"`, 1), false},
		{"empty runId", strings.Replace(good, `"runId":"r"`, `"runId":""`, 1), false},
		{"runId number", strings.Replace(good, `"runId":"r"`, `"runId":1`, 1), false},
		{"run null and no job", `{"eventTime":"2026-01-01T00:00:00Z","run":null}`, false},
		{"eventTime number", `{"eventTime":1767225600000,"run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`, false},
		{"eventTime missing", `{"run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`, false},
		{"eventTime not RFC 3339", `{"eventTime":"2026-01-01 00:00:00","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`, false},
		{"eventTime without zone", `{"eventTime":"2026-01-01T00:00:00","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`, true}, // read as UTC, as Marquez does
		{"unknown eventType", strings.Replace(good, `"START"`, `"SUCCEEDED"`, 1), false},
		{"lowercase eventType", strings.Replace(good, `"START"`, `"start"`, 1), false},
		{"eventType number", strings.Replace(good, `"START"`, `3`, 1), false},
		{"job missing", `{"eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"}}`, false},
		{"job name number", `{"eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":7}}`, false},
		{"inputs object", `{"eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":"j"},"inputs":{"namespace":"n","name":"a"}}`, false},
		{"outputs strings", `{"eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":"j"},"outputs":["n/a"]}`, false},
		{"input without name", `{"eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"n"}]}`, false},
		{"dataset event without dataset name", `{"eventTime":"2026-01-01T00:00:00Z","dataset":{"namespace":"n"}}`, false},
		{"neither kind", `{"eventTime":"2026-01-01T00:00:00Z","producer":"x"}`, false},
		{"case matters in keys", strings.Replace(good, `"runId"`, `"RunId"`, 1), false},
		{"oversized", `{"eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":"j"},"pad":"` + strings.Repeat("x", MaxBytes) + `"}`, false},
		{"largest valid", func() string {
			s := `{"eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":"j"},"pad":"`
			return s + strings.Repeat("x", MaxBytes-len(s)-2) + `"}`
		}(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Valid([]byte(tt.data))
			if (err == nil) != tt.valid {
				t.Fatalf("Valid = %v, want valid %v", err, tt.valid)
			}
		})
	}
}

func TestTimesInMilliseconds(t *testing.T) {
	t.Parallel()
	rec := []byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T02:00:00.123999+02:00","run":{"runId":"r"},"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"n","name":"a"}]}`)
	g := Build([][]byte{rec}, Options{}).Lineage()
	if len(g.Edges) != 1 {
		t.Fatalf("edges = %d", len(g.Edges))
	}
	for _, e := range g.Edges {
		if want := time.Date(2026, 1, 1, 0, 0, 0, 123e6, time.UTC).UnixMilli(); e.FirstSeen != want || e.LastSeen != want {
			t.Fatalf("edge %+v, want times %d", e, want)
		}
	}
}

func TestIncrementalGraphIsASnapshot(t *testing.T) {
	t.Parallel()
	m := New(Options{})
	m.Add(runEv("START", "r", 0, job, []ds{dsA}, nil))
	before := m.Graph().Lineage()
	m.Add(runEv("COMPLETE", "r", 1, job, nil, []ds{dsB}))
	after := m.Graph().Lineage()
	if len(before.Edges) != 0 || len(after.Edges) != 3 || after.Events != 2 {
		t.Fatalf("before %d edges, after %d edges / %d events", len(before.Edges), len(after.Edges), after.Events)
	}
}

func TestCompareAndJSON(t *testing.T) {
	t.Parallel()
	recs := [][]byte{runEv("COMPLETE", "r", 1, job, []ds{dsA}, []ds{dsB}), datasetEv(2, dsC)}
	want := Build(recs, Options{})
	data, err := want.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Graph
	if err := back.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	if d := Compare(want, &back); !d.Empty() || back.Events != 2 {
		t.Fatalf("JSON round trip: %s", d)
	}
	// Drop one edge, add one, change one.
	got := Build(recs, Options{})
	var dropped, changed string
	for id, e := range got.Edges {
		switch e.Label {
		case lineage.EdgeInputTo:
			delete(got.Edges, id)
			dropped = id
		case lineage.EdgeOutputs:
			e.LastRunID = "other"
			got.Edges[id] = e
			changed = id
		}
	}
	extra := lineage.NewEdge(lineage.EdgeDerives, "x", "y", 1, 1, "")
	got.Edges[extra.ID] = extra
	d := Compare(want, got)
	if len(d.Missing) != 1 || d.Missing[0] != dropped || len(d.Extra) != 1 || d.Extra[0] != extra.ID ||
		len(d.Mismatched) != 1 || !strings.HasPrefix(d.Mismatched[0], changed) || !strings.Contains(d.Mismatched[0], "lastRunId") {
		t.Fatalf("diff:\n%s", d)
	}
	if d.Empty() || !strings.Contains(d.String(), "missing (1)") {
		t.Fatalf("String() = %s", d)
	}
}
