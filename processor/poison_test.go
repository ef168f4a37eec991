package processor

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/sink"
)

// TestRefusedRecordIsOneDeadLetter: records refused before decoding (a
// corrupt KPL aggregate, see source/deagg.go) between good ones become one
// dead letter each, with reason, sequence number and message; the good
// records give exactly the reference graph and the checkpoint reaches the
// last record.
func TestRefusedRecordIsOneDeadLetter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 7))
	st := makeStream(t, gen.Config{Seed: 3, Events: 300}, r)
	want := wantGraph(st)
	// Two refused records after the 100th and 200th sequence numbers, each
	// with a sequence number of its own.
	var recs []Record
	var refused []checkpoint.Pos
	n := 0
	for i, rec := range st.recs {
		if i > 0 && rec.Seq != st.recs[i-1].Seq {
			n++
		}
		rec.Seq = seqOf(2 * n) // room for a refused record between two
		recs = append(recs, rec)
		if (n == 100 || n == 200) && (i+1 == len(st.recs) || st.recs[i+1].Seq != st.recs[i].Seq) {
			bad := Record{Seq: seqOf(2*n + 1), Arrival: rec.Arrival, Data: []byte{0xF3, 0x89, 0x9A, 0xC2, 1, 2, 3},
				Refused: &lineage.DecodeError{Reason: lineage.ReasonKPLCorrupt, Msg: "kpl: corrupt aggregated record: test"}}
			recs = append(recs, bad)
			refused = append(refused, checkpoint.Pos{Seq: bad.Seq})
		}
	}
	if len(refused) != 2 {
		t.Fatalf("the stream is too short: %d refused records placed", len(refused))
	}

	clk := &fakeClock{now: recs[0].Arrival}
	stats := &Stats{}
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	mem := sink.NewMemory()
	s, err := NewShard("shardId-000000000001", db, mem, testConfig(t, clk, stats))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if err := s.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kcl := &kclStore{}
	for _, b := range batches(recs, r, 40) {
		clk.Set(b[len(b)-1].Arrival.Add(2 * time.Second))
		if err := s.Process(ctx, b, false); err != nil {
			t.Fatal(err)
		}
		kcl.take(s)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	kcl.take(s)

	if d := refmodelCompare(want, graphOf(mem)); d != "" {
		t.Fatalf("graph differs from the reference:\n%s", d)
	}
	if got := stats.Invalid()[lineage.ReasonKPLCorrupt]; got != 2 {
		t.Errorf("kpl_corrupt count %d, want 2", got)
	}
	var dls []checkpoint.DeadLetter
	err = checkpoint.ListDeadLetters(db, func(d checkpoint.DeadLetter) error {
		if d.Reason == string(lineage.ReasonKPLCorrupt) {
			dls = append(dls, d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 2 {
		t.Fatalf("%d kpl_corrupt dead letters, want 2: %+v", len(dls), dls)
	}
	for i, d := range dls {
		if d.Seq != refused[i].Seq || d.Message == "" || d.Size != 7 {
			t.Errorf("dead letter %d: %+v, want seq %s, a message, size 7", i, d, refused[i].Seq)
		}
	}
	// Only open runs hold the checkpoint back (as in TestRandomizedAgainstReference).
	wantCk := recs[len(recs)-1].Seq
	for _, run := range s.runs.m {
		if run.Status == semantics.StatusOpen && checkpoint.CompareSeq(run.pin, wantCk) < 0 {
			wantCk = run.pin
		}
	}
	if kcl.seq != wantCk {
		t.Errorf("final checkpoint %s, want %s", kcl.seq, wantCk)
	}
}
