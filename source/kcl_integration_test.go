package source_test

// End-to-end tests of the real KCL path: `lineageflow run` processes
// against kinesalite and dynalite, file sinks, the reference model.
// Skipped without the stand-ins (scripts/standins-start.sh), failed
// instead with LINEAGEFLOW_REQUIRE_STANDINS=1.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/verify/refmodel"
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

// waitAllEdges polls the sinks until their graph equals want exactly
// (every vertex and edge, same properties), failing early on a ghost edge.
func waitAllEdges(ctx context.Context, t *testing.T, h *harness.Harness, want *refmodel.Graph, timeout time.Duration) {
	t.Helper()
	err := h.WaitFor(ctx, timeout, "the sinks' graph to equal the reference model", func() (bool, error) {
		g, _, err := harness.ReadSinks(h.SinkPaths()...)
		if err != nil {
			return false, err
		}
		missing, extra := harness.Missing(want, g)
		if extra > 0 {
			return false, fmt.Errorf("%d ghost edges (not in the reference model)", extra)
		}
		// Present is not enough: later windows still raise lastSeen.
		return missing == 0 && refmodel.Compare(want, g).Empty(), nil
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
func TestKCLSingleWorker(t *testing.T) { kclSingleWorker(t, "kcl1") }

// TestKCLSingleWorkerRefreshLane is TestKCLSingleWorker with the refresh
// lane on (5 s windows, 20 s refresh windows): stamp refreshes sealed in
// windows of their own, the checkpoint held by them until they are
// acknowledged, and the same exact graph, before and after a restart.
func TestKCLSingleWorkerRefreshLane(t *testing.T) {
	kclSingleWorker(t, "kcl1r", "-window", "5s", "-refresh-window", "20s")
}

func kclSingleWorker(t *testing.T, name string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := harness.ForTest(t, name)
	events := envInt(t, "LINEAGEFLOW_KCL_EVENTS_1", 4000)
	recs, data := harness.Generated(gen.Generate(gen.Config{Seed: 11, Events: events}))
	// A DatasetEvent put after everything else (and after the run
	// timeout): it moves the max arrival time on, so the runs that never
	// end expire and stop pinning the checkpoint. The worker runs with
	// -run-store none, the opt-out whose runs pin and expire: what this
	// test checks.
	tail := []byte(`{"eventTime":"2026-01-02T00:00:00Z","dataset":{"namespace":"harness","name":"tail"},"producer":"harness","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"}`)
	want := refmodel.Build(append(data, tail), refmodel.Options{})
	if len(want.Edges) == 0 {
		t.Fatal("the generated stream gives no edge")
	}

	if err := h.CreateStream(ctx, 1); err != nil {
		t.Fatal(err)
	}
	const runTimeout = 3 * time.Second
	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Args: append([]string{"-run-store", "none", "-run-timeout", runTimeout.String()}, args...)})
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
	if slices.Contains(args, "-refresh-window") && w.Stats()["refresh_lane"] == 0 {
		t.Error("the refresh lane took no record: the test means nothing")
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

	// Restart on the same data dir: it resumes from Pebble and goes on.
	w, err = h.Restart(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	tail2 := []byte(`{"eventTime":"2026-01-03T00:00:00Z","dataset":{"namespace":"harness","name":"tail2"},"producer":"harness","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"}`)
	tail2Seq := putOne(ctx, t, h, "dataset:harness/tail2", tail2)
	want = refmodel.Build(append(append(data, tail), tail2), refmodel.Options{})
	err = h.WaitFor(ctx, 60*time.Second, "the restarted worker to checkpoint a new record", func() (bool, error) {
		if done, err := w.Exited(); done {
			return false, fmt.Errorf("restarted worker exited: %w", err)
		}
		ls, err := h.Leases(ctx)
		if err != nil {
			return false, err
		}
		return len(ls) == 1 && isSeq(ls[0].Checkpoint) && checkpoint.CompareSeq(ls[0].Checkpoint, tail2Seq) >= 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !h.LogContains("w1", "resumed from local state") {
		t.Error("the restarted worker did not resume from its Pebble state")
	}
	got, _ = sinkGraph(t, h)
	if d := refmodel.Compare(want, got); !d.Empty() {
		t.Fatalf("after the restart: sink graph differs from the reference model:\n%s", d)
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
// once (the lease-table creation race). Phase 1: 40% of the records;
// the union of the acknowledged batches equals the reference model of
// that prefix exactly. Phase 2: the rest, replayed in the background; one
// worker is killed with SIGKILL after an acknowledged batch of phase 2,
// while records still flow. The survivor takes over its shards within
// the failover time (+ a shard sync or two), and the final union equals
// the reference model of the whole stream exactly.
//
// Size: LINEAGEFLOW_KCL_EVENTS (default 100000; 25000 with -short).
func TestKCLTwoWorkersKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "kcl2")
	def := 100000 // about 75 s on 2 shared cores
	if testing.Short() {
		def = 25000 // about 45 s
	}
	events := envInt(t, "LINEAGEFLOW_KCL_EVENTS", def)
	recs, data := harness.Generated(gen.Generate(gen.Config{Seed: 22, Events: events, Pipelines: 64}))
	want := refmodel.Build(data, refmodel.Options{})
	split := len(recs) * 2 / 5
	wantPrefix := refmodel.Build(data[:split], refmodel.Options{})

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
	owners := waitBothHoldAll(ctx, t, h, workers)
	t.Logf("leases: %v", owners)

	// Phase 1.
	t0 := time.Now()
	if _, err := h.Replay(ctx, recs[:split], 0); err != nil {
		t.Fatal(err)
	}
	waitAllEdges(ctx, t, h, wantPrefix, 2*time.Minute)
	got, st := sinkGraph(t, h)
	if d := refmodel.Compare(wantPrefix, got); !d.Empty() {
		t.Fatalf("phase 1: sink graph differs from the reference model of the first %d records:\n%s", split, d)
	}
	t.Logf("phase 1: %d records, %d edges, exact match %s after the replay started", split, len(got.Edges), harness.Since(t0))

	// Phase 2: the rest in the background, over about 20 s.
	victim, survivor := "w1", "w2"
	if len(owners["w2"]) > len(owners["w1"]) {
		victim, survivor = "w2", "w1"
	}
	vp := workers[victim]
	_, vst, err := harness.ReadSinks(vp.SinkPath)
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	job := h.ReplayAsync(ctx, recs[split:], float64(len(recs)-split)/20)

	// Kill the worker with more shards after an acknowledged batch of phase 2.
	err = h.WaitFor(ctx, 90*time.Second, "an acknowledged phase-2 batch from "+victim, func() (bool, error) {
		_, st, err := harness.ReadSinks(vp.SinkPath)
		return st.Batches > vst.Batches, err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-job.Done():
		t.Fatalf("the replay ended before the kill (%s): records were not flowing", harness.Since(t1))
	default:
	}
	victimShards := owners[victim]
	if err := vp.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("SIGKILL %s (pid %d, shards %v) %s into phase 2", victim, vp.PID(), victimShards, harness.Since(t1))

	// Takeover: the survivor holds every shard.
	err = h.WaitFor(ctx, 60*time.Second, survivor+" to hold all 4 shards", func() (bool, error) {
		if done, err := workers[survivor].Exited(); done {
			return false, fmt.Errorf("survivor exited: %w", err)
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
	t.Logf("takeover: %s holds all 4 shards %s after the kill (failover time %s)", survivor, takeover.Round(time.Millisecond), failover)
	if takeover > failover+8*time.Second {
		t.Errorf("takeover took %s, want at most failover time %s + 8 s", takeover, failover)
	}
	select {
	case <-job.Done():
	default:
		t.Logf("records still flowing after the takeover")
	}

	sum, err := job.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if sum.UserRecords != int64(len(recs)-split) {
		t.Fatalf("replayed %d of %d records", sum.UserRecords, len(recs)-split)
	}
	waitAllEdges(ctx, t, h, want, time.Minute+time.Duration(events/500)*time.Second)
	got, st = sinkGraph(t, h)
	if d := refmodel.Compare(want, got); !d.Empty() {
		t.Fatalf("sink graph differs from the reference model:\n%s", d)
	}
	t.Logf("exact match: %d records, %d vertices, %d edges; %d batches (%d torn), %d edge writes; %s end to end",
		len(recs), len(got.Vertices), len(got.Edges), st.Batches, st.TornLines, st.EdgeWrites, harness.Since(t0))
	if err := workers[survivor].Stop(30 * time.Second); err != nil {
		t.Errorf("SIGTERM of the survivor: %v", err)
	}
	if s := workers[survivor].Stats(); s != nil {
		t.Logf("survivor stats: records=%d skipped=%d duplicates=%d late=%d invalid=%d checkpoints=%d",
			s["records"], s["skipped"], s["duplicates"], s["late"], s["invalid"], s["checkpoints"])
	}
}

// TestKCLThroughput measures events/s through kinesalite: the records are
// put on the stream first, then 1 or 2 workers read them; the time is from
// the workers' start until their stats count every record. Only with
// LINEAGEFLOW_KCL_BENCH=1 (it is a measurement, not a check);
// LINEAGEFLOW_KCL_BENCH_EVENTS sets the size (default 50000).
func TestKCLThroughput(t *testing.T) {
	if os.Getenv("LINEAGEFLOW_KCL_BENCH") != "1" {
		t.Skip("set LINEAGEFLOW_KCL_BENCH=1 to measure")
	}
	events := envInt(t, "LINEAGEFLOW_KCL_BENCH_EVENTS", 50000)
	recs, _ := harness.Generated(gen.Generate(gen.Config{Seed: 33, Events: events, Pipelines: 64}))
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			h := harness.ForTest(t, fmt.Sprintf("kclbench%d", n))
			if err := h.CreateStream(ctx, 4); err != nil {
				t.Fatal(err)
			}
			sum, err := h.Replay(ctx, recs, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("put: %d records in %s: %.0f records/s", sum.UserRecords, sum.Duration.Round(time.Millisecond), sum.RecordsPerSecond())
			var ps []*harness.Proc
			t0 := time.Now()
			for i := 1; i <= n; i++ {
				p, err := h.StartWorker(ctx, harness.WorkerSpec{ID: fmt.Sprintf("w%d", i), StatsEvery: 250 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				ps = append(ps, p)
			}
			var first time.Duration
			err = h.WaitFor(ctx, 5*time.Minute, "every record processed", func() (bool, error) {
				var total int64
				for _, p := range ps {
					total += p.Stats()["records"]
				}
				if total > 0 && first == 0 {
					first = time.Since(t0)
				}
				return total >= int64(len(recs)), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			d := time.Since(t0)
			t.Logf("%d workers: %d records in %s from start (%.0f records/s); first record after %s (%.0f records/s after it)",
				n, len(recs), d.Round(time.Millisecond), float64(len(recs))/d.Seconds(), first.Round(time.Millisecond),
				float64(len(recs))/(d-first).Seconds())
		})
	}
}

// waitBothHoldAll waits until workers w1 and w2 (still running) each hold
// at least one of the stream's 4 shards and together all 4; it returns the
// owners.
func waitBothHoldAll(ctx context.Context, t *testing.T, h *harness.Harness, workers map[string]*harness.Proc) map[string][]string {
	t.Helper()
	var owners map[string][]string
	err := h.WaitFor(ctx, 60*time.Second, "both workers to hold leases on all 4 shards", func() (bool, error) {
		for id, p := range workers {
			if done, err := p.Exited(); done {
				return false, fmt.Errorf("worker %s exited: %w", id, err)
			}
		}
		ls, lerr := h.Leases(ctx)
		if lerr != nil {
			return false, nil //nolint:nilerr // the table may not exist yet
		}
		owners = harness.Owners(ls, time.Now())
		return len(owners["w1"])+len(owners["w2"]) == 4 && len(owners["w1"]) > 0 && len(owners["w2"]) > 0, nil
	})
	if err != nil {
		t.Fatalf("%v; owners %v", err, owners)
	}
	return owners
}
