package processor

import (
	"bytes"
	"testing"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
)

// codecRuns are runs of every shape the codec writes.
func codecRuns(ids *semantics.IDs) []*run {
	j := lineage.Job{Namespace: "ns", Name: "etl"}
	in, out := lineage.Dataset{Namespace: "s3://raw", Name: "in"}, lineage.Dataset{Namespace: "s3://mart", Name: "out"}
	open := &run{Run: semantics.StartRun("r1", j, ids.Job(j)), pin: "49590338271490256608559692538361571095921575989136588898", lastArrival: 1700000000000}
	open.Inputs = []semantics.DatasetRef{ids.Ref(in)}
	open.RV = semantics.RunVertexState{HasStart: true, StartMin: 10, TMax: 20}
	open.RV.Props.Add(lineage.StrConst(lineage.PropRunID, "r1"), lineage.NumMin(lineage.PropStartedAt, 10))

	done := &run{Run: semantics.StartRun("r2", j, ids.Job(j)), handoff: true, lastArrival: 5}
	done.Status, done.HasC, done.MinC, done.MaxC = semantics.StatusCommitted, true, -3, 1<<40
	done.Inputs, done.Outputs = []semantics.DatasetRef{ids.Ref(in)}, []semantics.DatasetRef{ids.Ref(out)}
	done.Cols = []semantics.ColRef{ids.Col(lineage.FieldEdge{In: in, InField: "a", Out: out, OutField: "b", TransformationType: "DIRECT"}, 10)}
	done.Explicit, done.Pairs = true, []semantics.PairRef{ids.Pair(lineage.DatasetPair{In: in, Out: out})}

	closed := &run{Run: semantics.StartRun("r3", j, ids.Job(j))}
	closed.Status = semantics.StatusClosed
	closed.RV = semantics.RunVertexState{HasStart: true, HasEnd: true, StartMin: 1, EndMax: 9, TMax: 9,
		Reads: []semantics.DatasetRef{ids.Ref(in)}, Writes: []semantics.DatasetRef{ids.Ref(out)}}

	streaming := &run{Run: semantics.StartRun("r4", j, ids.Job(j)), pin: "7"}
	streaming.Status = semantics.StatusStreaming
	return []*run{open, done, closed, streaming}
}

// TestRunCodec: decode(append(r)) gives r back.
func TestRunCodec(t *testing.T) {
	t.Parallel()
	ids := semantics.NewIDs()
	for _, r := range codecRuns(ids) {
		v := appendRun(nil, r)
		got, err := decodeRun(r.ID, v, ids)
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		if got.ID != r.ID || got.Status != r.Status || got.Job != r.Job || got.JobID != r.JobID || got.pin != r.pin ||
			got.handoff != r.handoff || got.lastArrival != r.lastArrival || got.MinC != r.MinC || got.MaxC != r.MaxC ||
			len(got.Inputs) != len(r.Inputs) || len(got.Outputs) != len(r.Outputs) || len(got.Cols) != len(r.Cols) ||
			len(got.RV.Reads) != len(r.RV.Reads) || got.RV.EndMax != r.RV.EndMax ||
			got.Explicit != r.Explicit || len(got.Pairs) != len(r.Pairs) {
			t.Errorf("%s: decoded %+v, want %+v", r.ID, got, r)
		}
		for i := range r.Cols {
			// The pair's transformation is kept as its properties only.
			want := r.Cols[i]
			want.E.TransformationType, want.E.TransformationDescription = "", ""
			if got.Cols[i] != want || want.Props == "" {
				t.Errorf("%s: pair %d = %+v, want %+v", r.ID, i, got.Cols[i], r.Cols[i])
			}
		}
		for i := range r.Pairs {
			if got.Pairs[i] != r.Pairs[i] {
				t.Errorf("%s: explicit pair %d = %+v, want %+v", r.ID, i, got.Pairs[i], r.Pairs[i])
			}
		}
		if again := appendRun(nil, got); !bytes.Equal(again, v) {
			t.Errorf("%s: re-encoded differs", r.ID)
		}
		if _, err := decodeRun(r.ID, v[:1], ids); err == nil {
			t.Errorf("%s: a 1-byte prefix decoded", r.ID)
		}
	}
}

// FuzzRunCodec: decoding any bytes never panics, and what decodes
// encodes to a value that decodes to the same encoding.
func FuzzRunCodec(f *testing.F) {
	ids := semantics.NewIDs()
	for _, r := range codecRuns(ids) {
		f.Add(appendRun(nil, r))
	}
	f.Add([]byte{runV1, byte(semantics.StatusOpen)})
	f.Add([]byte{runV1Handoff, 9})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ids := semantics.NewIDs()
		r, err := decodeRun("r", b, ids)
		if err != nil {
			return
		}
		v := appendRun(nil, r)
		r2, err := decodeRun("r", v, ids)
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
		if v2 := appendRun(nil, r2); !bytes.Equal(v, v2) {
			t.Fatalf("round trip differs:\n%x\n%x", v, v2)
		}
	})
}
