package processor

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// waitUntil polls cond until it holds, failing the test after 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// flinkTemplates returns the Flink integration's expected START (it says
// jobType.processingType STREAMING) and RUNNING (no jobType facet) of job
// flink_job_namespace/flink_examples_stateful: testdata/real lines 131
// and 132.
func flinkTemplates(t testing.TB) (start, running []byte) {
	data, err := os.ReadFile("../testdata/real/events.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	recs := refmodel.SplitNDJSON(data)
	start, running = recs[130], recs[131]
	if !bytes.Contains(start, []byte(`"processingType":"STREAMING"`)) || !bytes.Contains(running, []byte(`"eventType":"RUNNING"`)) {
		t.Fatal("testdata/real lines 131-132 are not the Flink stateful START and RUNNING")
	}
	return start, running
}

var (
	flinkIn1 = lineage.Dataset{Namespace: "kafka://kafka-cluster-prod:9092", Name: "io.openlineage.flink.kafka.input1"}
	flinkOut = lineage.Dataset{Namespace: "kafka://kafka-cluster-prod:9092", Name: "io.openlineage.flink.kafka.output"}
)

// streamEvent is a hand-written RunEvent whose job says processingType pt
// ("" for no jobType facet).
func streamEvent(typ, runID string, sec int, pt string, in, out []string) []byte {
	list := func(names []string) string {
		s := "["
		for i, n := range names {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf(`{"namespace":"kafka://b","name":%q}`, n)
		}
		return s + "]"
	}
	facets := ""
	if pt != "" {
		facets = fmt.Sprintf(`,"facets":{"jobType":{"processingType":%q,"integration":"FLINK","jobType":"JOB"}}`, pt)
	}
	return []byte(fmt.Sprintf(`{"eventType":%q,"eventTime":"2026-01-01T00:%02d:%02dZ","run":{"runId":%q},"job":{"namespace":"flink","name":"sessionize"%s},"inputs":%s,"outputs":%s}`,
		typ, sec/60, sec%60, runID, facets, list(in), list(out)))
}

// TestStreamingRunsMatchReference: streaming runs (the jobType facet says
// STREAMING on some of their events) give exactly the reference model's
// graph in every -runs mode: committed on START/RUNNING, stopped (not
// retracted) by a FAIL/ABORT, batch rules after a COMPLETE, never
// streaming when the marker comes with a terminal event only.
func TestStreamingRunsMatchReference(t *testing.T) {
	const S = "STREAMING"
	start, running := flinkTemplates(t)
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string][][]byte{
		"START says it, RUNNINGs do not (Flink)": {
			refmodel.FillTemplate(start, "f1", t0),
			refmodel.FillTemplate(running, "f1", t0.Add(time.Minute)),
			refmodel.FillTemplate(running, "f1", t0.Add(2*time.Minute)),
		},
		"a RUNNING says it first": {
			streamEvent("START", "s1", 1, "", []string{"a"}, nil),
			streamEvent("RUNNING", "s1", 3, S, nil, []string{"b"}),
			streamEvent("RUNNING", "s1", 7, "", []string{"c"}, nil),
		},
		"FAIL after commits": {
			streamEvent("START", "s1", 0, S, []string{"a"}, []string{"b"}),
			streamEvent("RUNNING", "s1", 2, S, nil, nil),
			streamEvent("FAIL", "s1", 3, S, []string{"d"}, []string{"c"}),
			streamEvent("RUNNING", "s1", 4, S, []string{"e"}, nil),
		},
		"ABORT after commits": {
			streamEvent("START", "s1", 0, S, []string{"a"}, []string{"b"}),
			streamEvent("ABORT", "s1", 3, "", nil, []string{"c"}),
		},
		"COMPLETE ends it, a later FAIL changes nothing": {
			streamEvent("START", "s1", 0, S, []string{"a"}, []string{"b"}),
			streamEvent("COMPLETE", "s1", 4, S, nil, []string{"c"}),
			streamEvent("RUNNING", "s1", 6, S, []string{"d"}, nil),
			streamEvent("FAIL", "s1", 8, S, nil, []string{"e"}),
		},
		"marker first on the FAIL": {
			streamEvent("START", "s1", 0, "", []string{"a"}, []string{"b"}),
			streamEvent("FAIL", "s1", 1, S, nil, nil),
		},
		"marker first on the COMPLETE": {
			streamEvent("START", "s1", 0, "", []string{"a"}, nil),
			streamEvent("COMPLETE", "s1", 2, S, nil, []string{"b"}),
		},
		"lower case, and a BATCH run beside it": {
			streamEvent("START", "s1", 0, "streaming", []string{"a"}, []string{"b"}),
			streamEvent("START", "b1", 0, "BATCH", []string{"c"}, []string{"d"}),
			streamEvent("RUNNING", "b1", 9, "BATCH", nil, nil),
		},
	}
	for name, recs := range cases {
		for _, runs := range []semantics.RunRecords{semantics.RunsFailed, semantics.RunsAll, semantics.RunsNone} {
			t.Run(name+"/runs="+string(runs), func(t *testing.T) {
				got, st := runRecords(t, recs, runs)
				want := refmodel.Build(recs, refmodel.Options{Runs: string(runs)})
				if d := refmodelCompare(want, got); d != "" {
					t.Fatalf("graph differs from the reference:\n%s", d)
				}
				if n := st.InvalidTotal(); n != 0 {
					t.Errorf("%d dead letters", n)
				}
			})
		}
	}
	// The cases give lineage where they must: the Flink run's edges.
	got, _ := runRecords(t, cases["START says it, RUNNINGs do not (Flink)"], semantics.RunsFailed)
	e, ok := got.Edges[lineage.EdgeID(lineage.EdgeDerives, lineage.DatasetID(flinkIn1), lineage.DatasetID(flinkOut))]
	if !ok || e.FirstSeen != t0.UnixMilli() || e.LastSeen != t0.Add(2*time.Minute).UnixMilli() || e.LastRunID != "f1" {
		t.Fatalf("Flink DERIVES input1 -> output: %+v (present %v), want stamped by START..last RUNNING, run f1", e, ok)
	}
}

