package source_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// onlyPrefix keeps the vertices whose namespace (a Run's jobNamespace)
// starts with ns, the edges that touch one of them and their endpoints.
func onlyPrefix(s *graph.Snapshot, ns string) *graph.Snapshot {
	out := &graph.Snapshot{}
	keep := map[string]bool{}
	for _, v := range s.Vertices {
		for _, k := range []string{"namespace", lineage.PropJobNamespace} {
			if vs := v.Props[k]; len(vs) > 0 && strings.HasPrefix(fmt.Sprint(vs[0]), ns) {
				keep[v.ID] = true
				out.Vertices = append(out.Vertices, v)
				break
			}
		}
	}
	ends := map[string]bool{}
	for _, e := range s.Edges {
		if keep[e.OutV] || keep[e.InV] {
			out.Edges = append(out.Edges, e)
			ends[e.OutV], ends[e.InV] = true, true
		}
	}
	// An endpoint without a namespace of its own (a parent Run that holds
	// only its runId).
	for _, v := range s.Vertices {
		if ends[v.ID] && !keep[v.ID] {
			out.Vertices = append(out.Vertices, v)
		}
	}
	return out
}

// TestStreamingRunOnStandins is issue 12's streaming point on the real
// stand-ins (kinesalite, dynalite, Gremlin Server, a `lineageflow run`
// process with 2 s windows and a 3 s run timeout): the Flink integration's
// START of a streaming job (testdata/real line 131, processingType
// STREAMING), then its RUNNING (line 132, no jobType facet) every 250 ms
// for 5x the run timeout. The run's edges are in Gremlin within a few
// windows of the START, long before any terminal event; the KCL checkpoint
// in the lease table passes the START and stays within a window plus
// lateness (and the checkpoint cadence) of the newest record while the
// RUNNING events keep coming; then a FAIL naming a new output, and a
// RUNNING naming a new input after it, change no lineage edge, and the
// Run shows FAIL. The graph equals the reference model's at both points.
func TestStreamingRunOnStandins(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "stream")
	gremlin := testenv.Gremlin(t)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	ns := "stream-" + hex.EncodeToString(rnd[:])
	runID := "0193f000-" + hex.EncodeToString(rnd[:2]) + "-7000-8000-" + hex.EncodeToString(rnd[:]) + "0000"

	raw, err := os.ReadFile("../testdata/real/events.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	real := refmodel.SplitNDJSON(raw)
	start, running := real[130], real[131]
	if !bytes.Contains(start, []byte(`"processingType":"STREAMING"`)) || !bytes.Contains(running, []byte(`"eventType":"RUNNING"`)) {
		t.Fatal("testdata/real lines 131-132 are not the Flink stateful START and RUNNING")
	}
	// The test's own namespaces (the Gremlin stand-in is shared).
	prefixed := func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte(`"namespace":"`), []byte(`"namespace":"`+ns+"-"))
	}
	event := func(tmpl []byte) []byte { return refmodel.FillTemplate(prefixed(tmpl), runID, time.Now()) }
	key := "run:" + ns + "-flink_job_namespace/flink_examples_stateful"

	const window, lateness, runTimeout = 2 * time.Second, 500 * time.Millisecond, 3 * time.Second
	if err := h.CreateStream(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Sink: "gremlin:" + gremlin,
		Args: []string{"-run-store", "none", "-window", window.String(), "-lateness", lateness.String(), "-run-timeout", runTimeout.String()}})
	if err != nil {
		t.Fatal(err)
	}

	type put struct {
		seq string
		at  time.Time
	}
	var data [][]byte
	var puts []put
	send := func(d []byte) string {
		seq := putOne(ctx, t, h, key, d)
		data, puts = append(data, d), append(puts, put{seq, time.Now()})
		return seq
	}
	snapshot := func() (*graph.Snapshot, error) {
		s, err := graph.Dump(gremlin, 30*time.Second)
		if err != nil {
			return nil, err
		}
		return onlyPrefix(s, ns), nil
	}
	derives := lineage.EdgeID(lineage.EdgeDerives,
		lineage.DatasetID(lineage.Dataset{Namespace: ns + "-kafka://kafka-cluster-prod:9092", Name: "io.openlineage.flink.kafka.input1"}),
		lineage.DatasetID(lineage.Dataset{Namespace: ns + "-kafka://kafka-cluster-prod:9092", Name: "io.openlineage.flink.kafka.output"}))

	startSeq := send(event(start))
	startAt := time.Now()
	var edgesAfter time.Duration
	var ckAge time.Duration
	ckBound := window + lateness + 2*time.Second // + barrier interval (1 s) and the KCL's checkpoint call after a read
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	// age: how far the first record after the lease table's checkpoint is
	// behind the newest record put.
	age := func(ck string) time.Duration {
		last := puts[len(puts)-1].at
		for _, p := range puts {
			if !isSeq(ck) || checkpoint.CompareSeq(p.seq, ck) > 0 {
				return last.Sub(p.at)
			}
		}
		return 0
	}
	var ck string
	for done := false; !done; {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-tick.C:
		}
		if exited, err := w.Exited(); exited {
			t.Fatalf("worker exited: %v", err)
		}
		send(event(running))
		if edgesAfter == 0 {
			if s, err := snapshot(); err == nil {
				for _, e := range s.Edges {
					if e.ID == derives {
						edgesAfter = time.Since(startAt)
					}
				}
			}
		}
		ls, err := h.Leases(ctx)
		if err == nil && len(ls) == 1 {
			ck = ls[0].Checkpoint
			ckAge = age(ck)
		}
		elapsed := time.Since(startAt)
		done = elapsed > 5*runTimeout && edgesAfter > 0 && isSeq(ck) && checkpoint.CompareSeq(ck, startSeq) > 0 && ckAge <= ckBound
		if elapsed > 90*time.Second {
			t.Fatalf("after %v of RUNNING events: edges in Gremlin after %v (0: not yet), checkpoint %q (START %s), its age %v (bound %v)",
				elapsed, edgesAfter, ck, startSeq, ckAge, ckBound)
		}
	}
	t.Logf("streaming run: edges in Gremlin %v after its START; %d RUNNING events over %v (run timeout %v); KCL checkpoint past the START, %v behind the newest record (bound %v)",
		edgesAfter, len(puts)-1, time.Since(startAt).Round(time.Millisecond), runTimeout, ckAge, ckBound)
	if edgesAfter > 3*window+lateness+5*time.Second {
		t.Errorf("edges took %v after the START (window %v)", edgesAfter, window)
	}

	// Exactly the reference model once the last windows sealed.
	waitGraph := func(what string, data [][]byte) *graph.Snapshot {
		t.Helper()
		want := refmodel.Build(data, refmodel.Options{})
		var rep *verify.Report
		var snap *graph.Snapshot
		err := h.WaitFor(ctx, 60*time.Second, what, func() (bool, error) {
			if exited, err := w.Exited(); exited {
				return false, fmt.Errorf("worker exited: %w", err)
			}
			s, err := snapshot()
			if err != nil {
				return false, nil
			}
			snap, rep = s, verify.Compare(verify.Expected{Vertices: want.Vertices, Edges: want.Edges}, s)
			return rep.OK(), nil
		})
		if err != nil {
			if rep != nil {
				t.Log(rep.String())
			}
			t.Fatal(err)
		}
		return snap
	}
	lineageOf := func(s *graph.Snapshot) map[string]string {
		out := map[string]string{}
		for _, e := range s.Edges {
			if refmodel.IsLineage(e.Label) || e.Label == lineage.EdgeColumnDerives {
				out[e.ID] = fmt.Sprint(e.Props)
			}
		}
		return out
	}
	before := lineageOf(waitGraph("Gremlin to equal the reference model (RUNNING phase)", data))

	fail := bytes.Replace(running, []byte(`"eventType":"RUNNING"`), []byte(`"eventType":"FAIL"`), 1)
	fail = bytes.Replace(fail, []byte(`kafka.output"`), []byte(`kafka.output_after_fail"`), 1)
	send(event(fail))
	send(event(bytes.Replace(running, []byte(`kafka.input1"`), []byte(`kafka.input_after_fail"`), 1)))
	snap := waitGraph("Gremlin to equal the reference model (after the FAIL)", data)
	after := lineageOf(snap)
	if len(after) != len(before) {
		t.Errorf("%d lineage edges after the FAIL, %d before", len(after), len(before))
	}
	for id, p := range before {
		if after[id] != p {
			t.Errorf("lineage edge %s changed by the FAIL: %s -> %s", id, p, after[id])
		}
	}
	state := ""
	for _, v := range snap.Vertices {
		if v.ID == lineage.RunVertexID(runID) && len(v.Props[lineage.PropState]) > 0 {
			state = fmt.Sprint(v.Props[lineage.PropState][0])
		}
	}
	if state != "FAIL" {
		t.Errorf("Run vertex state %q, want FAIL", state)
	}
	st := w.Stats()
	if st["invalid"] != 0 {
		t.Errorf("stats: %d invalid records", st["invalid"])
	}
	if err := w.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	t.Logf("after the FAIL: %d lineage edges unchanged, Run state FAIL; worker stats %v", len(after), st)
}
