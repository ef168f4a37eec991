package source_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/testkit/harness"
)

// edgeWrites counts, over the file sinks, how many times each edge was
// written (each acknowledged batch that holds it).
func edgeWrites(t *testing.T, paths []string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, p := range paths {
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var b sink.Batch
			if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
				continue // a torn last line: never acknowledged
			}
			for _, e := range b.Edges {
				n[e.ID]++
			}
		}
		f.Close()
	}
	return n
}

// TestRunStoreShardMove is the run store's done-when on the stand-ins
// (issue 12), with the default flags (issue 25: no -run-store given): run R STARTs (inputs A, B) on a shard; other traffic follows
// for several windows, which seal; the shard's KCL checkpoint in the lease
// table passes R's START (an open run no longer pins it) and reaches the
// last record. The worker is killed (SIGKILL) and its data directory
// deleted; a fresh worker takes the shard; R's COMPLETE (output C only)
// arrives. The sinks then hold A->job, B->job, job->C, A->C and B->C, each
// written exactly once, and the fresh worker read only the records after
// the last acknowledged window (its records counter: just the COMPLETE),
// loading R from the store (run_store_hits).
func TestRunStoreShardMove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "runstore-move")
	if err := h.CreateStream(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// No -run-store: the default (dynamodb) is the safe one (issue 25).
	args := []string{"-window", "1s", "-lateness", "500ms", "-idle-between-reads", "100ms"}
	w1, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Args: args})
	if err != nil {
		t.Fatal(err)
	}
	const runID = "01930000-0000-7000-8000-0000000000aa"
	ev := func(typ, ins, outs string) []byte {
		return []byte(`{"eventType":"` + typ + `","eventTime":"` + time.Now().UTC().Format(time.RFC3339Nano) + `","run":{"runId":"` + runID + `"},` +
			`"job":{"namespace":"move","name":"job"},"inputs":[` + ins + `],"outputs":[` + outs + `],` +
			`"producer":"p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`)
	}
	startSeq := putOne(ctx, t, h, runID, ev("START", `{"namespace":"move","name":"A"},{"namespace":"move","name":"B"}`, ""))
	// Other traffic, over several windows (1 s each): 5 s of it.
	var lastSeq string
	for i := 0; i < 25; i++ {
		d := fmt.Sprintf(`{"eventTime":"%s","dataset":{"namespace":"move","name":"other-%d"},"producer":"p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"}`,
			time.Now().UTC().Format(time.RFC3339Nano), i)
		lastSeq = putOne(ctx, t, h, fmt.Sprintf("other-%d", i), []byte(d))
		time.Sleep(200 * time.Millisecond) // the producer's pace, not synchronisation
	}
	err = h.WaitFor(ctx, 60*time.Second, "the KCL checkpoint to reach the last record (past R's START)", func() (bool, error) {
		if done, err := w1.Exited(); done {
			return false, fmt.Errorf("w1 exited: %w", err)
		}
		ls, err := h.Leases(ctx)
		if err != nil {
			return false, err
		}
		return len(ls) == 1 && isSeq(ls[0].Checkpoint) && checkpoint.CompareSeq(ls[0].Checkpoint, lastSeq) >= 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w1.Kill(); err != nil {
		t.Fatal(err)
	}
	ls, err := h.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := ls[0].Checkpoint
	if checkpoint.CompareSeq(ckpt, startSeq) <= 0 {
		t.Fatalf("checkpoint %s not past R's START %s", ckpt, startSeq)
	}
	if err := os.RemoveAll(w1.DataDir); err != nil {
		t.Fatal(err)
	}
	completeSeq := putOne(ctx, t, h, runID, ev("COMPLETE", "", `{"namespace":"move","name":"C"}`))
	w2, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w2", Args: args})
	if err != nil {
		t.Fatal(err)
	}

	ds := func(n string) string { return lineage.DatasetID(lineage.Dataset{Namespace: "move", Name: n}) }
	job := lineage.JobID(lineage.Job{Namespace: "move", Name: "job"})
	want := map[string]string{
		"A->job": lineage.EdgeID(lineage.EdgeInputTo, ds("A"), job),
		"B->job": lineage.EdgeID(lineage.EdgeInputTo, ds("B"), job),
		"job->C": lineage.EdgeID(lineage.EdgeOutputs, job, ds("C")),
		"A->C":   lineage.EdgeID(lineage.EdgeDerives, ds("A"), ds("C")),
		"B->C":   lineage.EdgeID(lineage.EdgeDerives, ds("B"), ds("C")),
	}
	err = h.WaitFor(ctx, 90*time.Second, "the fresh worker to checkpoint R's COMPLETE", func() (bool, error) {
		if done, err := w2.Exited(); done {
			return false, fmt.Errorf("w2 exited: %w", err)
		}
		ls, err := h.Leases(ctx)
		if err != nil {
			return false, err
		}
		return len(ls) == 1 && ls[0].AssignedTo == "w2" && checkpoint.CompareSeq(ls[0].Checkpoint, completeSeq) >= 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	writes := edgeWrites(t, h.SinkPaths())
	for name, id := range want {
		if writes[id] != 1 {
			t.Errorf("edge %s written %d times, want exactly once", name, writes[id])
		}
	}
	// The counters of w2's stats line (logged every second; wait for one
	// that shows the COMPLETE).
	var st map[string]int64
	err = h.WaitFor(ctx, 30*time.Second, "w2's stats line to count the COMPLETE", func() (bool, error) {
		st = w2.Stats()
		return st != nil && st["records"] >= 1 && st["outbox_acked"] >= 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st["records"] != 1 {
		t.Errorf("the fresh worker read %d records, want 1 (only R's COMPLETE: nothing before the last acknowledged window %s)", st["records"], ckpt)
	}
	if st["run_store_hits"] != 1 {
		t.Errorf("run_store_hits %d, want 1 (R loaded from the store)", st["run_store_hits"])
	}
	t.Logf("checkpoint at the kill %s (START %s); fresh worker: %v records, %v run store reads in %v calls, %v hits",
		ckpt, startSeq, st["records"], st["run_store_reads"], st["run_store_read_calls"], st["run_store_hits"])
}