// TestStreamingRunFreesTheCheckpoint is issue 12's second "done when"
// point at the processor: the Flink stateful job's START (it says
// STREAMING), then a RUNNING every 2 s (arrival and eventTime) for 3x the
// run timeout. Its edges are in the sink once the START's window seals
// (within one window and its lateness of the START); after every record
// the checkpoint (once the sink acknowledged what sealed) is within a
// window plus lateness of the newest record; the run never expires; a
// FAIL then neither retracts nor adds a lineage edge. The same stream with
// processingType BATCH holds the checkpoint before its START throughout
// (the control: what the test would see without streaming semantics).
func TestStreamingRunFreesTheCheckpoint(t *testing.T) {
	for _, pt := range []string{"STREAMING", "BATCH"} {
		t.Run(pt, func(t *testing.T) { streamingCheckpoint(t, pt) })
	}
}

func streamingCheckpoint(t *testing.T, pt string) {
	start, running := flinkTemplates(t)
	start = bytes.Replace(start, []byte(`"processingType":"STREAMING"`), []byte(`"processingType":"`+pt+`"`), 1)
	const runID = "0193f000-0000-7000-8000-00000000f11c"
	const runTimeout = 2 * time.Minute
	win := 10 * time.Second
	lateness := 500 * time.Millisecond

	t0 := time.Date(2026, 1, 1, 6, 0, 0, 0, time.UTC)
	clk := &fakeClock{now: t0}
	stats := &Stats{}
	cfg := testConfig(t, clk, stats)
	cfg.Semantics.RunTimeout = runTimeout
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

	var recs []Record
	var data [][]byte
	kcl := &kclStore{}
	// feed processes one record arriving (and stamped) at t0+at, with the
	// shard caught up (the watermark follows the clock).
	feed := func(d []byte, at time.Duration) {
		t.Helper()
		clk.Set(t0.Add(at))
		r := Record{Seq: seqOf(len(recs) + 1), Arrival: t0.Add(at), Data: d}
		recs, data = append(recs, r), append(data, d)
		if err := s.Process(ctx, []Record{r}, true); err != nil {
			t.Fatal(err)
		}
	}
	// age is how far the first record after the KCL checkpoint is behind
	// the newest one: what a restart would replay.
	age := func() time.Duration {
		last := recs[len(recs)-1].Arrival
		for _, r := range recs {
			if kcl.seq == "" || checkpoint.CompareSeq(r.Seq, kcl.seq) > 0 {
				return last.Sub(r.Arrival)
			}
		}
		return 0
	}
	lineageEdges := func() map[string]lineage.Edge {
		out := map[string]lineage.Edge{}
		for _, e := range mem.Edges() {
			if refmodel.IsLineage(e.Label) || e.Label == lineage.EdgeColumnDerives {
				out[e.ID] = e
			}
		}
		return out
	}
	derives := lineage.EdgeID(lineage.EdgeDerives, lineage.DatasetID(flinkIn1), lineage.DatasetID(flinkOut))
	hasDerives := func() bool { _, ok := lineageEdges()[derives]; return ok }

	// Other traffic first, so that the START is not the shard's first record.
	feed([]byte(`{"eventTime":"2026-01-01T06:00:00Z","dataset":{"namespace":"kafka://other","name":"x"}}`), 0)
	startAt := 1500 * time.Millisecond
	feed(refmodel.FillTemplate(start, runID, t0.Add(startAt)), startAt)
	startSeq := recs[len(recs)-1].Seq
	startSealedBy := t0.Add(startAt).Truncate(win).Add(win + lateness) // the START's window seals once the clock passes this

	bound := win + lateness
	maxAge := time.Duration(0)
	end := 3 * runTimeout
	sawEdges := false
	lastAt := startAt
	for at := startAt + 2*time.Second; at <= end; at += 2 * time.Second {
		lastAt = at
		feed(refmodel.FillTemplate(running, runID, t0.Add(at)), at)
		if !sawEdges && !t0.Add(at).Before(startSealedBy) {
			sawEdges = true
			if pt == "STREAMING" {
				waitUntil(t, "the streaming run's edges after its START's window sealed", hasDerives)
			}
		}
		if pt == "STREAMING" {
			// The sink acknowledges asynchronously: wait until the
			// checkpoint has caught up with what sealed.
			waitUntil(t, fmt.Sprintf("checkpoint within %v at %v", bound, at), func() bool {
				kcl.take(s)
				return age() <= bound
			})
			maxAge = max(maxAge, age())
		}
	}
	if n := stats.RunsExpired.Load(); n != 0 {
		t.Errorf("%d runs expired: the RUNNING events come every 2 s", n)
	}
	if pt == "BATCH" {
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		kcl.take(s)
		if kcl.seq != "" && checkpoint.CompareSeq(kcl.seq, startSeq) >= 0 {
			t.Fatalf("batch run: checkpoint %s passed the open run's START %s", kcl.seq, startSeq)
		}
		if hasDerives() {
			t.Fatal("batch run without a terminal event gave lineage")
		}
		t.Logf("batch control: checkpoint held before the START for %v (age %v)", end-startAt, age())
		return
	}
	t.Logf("streaming: max checkpoint age %v over %v of RUNNING events (bound %v, run timeout %v)", maxAge, end-startAt, bound, runTimeout)

	// FAIL: nothing retracted, nothing added (it names a new output, and
	// a RUNNING after it a new input).
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	before := lineageEdges()
	if e := before[derives]; e.LastSeen != t0.Add(lastAt).UnixMilli() || e.FirstSeen != t0.Add(startAt).UnixMilli() {
		t.Fatalf("DERIVES %+v: want firstSeen at the START, lastSeen at the last RUNNING", e)
	}
	fail := bytes.Replace(running, []byte(`"eventType":"RUNNING"`), []byte(`"eventType":"FAIL"`), 1)
	fail = bytes.Replace(fail, []byte(`kafka.output"`), []byte(`kafka.output_after_fail"`), 1)
	feed(refmodel.FillTemplate(fail, runID, t0.Add(end+time.Second)), end+time.Second)
	after := bytes.Replace(running, []byte(`kafka.input1"`), []byte(`kafka.input_after_fail"`), 1)
	feed(refmodel.FillTemplate(after, runID, t0.Add(end+2*time.Second)), end+2*time.Second)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := lineageEdges()
	if len(got) != len(before) {
		t.Errorf("%d lineage edges after the FAIL, %d before", len(got), len(before))
	}
	for id, e := range before {
		if got[id] != e {
			t.Errorf("edge %s changed by the FAIL: %+v -> %+v", id, e, got[id])
		}
	}
	if d := refmodelCompare(refmodel.Build(data, refmodel.Options{}), graphOf(mem)); d != "" {
		t.Fatalf("graph differs from the reference:\n%s", d)
	}
	if rv, ok := graphOf(mem).Vertices[lineage.RunVertexID(runID)]; !ok {
		t.Error("the failed streaming run has no Run vertex (-runs failed)")
	} else if p, _ := rv.Props.Get(lineage.PropState); p.Str != "FAIL" {
		t.Errorf("Run state %q, want FAIL", p.Str)
	}
}

