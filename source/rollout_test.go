package source_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/keyspace"
	"github.com/lineageflow/lineageflow/source"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// divergenceThreshold is diff's default -threshold (0.001%).
const divergenceThreshold = 0.00001

// startMirror runs a mirror from h's stream to canary's in the background
// until the test ends.
func startMirror(t *testing.T, ctx context.Context, h, canary *harness.Harness, app string, share float64) *source.MirrorStats {
	st := &source.MirrorStats{}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- source.RunMirror(mctx, source.MirrorConfig{Stream: h.Stream, Canary: canary.Stream, AppName: app, WorkerID: "m1",
			AWS: h.Env.AWS(), Share: share, Aggregate: true, FailoverTime: 3 * time.Second, ShardSync: 200 * time.Millisecond,
			IdleBetweenReads: 100 * time.Millisecond, MaxRecords: 2500, Stats: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("mirror %s: %v", app, err)
		}
	})
	return st
}

// lastSequence returns the sequence number of the last record of a
// one-shard stream.
func lastSequence(ctx context.Context, kin *kinesis.Client, stream string) (string, error) {
	shards, err := kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		return "", fmt.Errorf("list shards of %s: %w", stream, err)
	}
	if len(shards.Shards) != 1 {
		return "", fmt.Errorf("stream %s has %d shards, want 1", stream, len(shards.Shards))
	}
	it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream),
		ShardId: shards.Shards[0].ShardId, ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		return "", err
	}
	last := ""
	for iter := it.ShardIterator; iter != nil; {
		res, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter})
		if err != nil {
			return "", err
		}
		if len(res.Records) == 0 {
			break
		}
		last = aws.ToString(res.Records[len(res.Records)-1].SequenceNumber)
		iter = res.NextShardIterator
	}
	return last, nil
}

