package source_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// straddleRuns returns records of runs built to straddle a split: START
// with the inputs before it and COMPLETE with the outputs only after it;
// a run FAILed before it whose COMPLETE comes after (no edges ever); a
// run committed before it whose later RUNNING adds an input. Keys spread
// over both halves of the hash range.
func straddleRuns(n int) (pre, post []gen.Record) {
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("run:straddle/job%d", i)
		ev := func(typ, run, ins, outs string) gen.Record {
			return gen.Record{PartitionKey: key, Data: []byte(fmt.Sprintf(`{"eventType":%q,"eventTime":"2026-01-01T00:00:0%dZ","run":{"runId":"%s%d"},`+
				`"job":{"namespace":"straddle","name":"job%d"},"inputs":[%s],"outputs":[%s],"producer":"p",`+
				`"schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`, typ, len(typ)%10, run, i, i, ins, outs))}
		}
		ds := func(name string) string { return fmt.Sprintf(`{"namespace":"straddle","name":"%s%d"}`, name, i) }
		pre = append(pre, ev("START", "open", ds("in"), ""),
			ev("START", "failed", ds("fin"), ""), ev("FAIL", "failed", "", ""),
			ev("COMPLETE", "done", ds("din"), ds("dout")))
		post = append(post, ev("COMPLETE", "open", "", ds("out")),
			ev("COMPLETE", "failed", "", ds("fout")),
			ev("RUNNING", "done", ds("dextra"), ""))
	}
	return pre, post
}

// straddling counts the runs with an event on both sides of the split
// whose first terminal event (if any) comes after it.
func straddling(before, after [][]byte) int {
	type ev struct {
		EventType string `json:"eventType"`
		Run       struct {
			RunID string `json:"runId"`
		} `json:"run"`
	}
	open := map[string]bool{}
	for _, d := range before {
		var e ev
		if json.Unmarshal(d, &e) != nil || e.Run.RunID == "" {
			continue
		}
		switch e.EventType {
		case "COMPLETE", "FAIL", "ABORT":
			open[e.Run.RunID] = false
		default:
			if _, seen := open[e.Run.RunID]; !seen {
				open[e.Run.RunID] = true
			}
		}
	}
	n := map[string]bool{}
	for _, d := range after {
		var e ev
		if json.Unmarshal(d, &e) == nil && open[e.Run.RunID] {
			n[e.Run.RunID] = true
		}
	}
	return len(n)
}

// TestKCLSplitHandoff: one worker, a 1-shard stream. The first part of a
// generated stream (many runs START there, plus runs built to straddle)
// is replayed and processed; the shard is split at its hash midpoint; the
// rest is replayed (the COMPLETEs of the open runs land on the children).
// The parent hands its runs off through DynamoDB at SHARD_END, the
// children load them before their first record, and the file sink's graph
// equals refmodel.Build over the whole stream exactly. Subtest run-store:
// the same with -run-store dynamodb: the parent writes no handoff, the
// children load the runs they meet from the run store, same graph.
func TestKCLSplitHandoff(t *testing.T) {
	t.Run("handoff", func(t *testing.T) { testKCLSplit(t, false) })
	t.Run("run-store", func(t *testing.T) { testKCLSplit(t, true) })
}

func testKCLSplit(t *testing.T, runStore bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	name := "kclsplit"
	args := []string{"-run-store", "none"} // the opt-out: the parent hands its runs off
	if runStore {
		name, args = "kclsplit-store", nil // the default: -run-store dynamodb
	}
	h := harness.ForTest(t, name)
	events := envInt(t, "LINEAGEFLOW_KCL_SPLIT_EVENTS", 4000)
	gr := gen.Generate(gen.Config{Seed: 44, Events: events, Pipelines: 32})
	cut := len(gr) / 2
	pre, post := straddleRuns(8)
	all := append(append(append(append([]gen.Record{}, gr[:cut]...), pre...), gr[cut:]...), post...)
	cut += len(pre)
	recs, data := harness.Generated(all)
	want := refmodel.Build(data, refmodel.Options{})
	n := straddling(data[:cut], data[cut:])
	if n == 0 {
		t.Fatal("no run straddles the split: the test proves nothing")
	}
	t.Logf("%d records, %d before the split; %d runs straddle it; %d edges expected", len(recs), cut, n, len(want.Edges))

	if err := h.CreateStream(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", FailoverTime: 4 * time.Second, ShardSync: 500 * time.Millisecond, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Replay(ctx, recs[:cut], 0); err != nil {
		t.Fatal(err)
	}
	waitAllEdges(ctx, t, h, refmodel.Build(data[:cut], refmodel.Options{}), 90*time.Second)
	parent, err := h.SplitShard(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Replay(ctx, recs[cut:], 0); err != nil {
		t.Fatal(err)
	}
	waitAllEdges(ctx, t, h, want, 2*time.Minute)
	got, st := sinkGraph(t, h)
	if d := refmodel.Compare(want, got); !d.Empty() {
		t.Fatalf("sink graph differs from the reference model:\n%s", d)
	}
	ls, err := h.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	children := 0
	for _, l := range ls {
		if l.ShardID == parent && l.Checkpoint != "SHARD_END" {
			t.Errorf("parent %s checkpoint %q, want SHARD_END", parent, l.Checkpoint)
		}
		if l.ShardID != parent {
			children++
		}
	}
	if children != 2 {
		t.Errorf("lease table %+v: want the parent and 2 children", ls)
	}
	if runStore {
		if c := strings.Count(w.Log(), "shard end: runs are in the run store (no handoff)"); c != 1 {
			t.Errorf("%d parents ended without a handoff, want 1", c)
		}
		if c := strings.Count(w.Log(), "handoff: runs loaded from the parent"); c != 0 {
			t.Errorf("%d children loaded a handoff with the run store, want 0", c)
		}
		if err := h.WaitFor(ctx, 10*time.Second, "a stats line with the run store hits", func() (bool, error) {
			return w.Stats()["run_store_hits"] > 0, nil
		}); err != nil {
			t.Error(err)
		}
	} else if c := strings.Count(w.Log(), "handoff: runs loaded from the parent"); c != 2 {
		t.Errorf("%d children loaded the handoff, want 2", c)
	}
	t.Logf("exact match: %d vertices, %d edges; %d batches", len(got.Vertices), len(got.Edges), st.Batches)
	if err := w.Stop(30 * time.Second); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
}
