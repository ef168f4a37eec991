package processor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

func hostileEvent(typ, when, runID, job string, ins, outs []string) []byte {
	list := func(ns []string) string {
		q := make([]string, len(ns))
		for i, n := range ns {
			q[i] = `{"namespace":"ns","name":"` + n + `"}`
		}
		return "[" + strings.Join(q, ",") + "]"
	}
	return []byte(fmt.Sprintf(`{"eventType":%q,"eventTime":%q,"run":{"runId":%q},"job":{"namespace":"ns","name":%q},"inputs":%s,"outputs":%s}`,
		typ, when, runID, job, list(ins), list(outs)))
}

// TestForeignJobEventNeverChangesAnotherJobsLineage: a producer that
// learned team_b's run id sends a FAIL (which would suppress the run's
// lineage) and a COMPLETE naming its own datasets (which would add them
// to team_b_job) under its own job: both are run_job_mismatch dead
// letters, team_b's run commits with its own datasets only, and the
// graph is the reference model's.
func TestForeignJobEventNeverChangesAnotherJobsLineage(t *testing.T) {
	recs := [][]byte{
		hostileEvent("START", "2026-01-01T00:00:00Z", "run-b", "team_b_job", []string{"b_in"}, nil),
		hostileEvent("FAIL", "2026-01-01T00:00:01Z", "run-b", "evil_job", nil, nil),
		hostileEvent("COMPLETE", "2026-01-01T00:00:02Z", "run-b", "evil_job", []string{"evil_in"}, []string{"evil_out"}),
		hostileEvent("COMPLETE", "2026-01-01T00:00:03Z", "run-b", "team_b_job", nil, []string{"b_out"}),
	}
	for _, runs := range []semantics.RunRecords{semantics.RunsFailed, semantics.RunsAll} {
		t.Run("runs="+string(runs), func(t *testing.T) {
			got, st := runRecords(t, recs, runs)
			want := refmodel.Build(recs, refmodel.Options{Runs: string(runs)})
			if d := refmodelCompare(want, got); d != "" {
				t.Fatalf("graph differs from the reference:\n%s", d)
			}
			if n := st.Invalid()[lineage.ReasonRunJobMismatch]; n != 2 || want.Invalid != 2 {
				t.Errorf("run_job_mismatch %d, reference model invalid %d; want 2 and 2", n, want.Invalid)
			}
			for id, v := range got.Vertices {
				if strings.Contains(id, "evil") {
					t.Errorf("the attacker's %s %q is in the graph", v.Label, id)
				}
			}
			ds := func(n string) string { return lineage.DatasetID(lineage.Dataset{Namespace: "ns", Name: n}) }
			job := lineage.JobID(lineage.Job{Namespace: "ns", Name: "team_b_job"})
			for _, e := range []lineage.Edge{lineage.NewEdge(lineage.EdgeInputTo, ds("b_in"), job, 0, 0, ""), lineage.NewEdge(lineage.EdgeOutputs, job, ds("b_out"), 0, 0, "")} {
				if _, ok := got.Edges[e.ID]; !ok {
					t.Errorf("team_b's %s edge is missing: the foreign FAIL suppressed its lineage", e.Label)
				}
			}
		})
	}
}