// TestStreamingRunSurvivesRestart: a streaming run's state (status,
// stamps, datasets) is in the barrier and comes back on a restart from
// the same disk: the run is still streaming (no pin), and its later
// events go on committing exactly as the reference model says.
func TestStreamingRunSurvivesRestart(t *testing.T) {
	const S = "STREAMING"
	recs := [][]byte{
		streamEvent("START", "s1", 0, S, []string{"a"}, []string{"b"}),
		streamEvent("RUNNING", "s1", 20, "", []string{"c"}, nil),
		streamEvent("RUNNING", "s1", 40, "", nil, []string{"d"}),
		streamEvent("FAIL", "s1", 60, "", []string{"e"}, nil),
	}
	t0 := time.Date(2026, 1, 1, 6, 0, 0, 0, time.UTC)
	clk := &fakeClock{now: t0}
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	mem := sink.NewMemory()
	ctx := ctxT(t)
	kcl := &kclStore{}
	start := func() *Shard {
		t.Helper()
		s, err := NewShard("shardId-000000000001", db, mem, testConfig(t, clk, &Stats{}))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx, kcl.seq); err != nil {
			t.Fatal(err)
		}
		return s
	}
	feed := func(s *Shard, i int) {
		t.Helper()
		at := t0.Add(time.Duration(i) * 20 * time.Second)
		clk.Set(at)
		if err := s.Process(ctx, []Record{{Seq: seqOf(i + 1), Arrival: at, Data: recs[i]}}, true); err != nil {
			t.Fatal(err)
		}
	}
	s := start()
	feed(s, 0)
	feed(s, 1)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	kcl.take(s)
	if kcl.seq != seqOf(2) {
		t.Fatalf("checkpoint %q after the streaming run's records were acknowledged, want %s (nothing pinned)", kcl.seq, seqOf(2))
	}
	s.Close()

	s = start()
	defer s.Close()
	if !s.Resumed() {
		t.Fatal("did not resume from the local state")
	}
	if r := s.runs.m["s1"]; r == nil || r.Status != semantics.StatusStreaming {
		t.Fatalf("run after the restart: %+v, want streaming", r)
	}
	if n := s.pins.Len(); n != 0 {
		t.Fatalf("%d pins after the restart: a streaming run holds none", n)
	}
	feed(s, 2)
	feed(s, 3)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if d := refmodelCompare(refmodel.Build(recs, refmodel.Options{}), graphOf(mem)); d != "" {
		t.Fatalf("graph differs from the reference:\n%s", d)
	}
}