func dumpGraph(t *testing.T, ep string) *graph.Snapshot {
	t.Helper()
	s, err := graph.Dump(ep, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRolloutCanaryDiff is issue 15's "done when": a production
// application and a canary application fed by `mirror` at 10%, each
// writing its own Gremlin Server. When both graphs are complete, diff on
// the mirrored key space reports divergence 0. A canary killed with its
// windows open and replaced comes back to 0; the same with the unsafe
// early-checkpoint break does not: diff reports it above the threshold. The alert rule
// (deploy/monitoring) is unit-tested by promtool with the two numbers
// measured here: silent for the first, firing for the second.
func TestRolloutCanaryDiff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "prod")
	testenv.Gremlin(t)
	epA, epB := testenv.PrivateGremlin(t), testenv.PrivateGremlin(t)
	const share = 0.1
	recs, data := harness.Generated(gen.Generate(gen.Config{Seed: 81, Events: 6000}))
	var mirrored [][]byte
	for _, d := range data {
		if k, ok := keyspace.EventKey(d); ok && keyspace.Selected(k, share) {
			mirrored = append(mirrored, d)
		}
	}
	wantA, wantB := refmodel.Build(data, refmodel.Options{}), refmodel.Build(mirrored, refmodel.Options{})

	// Phase 1: a faithful canary.
	c := harness.ForTest(t, "canary")
	if err := h.CreateStream(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateStream(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "p1", Sink: "gremlin:" + epA}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartWorker(ctx, harness.WorkerSpec{ID: "c1", Sink: "gremlin:" + epB}); err != nil {
		t.Fatal(err)
	}
	startMirror(t, ctx, h, c, c.App+"-mirror", share)
	if _, err := h.Replay(ctx, recs, 0); err != nil {
		t.Fatal(err)
	}
	complete := func(ep string, want *refmodel.Graph) bool {
		s, err := graph.Dump(ep, time.Minute)
		return err == nil && verify.Compare(verify.Expected{Vertices: want.Vertices, Edges: want.Edges}, s).OK()
	}
	if err := h.WaitFor(ctx, 3*time.Minute, "production and canary graphs complete", func() (bool, error) {
		return complete(epA, wantA) && complete(epB, wantB), nil
	}); err != nil {
		t.Fatal(err)
	}
	a := dumpGraph(t, epA)
	ok := verify.Diff(a, dumpGraph(t, epB), verify.DiffOptions{KeyShare: share})
	t.Logf("faithful canary: %s", ok.Line())
	if ok.Diverging() != 0 || ok.Compared == 0 || ok.BEdges == 0 {
		t.Fatalf("faithful canary diverges: %s", ok.String())
	}

	// Phase 2: a canary killed with its windows open and replaced by a
	// worker without its local state (fresh graph, stream and applications
	// each time): first without the break, where the replacement replays
	// from the KCL checkpoint and the graph comes back (divergence 0 again);
	// then with the unsafe early-checkpoint break, where the checkpoint had
	// passed what was only in open windows and the replacement never gets it.
	killed := func(name string, brk bool, settle time.Duration) (*verify.DiffReport, time.Duration) {
		if err := graph.Drop(epB); err != nil {
			t.Fatal(err)
		}
		c := harness.ForTest(t, name)
		if err := c.CreateStream(ctx, 1); err != nil {
			t.Fatal(err)
		}
		// An hour of lateness: nothing the victim reads seals before it
		// dies (windows seal at their end plus the lateness).
		args := []string{"-lateness", "1h"}
		if brk {
			args = append(args, "-unsafe-break", "early-checkpoint")
		}
		victim, err := c.StartWorker(ctx, harness.WorkerSpec{ID: name + "-1", Sink: "gremlin:" + epB, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		mst := startMirror(t, ctx, h, c, c.App+"-mirror", share)
		if err := c.WaitFor(ctx, 2*time.Minute, "the canary to read every mirrored record", func() (bool, error) {
			st := victim.Stats()
			return mst.Put.Load() >= int64(len(mirrored)) && st["records"] >= mst.Put.Load(), nil
		}); err != nil {
			t.Fatal(err)
		}
		if st := victim.Stats(); st["windows_sealed"] != 0 {
			t.Fatalf("the victim sealed %d windows before the kill: the scenario needs them open", st["windows_sealed"])
		}
		if brk {
			last, err := lastSequence(ctx, c.Kinesis(), c.Stream)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.WaitFor(ctx, time.Minute, "the (early) checkpoint to reach the last record "+last, func() (bool, error) {
				ls, err := c.Leases(ctx)
				return err == nil && len(ls) == 1 && ls[0].Checkpoint == last, err
			}); err != nil {
				t.Fatal(err)
			}
		}
		c.Logf("SIGKILL %s with its windows open", victim.Spec.ID)
		if err := victim.Kill(); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		next, err := c.StartWorker(ctx, harness.WorkerSpec{ID: name + "-2", Sink: "gremlin:" + epB})
		if err != nil {
			t.Fatal(err)
		}
		var rep *verify.DiffReport
		err = c.WaitFor(ctx, 3*time.Minute, "the replacement to hold the lease and the canary graph to settle", func() (bool, error) {
			ls, err := c.Leases(ctx)
			if err != nil || len(ls) != 1 || ls[0].AssignedTo != next.Spec.ID {
				return false, err
			}
			s, err := graph.Dump(epB, time.Minute)
			if err != nil {
				return false, nil
			}
			rep = verify.Diff(a, s, verify.DiffOptions{KeyShare: share})
			if !brk {
				return rep.Diverging() == 0, nil
			}
			return time.Since(t0) >= settle, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (break %v): replacement read %d records; %s", name, brk, next.Stats()["records"], rep.Line())
		return rep, time.Since(t0)
	}
	_, recovery := killed("kill", false, 0)
	t.Logf("without the break the killed canary's graph came back in %s", recovery.Round(time.Second))
	// With the break, wait twice as long as the correct canary needed.
	bad, _ := killed("killbreak", true, 2*recovery)
	if bad.Divergence <= divergenceThreshold {
		t.Fatalf("canary with the early-checkpoint break, killed: not above the threshold: %s", bad.String())
	}
	promtoolFires(t, ok.Divergence, bad.Divergence)
}

// promtoolFires runs promtool's unit test of the rules file with the two
// divergence ratios measured: the alert stays silent for good and fires
// for bad.
func promtoolFires(t *testing.T, good, bad float64) {
	t.Helper()
	if _, err := exec.LookPath("promtool"); err != nil {
		if os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") == "1" {
			t.Fatal("promtool not installed (Debian package prometheus)")
		}
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	rules, err := filepath.Abs(filepath.Join(testenv.RepoRoot(), "deploy", "monitoring", "lineageflow.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	pct := fmt.Sprintf("%.4g%%", bad*100) // humanizePercentage
	test := fmt.Sprintf(`rule_files: [%q]
evaluation_interval: 1m
tests:
  - interval: 5m
    input_series:
      - series: 'lineage_diff_divergence_ratio{scope="good"}'
        values: '%[2]gx20'
      - series: 'lineage_diff_divergence_ratio{scope="bad"}'
        values: '%[3]gx20'
    alert_rule_test:
      - eval_time: 40m
        alertname: LineageCanaryDiverging
        exp_alerts:
          - exp_labels: {severity: critical, scope: bad}
            exp_annotations:
              summary: "The canary diverges from production (bad): roll it back"
              description: "lineageflow diff has reported a divergence of %[4]s between the canary and production graphs on bad for 30 minutes, above the 0.001%% rollback threshold. Run lineageflow diff -json to list the missing, extra and different vertices and edges."
              runbook: "https://github.com/lineageflow/lineageflow/blob/main/README.md#metrics"
`, rules, good, bad, pct)
	path := filepath.Join(t.TempDir(), "measured.test.yml")
	if err := os.WriteFile(path, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("promtool", "test", "rules", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool test rules with the measured divergences %v and %v: %v\n%s", good, bad, err, out)
	}
	t.Logf("promtool: LineageCanaryDiverging silent at %v, fires at %v", good, bad)
}
