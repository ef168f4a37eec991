package processor_test

// End-to-end tests of the real KCL path: `lineageflow run` processes
// against kinesalite and dynalite, file sinks, the reference model.
// Skipped without the stand-ins (scripts/standins-start.sh), failed
// instead with LINEAGEFLOW_REQUIRE_STANDINS=1.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/harness"
	"github.com/lineageflow/lineageflow/internal/refmodel"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.CleanupBuild()
	os.Exit(code)
}

// envInt reads a size knob from the environment.
func envInt(t *testing.T, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", key, v)
	}
	return n
}

// sinkGraph reads the union of every worker's acknowledged batches.
func sinkGraph(t *testing.T, h *harness.Harness) (*refmodel.Graph, harness.SinkStats) {
	t.Helper()
	g, st, err := harness.ReadSinks(h.SinkPaths()...)
	if err != nil {
		t.Fatal(err)
	}
	return g, st
}

// waitAllEdges polls the sinks until every expected vertex and edge is
// there, failing early on a ghost edge.
func waitAllEdges(ctx context.Context, t *testing.T, h *harness.Harness, want *refmodel.Graph, timeout time.Duration) {
	t.Helper()
	err := h.WaitFor(ctx, timeout, "every expected edge in the sinks", func() (bool, error) {
		g, _, err := harness.ReadSinks(h.SinkPaths()...)
		if err != nil {
			return false, err
		}
		missing, extra := harness.Missing(want, g)
		if extra > 0 {
			return false, fmt.Errorf("%d ghost edges (not in the reference model)", extra)
		}
		return missing == 0, nil
	})
	if err != nil {
		g, _ := sinkGraph(t, h)
		t.Fatalf("%v\n%s", err, refmodel.Compare(want, g))
	}
}

func putOne(ctx context.Context, t *testing.T, h *harness.Harness, key string, data []byte) string {
	t.Helper()
	out, err := h.Kinesis().PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(h.Stream), PartitionKey: aws.String(key), Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.SequenceNumber)
}

// TestKCLSingleWorker: one worker, one shard, a few thousand generated
// events. The file sink's graph equals the reference model exactly (no
// ghost edge, no missing one, same properties), and the KCL checkpoint in
// the lease table reaches the last record once every run is closed.
func TestKCLSingleWorker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "kcl1")
	events := envInt(t, "LINEAGEFLOW_KCL_EVENTS_1", 4000)
	recs, data := harness.Generated(gen.Generate(gen.Config{Seed: 11, Events: events}))
	// A DatasetEvent put after everything else (and after the run
	// timeout): it moves the max arrival time on, so the runs that never
	// end expire and stop pinning the checkpoint.
	tail := []byte(`{"eventTime":"2026-01-02T00:00:00Z","dataset":{"namespace":"harness","name":"tail"},"producer":"harness","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"}`)
	want := refmodel.Build(append(data, tail), refmodel.Options{})
	if len(want.Edges) == 0 {
		t.Fatal("the generated stream gives no edge")
	}

	if err := h.CreateStream(ctx, 1); err != nil {
		t.Fatal(err)
	}
	const runTimeout = 3 * time.Second
	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Args: []string{"-run-timeout", runTimeout.String()}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := h.Replay(ctx, recs, 0); err != nil {
		t.Fatal(err)
	}
	replayed := time.Now()
	waitAllEdges(ctx, t, h, refmodel.Build(data, refmodel.Options{}), 90*time.Second)
	t.Logf("%d records, %d edges: all in the sink %s after the worker started", len(recs), len(want.Edges), harness.Since(t0))

	// The tail must arrive more than runTimeout after the last record.
	if err := h.WaitFor(ctx, 2*runTimeout, "the run timeout to pass since the replay", func() (bool, error) {
		return time.Since(replayed) > runTimeout+500*time.Millisecond, nil
	}); err != nil {
		t.Fatal(err)
	}
	tailSeq := putOne(ctx, t, h, "dataset:harness/tail", tail)
	var last []harness.Lease
	err = h.WaitFor(ctx, 60*time.Second, "the KCL checkpoint to reach the tail record", func() (bool, error) {
		ls, err := h.Leases(ctx)
		if err != nil {
			return false, err
		}
		last = ls
		return len(ls) == 1 && isSeq(ls[0].Checkpoint) && checkpoint.CompareSeq(ls[0].Checkpoint, tailSeq) >= 0, nil
	})
	if err != nil {
		t.Fatalf("%v; lease table: %+v", err, last)
	}
	if last[0].AssignedTo != "w1" {
		t.Errorf("lease owner %q, want w1", last[0].AssignedTo)
	}

	got, st := sinkGraph(t, h)
	if d := refmodel.Compare(want, got); !d.Empty() {
		t.Fatalf("sink graph differs from the reference model:\n%s", d)
	}
	t.Logf("exact match: %d vertices, %d edges; %d batches, %d edge writes; checkpoint %s", len(got.Vertices), len(got.Edges), st.Batches, st.EdgeWrites, last[0].Checkpoint)

	// SIGTERM: a clean exit, lease released.
	if err := w.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	if !h.LogContains("w1", "worker stopped cleanly") {
		t.Error("no clean-stop line in the worker log")
	}
	ls, err := h.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ls[0].AssignedTo != "" {
		t.Errorf("lease still assigned to %q after a clean stop", ls[0].AssignedTo)
	}
	if checkpoint.CompareSeq(ls[0].Checkpoint, tailSeq) < 0 {
		t.Errorf("checkpoint went back to %s after the stop (tail %s)", ls[0].Checkpoint, tailSeq)
	}
}