// TestFarFutureEventNeitherFreezesPropertiesNorPinsCheckpoint: with
// -time-source event, a COMPLETE dated 9999 is a dead letter
// (event_time_out_of_range) and changes no property; one dated 23 h
// ahead (inside the bound) is written but bucketed at its arrival, so it
// neither holds a window open nor makes later records late, and the
// checkpoint passes every record.
func TestFarFutureEventNeitherFreezesPropertiesNorPinsCheckpoint(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	clk := &fakeClock{now: t0}
	stats := &Stats{}
	cfg := testConfig(t, clk, stats)
	cfg.Window.TimeSource = TimeEvent
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	mem := sink.NewMemory()
	s, err := NewShard("shardId-000000000001", db, mem, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if err := s.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
	recs := [][]byte{
		hostileEvent("COMPLETE", "9999-12-31T23:59:59Z", "r-9999", "j", []string{"in"}, []string{"out"}),
		hostileEvent("COMPLETE", "0000-01-01T00:00:00Z", "r-0000", "j", []string{"in"}, []string{"out"}),
		hostileEvent("COMPLETE", at(23*time.Hour), "r-23h", "j2", []string{"in2"}, []string{"out2"}),
		hostileEvent("COMPLETE", at(time.Second), "r-now", "j", []string{"in"}, []string{"out"}),
	}
	for i, d := range recs {
		if err := s.Process(ctx, []Record{{Seq: seqOf(i + 1), Arrival: clk.Now(), Data: d}}, false); err != nil {
			t.Fatal(err)
		}
	}
	// A minute later, one more record: every earlier window is due.
	clk.Set(t0.Add(time.Minute))
	last := hostileEvent("COMPLETE", at(time.Minute), "r-later", "j3", []string{"in3"}, []string{"out3"})
	if err := s.Process(ctx, []Record{{Seq: seqOf(len(recs) + 1), Arrival: clk.Now(), Data: last}}, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.drain.waitEmpty(ctx); err != nil {
		t.Fatal(err)
	}
	if n := stats.Invalid()[lineage.ReasonTimeOutOfRange]; n != 2 {
		t.Errorf("event_time_out_of_range %d, want 2 (9999 and 0000)", n)
	}
	if n := stats.Late.Load(); n != 0 {
		t.Errorf("%d late records after an event dated 23 h ahead, want 0", n)
	}
	if seq, _ := s.Checkpoint(); seq != seqOf(len(recs)) && seq != seqOf(len(recs)+1) {
		t.Errorf("checkpoint %s, want at least %s: a future record pins it", seq, seqOf(len(recs)))
	}
	g := graphOf(mem)
	e := lineage.NewEdge(lineage.EdgeOutputs, lineage.JobID(lineage.Job{Namespace: "ns", Name: "j"}),
		lineage.DatasetID(lineage.Dataset{Namespace: "ns", Name: "out"}), 0, 0, "")
	got, ok := g.Edges[e.ID]
	if !ok {
		t.Fatal("the OUTPUTS edge of the run dated now is missing")
	}
	if got.LastRunID != "r-now" || got.LastSeen != t0.Add(time.Second).UnixMilli() {
		t.Errorf("OUTPUTS lastRunId %q lastSeen %d, want r-now at %d: the 9999 event froze it", got.LastRunID, got.LastSeen, t0.Add(time.Second).UnixMilli())
	}
}

// TestNFCOneDatasetInvalidUTF8DeadLetters (issue 26, item 12): NFC and NFD
// spellings of café are one dataset (counted as normalised); names with
// different invalid bytes are two dead letters, not one collapsed
// dataset; the graph is the reference model's.
func TestNFCOneDatasetInvalidUTF8DeadLetters(t *testing.T) {
	raw := func(typ, runID, job, out string) []byte {
		return hostileEvent(typ, "2026-01-01T00:00:00Z", runID, job, []string{"in"}, []string{out})
	}
	recs := [][]byte{
		raw("COMPLETE", "r-nfc", "j1", "caf\u00e9"),
		raw("COMPLETE", "r-nfd", "j2", "cafe\u0301"),
		raw("COMPLETE", "r-ff", "j3", "bad\xff"),
		raw("COMPLETE", "r-fe", "j4", "bad\xfe"),
	}
	got, st := runRecords(t, recs, semantics.RunsNone)
	want := refmodel.Build(recs, refmodel.Options{Runs: string(semantics.RunsNone)})
	if d := refmodelCompare(want, got); d != "" {
		t.Fatalf("graph differs from the reference:\n%s", d)
	}
	if n := st.Invalid()[lineage.ReasonInvalidUTF8]; n != 2 || want.Invalid != 2 {
		t.Errorf("invalid_utf8 %d, reference model invalid %d; want 2 and 2", n, want.Invalid)
	}
	if n := st.NamesNormalized.Load(); n != 1 {
		t.Errorf("names normalised %d, want 1", n)
	}
	cafes := 0
	for _, v := range got.Vertices {
		if v.Label == lineage.LabelDataset && strings.HasPrefix(v.Name, "caf") {
			cafes++
		}
		if strings.HasPrefix(v.Name, "bad") {
			t.Errorf("dataset %q from an invalid UTF-8 name is in the graph", v.Name)
		}
	}
	if cafes != 1 {
		t.Errorf("%d café datasets, want 1", cafes)
	}
}
