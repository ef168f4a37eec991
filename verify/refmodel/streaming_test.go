package refmodel

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/lineageflow/lineageflow/lineage"
)

// streamEv is runEv for a job whose jobType facet says processingType pt
// ("" for none).
func streamEv(typ, runID string, sec float64, j lineage.Job, pt string, in, out []ds) []byte {
	b := runEv(typ, runID, sec, j, in, out)
	if pt == "" {
		return b
	}
	old := fmt.Sprintf(`"job":{"namespace":%s,"name":%s}`, q(j.Namespace), q(j.Name))
	facet := fmt.Sprintf(`"job":{"namespace":%s,"name":%s,"facets":{"jobType":{"processingType":%s,"integration":"FLINK","jobType":"JOB"}}}`,
		q(j.Namespace), q(j.Name), q(pt))
	return bytes.Replace(b, []byte(old), []byte(facet), 1)
}

// streamingCases are event streams of streaming runs with the lineage
// edges each must give (DESIGN.md, Lineage semantics 4). The processor's
// tests (processor/streaming_test.go) replay the same kinds of stream.
func streamingCases() []struct {
	name    string
	records [][]byte
	want    []wantEdge
} {
	const r1 = "33333333-3333-4333-8333-333333333333"
	dsD := ds{Namespace: "kafka://broker", Name: "d"}
	dsE := ds{Namespace: "kafka://broker", Name: "e"}
	const S = "STREAMING"
	return []struct {
		name    string
		records [][]byte
		want    []wantEdge
	}{
		{
			name: "START says STREAMING: committed at once, every later event stamps (RUNNING without the facet too)",
			records: [][]byte{
				streamEv("START", r1, 0, job, S, []ds{dsA}, []ds{dsB}),
				streamEv("RUNNING", r1, 5, job, "", []ds{dsC}, nil),
				streamEv("RUNNING", r1, 9, job, "", nil, nil),
			},
			want: runEdges(job, []ds{dsA, dsC}, []ds{dsB}, 0, 9, r1),
		},
		{
			name: "STREAMING first said by a RUNNING: the events before it stamp too",
			records: [][]byte{
				streamEv("START", r1, 1, job, "", []ds{dsA}, nil),
				streamEv("RUNNING", r1, 3, job, S, nil, []ds{dsB}),
				streamEv("RUNNING", r1, 7, job, "", nil, nil),
			},
			want: runEdges(job, []ds{dsA}, []ds{dsB}, 1, 7, r1),
		},
		{
			name: "FAIL after commits retracts nothing and adds nothing",
			records: [][]byte{
				streamEv("START", r1, 0, job, S, []ds{dsA}, []ds{dsB}),
				streamEv("RUNNING", r1, 2, job, S, nil, nil),
				streamEv("FAIL", r1, 3, job, S, []ds{dsD}, []ds{dsC}),
				streamEv("RUNNING", r1, 4, job, S, []ds{dsE}, nil),
			},
			want: runEdges(job, []ds{dsA}, []ds{dsB}, 0, 2, r1),
		},
		{
			name: "ABORT likewise",
			records: [][]byte{
				streamEv("START", r1, 0, job, S, []ds{dsA}, []ds{dsB}),
				streamEv("ABORT", r1, 3, job, "", nil, []ds{dsC}),
			},
			want: runEdges(job, []ds{dsA}, []ds{dsB}, 0, 0, r1),
		},
		{
			name: "COMPLETE ends it: from then on batch rules (COMPLETE stamps; later datasets, a later FAIL's too, join)",
			records: [][]byte{
				streamEv("START", r1, 0, job, S, []ds{dsA}, []ds{dsB}),
				streamEv("COMPLETE", r1, 4, job, S, nil, []ds{dsC}),
				streamEv("RUNNING", r1, 6, job, S, []ds{dsD}, nil),
				streamEv("FAIL", r1, 8, job, S, nil, []ds{dsE}),
			},
			want: runEdges(job, []ds{dsA, dsD}, []ds{dsB, dsC, dsE}, 0, 4, r1),
		},
		{
			name: "STREAMING said first by the FAIL: the run failed before it was streaming, nothing",
			records: [][]byte{
				streamEv("START", r1, 0, job, "", []ds{dsA}, []ds{dsB}),
				streamEv("FAIL", r1, 1, job, S, nil, nil),
			},
		},
		{
			name: "STREAMING said first by the COMPLETE: a batch commit, stamped by it alone",
			records: [][]byte{
				streamEv("START", r1, 0, job, "", []ds{dsA}, nil),
				streamEv("COMPLETE", r1, 2, job, S, nil, []ds{dsB}),
			},
			want: runEdges(job, []ds{dsA}, []ds{dsB}, 2, 2, r1),
		},
		{
			name: "processingType compared ignoring case",
			records: [][]byte{
				streamEv("START", r1, 0, job, "streaming", []ds{dsA}, []ds{dsB}),
			},
			want: runEdges(job, []ds{dsA}, []ds{dsB}, 0, 0, r1),
		},
		{
			name: "BATCH is not streaming: no terminal event, no edge",
			records: [][]byte{
				streamEv("START", r1, 0, job, "BATCH", []ds{dsA}, []ds{dsB}),
				streamEv("RUNNING", r1, 1, job, "BATCH", nil, nil),
			},
		},
	}
}

func TestStreamingRuns(t *testing.T) {
	t.Parallel()
	for _, c := range streamingCases() {
		t.Run(c.name, func(t *testing.T) {
			got := Build(c.records, Options{}).Lineage()
			want := graphOf(c.want)
			if v, ok := got.Vertices[jobV.ID]; ok {
				want.Vertices[jobV.ID] = v // with the jobType facet's properties, edges or not
			}
			if d := Compare(want, got); !d.Empty() {
				t.Errorf("graph differs:\n%s", d)
			}
			// Policy any ignores processingType: every event commits.
			anyG := Build(c.records, Options{Policy: "any"})
			if len(c.records) > 0 && len(anyG.Lineage().Edges) == 0 && len(c.want) > 0 {
				t.Error("policy any gives no edge")
			}
		})
	}
}