func isSeq(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// TestKCLTwoWorkersKill: four shards, two worker processes started at
// once (the lease-table creation race), records replayed while they run;
// one worker is killed with SIGKILL after its first acknowledged batch,
// while records still flow. The survivor takes over its shards within
// the failover time, and the union of every acknowledged batch equals the
// reference model exactly.
//
// Size: LINEAGEFLOW_KCL_EVENTS (default 25000; 8000 with -short; 100000 is
// the full size, about 3 minutes on 2 cores).
func TestKCLTwoWorkersKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "kcl2")
	def := 25000
	if testing.Short() {
		def = 8000
	}
	events := envInt(t, "LINEAGEFLOW_KCL_EVENTS", def)
	recs, data := harness.Generated(gen.Generate(gen.Config{Seed: 22, Events: events, Pipelines: 24}))
	want := refmodel.Build(data, refmodel.Options{})

	if err := h.CreateStream(ctx, 4); err != nil {
		t.Fatal(err)
	}
	shards, err := h.ShardIDs(ctx)
	if err != nil || len(shards) != 4 {
		t.Fatalf("shards %v, %v", shards, err)
	}
	const failover = 4 * time.Second
	spec := func(id string) harness.WorkerSpec {
		return harness.WorkerSpec{ID: id, FailoverTime: failover, ShardSync: 500 * time.Millisecond}
	}
	w1, err := h.StartWorker(ctx, spec("w1"))
	if err != nil {
		t.Fatal(err)
	}
	w2, err := h.StartWorker(ctx, spec("w2"))
	if err != nil {
		t.Fatal(err)
	}
	workers := map[string]*harness.Proc{"w1": w1, "w2": w2}

	// Both workers hold shards before the records come.
	var owners map[string][]string
	err = h.WaitFor(ctx, 60*time.Second, "both workers to hold leases on all 4 shards", func() (bool, error) {
		for id, p := range workers {
			if done, err := p.Exited(); done {
				return false, fmt.Errorf("worker %s exited: %v", id, err)
			}
		}
		ls, err := h.Leases(ctx)
		if err != nil {
			return false, nil // table not there yet
		}
		owners = harness.Owners(ls, time.Now())
		return len(owners["w1"])+len(owners["w2"]) == 4 && len(owners["w1"]) > 0 && len(owners["w2"]) > 0, nil
	})
	if err != nil {
		t.Fatalf("%v; owners %v", err, owners)
	}
	t.Logf("leases: %v", owners)

	// Replay in the background, slowly enough to still be running after
	// the first windows seal (10 s windows): about 25 s.
	rate := float64(len(recs)) / 25
	t0 := time.Now()
	job := h.ReplayAsync(ctx, recs, rate)

	// Kill the worker with more shards after its first acknowledged batch.
	victim, survivor := "w1", "w2"
	if len(owners["w2"]) > len(owners["w1"]) {
		victim, survivor = "w2", "w1"
	}
	vp := workers[victim]
	err = h.WaitFor(ctx, 90*time.Second, "a first acknowledged batch from "+victim, func() (bool, error) {
		_, st, err := harness.ReadSinks(vp.SinkPath)
		return st.Batches > 0, err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-job.Done():
		t.Fatalf("the replay ended before the kill (%s): records were not flowing", harness.Since(t0))
	default:
	}
	victimShards := owners[victim]
	if err := vp.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("SIGKILL %s (pid %d, shards %v) %s after the replay started", victim, vp.PID(), victimShards, harness.Since(t0))

	// Takeover: the survivor holds every shard.
	err = h.WaitFor(ctx, 60*time.Second, survivor+" to hold all 4 shards", func() (bool, error) {
		if done, err := workers[survivor].Exited(); done {
			return false, fmt.Errorf("survivor exited: %v", err)
		}
		ls, err := h.Leases(ctx)
		if err != nil {
			return false, err
		}
		owners = harness.Owners(ls, time.Now())
		return len(owners[survivor]) == 4, nil
	})
	if err != nil {
		t.Fatalf("%v; owners %v", err, owners)
	}
	takeover := time.Since(killed)
	t.Logf("takeover: %s holds all shards %s after the kill (failover time %s)", survivor, takeover.Round(time.Millisecond), failover)
	if takeover > failover+8*time.Second {
		t.Errorf("takeover took %s, want at most failover time %s + 8 s", takeover, failover)
	}

	sum, err := job.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if sum.UserRecords != int64(len(recs)) {
		t.Fatalf("replayed %d of %d records", sum.UserRecords, len(recs))
	}
	waitAllEdges(ctx, t, h, want, 3*time.Minute)
	got, st := sinkGraph(t, h)
	if d := refmodel.Compare(want, got); !d.Empty() {
		t.Fatalf("sink graph differs from the reference model:\n%s", d)
	}
	t.Logf("exact match: %d records, %d vertices, %d edges; %d batches (%d torn), %d edge writes; %s end to end",
		len(recs), len(got.Vertices), len(got.Edges), st.Batches, st.TornLines, st.EdgeWrites, harness.Since(t0))
	if s := workers[survivor].Stats(); s != nil {
		t.Logf("survivor stats: records=%d skipped=%d duplicates=%d late=%d invalid=%d checkpoints=%d",
			s["records"], s["skipped"], s["duplicates"], s["late"], s["invalid"], s["checkpoints"])
	}
	if err := workers[survivor].Stop(30 * time.Second); err != nil {
		t.Errorf("SIGTERM of the survivor: %v", err)
	}
}
