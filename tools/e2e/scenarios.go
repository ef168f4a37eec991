package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/window"
)

// scenario is one row of the matrix. fault runs while the stream is being
// replayed; it returns when the fault is over (the time the graph then
// takes to be complete is recover_s).
type scenario struct {
	name    string
	what    string
	short   bool // part of the CI (short) matrix
	workers int
	steal   bool
	redis   bool // workers run with -dedup on the Redis stand-in
	// noRunStore: workers run with -run-store none (the opt-out); else
	// with the default, the shared run store on dynalite (<app>-runs).
	noRunStore bool
	gen        func(c gen.Config) gen.Config
	fault      func(ctx context.Context, s *state) error
	check      func(ctx context.Context, s *state) error // extra assertions after the graph is complete
	live       func(ctx context.Context, s *state) error // assertions on the running workers, graph complete
	// collect: the records reach the stream through HTTP clients and a
	// `lineageflow collect` process instead of replay (no malformed
	// records: the collector refuses them at the door).
	collect bool
}

var scenarios = []scenario{
	{name: "collect", what: "producers -> collect -> Kinesis -> two workers; the collector SIGKILLed mid-stream and restarted: every acknowledged event in the graph once", workers: 2, collect: true,
		gen: func(c gen.Config) gen.Config { c.MalformedShare = -1; return c }, fault: collectFault},
	{name: "kill", what: "SIGKILL one of three workers mid-window", short: true, workers: 3,
		fault: func(ctx context.Context, s *state) error {
			// Kill when every record is processed but the last windows are
			// still open: what the victim held only in its own state (open
			// windows, open runs, the latest lastSeen stamps) must come back
			// from the survivors' replay of its shards from its KCL
			// checkpoint, or the graph differs.
			if err := s.waitCaughtUp(ctx); err != nil {
				return err
			}
			victim, err := s.busiest(ctx)
			if err != nil {
				return err
			}
			s.h.Logf("SIGKILL %s", victim.Spec.ID)
			return victim.Kill()
		}},
	{name: "term", what: "SIGTERM one of two workers mid-stream: the other holds every lease within seconds", short: true, workers: 2,
		fault: func(ctx context.Context, s *state) error {
			if err := s.waitAcked(ctx); err != nil {
				return err
			}
			victim, err := s.busiest(ctx)
			if err != nil {
				return err
			}
			s.h.Logf("SIGTERM %s", victim.Spec.ID)
			if err := victim.Stop(60 * time.Second); err != nil {
				return fmt.Errorf("graceful stop: %w", err)
			}
			// The KCL releases the leases on a graceful stop: the other
			// worker must pick them up at its next shard sync, not after a
			// failover time.
			t0 := time.Now()
			if err := s.waitOwners(ctx, 1); err != nil {
				return err
			}
			if d := time.Since(t0); d > 10*time.Second {
				return fmt.Errorf("leases handed over after %v, want a few seconds", d)
			}
			s.h.Logf("leases handed over %v after the exit", time.Since(t0))
			return nil
		}},
	{name: "join", what: "a fourth worker joins: leases rebalance", workers: 3, steal: true, fault: joinFault},
	{name: "join-redis", what: "join with 20% producer duplicates and the shared Redis dedup tier: duplicates_detected = the injected duplicates, the local tier's shortfall beside it",
		workers: 3, steal: true, redis: true,
		gen:   func(c gen.Config) gen.Config { c.DuplicateShare = 0.20; return c },
		fault: joinFault, check: dedupCheck},
	{name: "gremlin-down", what: "Gremlin Server down mid-stream, then back", short: true, workers: 3,
		fault: func(ctx context.Context, s *state) error {
			if err := s.waitAcked(ctx); err != nil {
				return err
			}
			if err := standins("stop", "gremlin"); err != nil {
				return err
			}
			s.h.Logf("Gremlin Server down for %v", s.cfg.outage)
			select {
			case <-time.After(s.cfg.outage):
			case <-ctx.Done():
				return ctx.Err()
			}
			return standins("start", "gremlin")
		}},
	{name: "aws-restart", what: "kinesalite and dynalite restarted mid-stream", workers: 3,
		fault: func(ctx context.Context, s *state) error {
			if err := s.waitAcked(ctx); err != nil {
				return err
			}
			if err := standins("stop", "kinesis", "dynamodb"); err != nil {
				return err
			}
			return standins("start", "kinesis", "dynamodb")
		}},
	{name: "graph-lost", what: "the graph emptied once complete, rebuilt from the event archive (S3 stand-in) by lineageflow rebuild into a new stream and application", workers: 2,
		fault: graphLostFault},
	{name: "split", what: "a shard split mid-stream", workers: 3,
		fault: func(ctx context.Context, s *state) error {
			if err := s.waitAcked(ctx); err != nil {
				return err
			}
			_, err := s.h.SplitShard(ctx)
			return err
		}},
	{name: "dup-ooo", what: "20% producer duplicates plus out-of-order event times; /metrics scraped live", short: true, workers: 3,
		gen:   func(c gen.Config) gen.Config { c.DuplicateShare, c.OutOfOrder = 0.20, 0.25; return c },
		fault: func(ctx context.Context, s *state) error { return nil },
		live:  checkMetrics},
	{name: "malformed", what: "every malformed kind mixed in: dead-letter count exact", workers: 3,
		gen:   func(c gen.Config) gen.Config { c.MalformedShare = 0.05; return c },
		fault: func(ctx context.Context, s *state) error { return nil }},
	{name: "restart-disk", what: "a worker restarted on the same data directory resumes from Pebble", workers: 1,
		fault: func(ctx context.Context, s *state) error {
			if err := s.waitAcked(ctx); err != nil {
				return err
			}
			if err := s.procs[0].Stop(60 * time.Second); err != nil {
				return fmt.Errorf("graceful stop: %w", err)
			}
			p, err := s.h.Restart(ctx, s.procs[0])
			if err != nil {
				return err
			}
			s.procs = append(s.procs, p)
			return nil
		},
		check: func(ctx context.Context, s *state) error {
			last := s.procs[len(s.procs)-1]
			if !strings.Contains(last.Log(), `msg="resumed from local state"`) {
				return errors.New("the restarted worker did not resume from its Pebble state")
			}
			// Resuming means the records it had already made durable were
			// redelivered by KCL and skipped, not processed again.
			if st := last.Stats(); st["skipped"] == 0 {
				return fmt.Errorf("the restarted worker skipped no redelivered record (stats %v)", st)
			}
			return nil
		}},
	{name: "move", what: "a worker SIGKILLed mid-stream and replaced by one on an empty disk, with the shared run store: the new owner re-reads only the records after the last acknowledged window (records_replayed, goal: at most window_records)",
		workers: 1, fault: moveFault, check: moveCheck},
	{name: "move-pinned", what: "move with -run-store none (the opt-out), for comparison: open runs pin the checkpoint, the new owner re-reads from the oldest open run's first record",
		workers: 1, noRunStore: true, fault: moveFault, check: moveCheck},
	{name: "poison", what: "a bad-index aggregate, a bad-protobuf aggregate and an aggregate of 100k empty records mid-stream: no crash, exact graph, each refused record one dead letter",
		workers: 2, fault: poisonFault, check: poisonCheck},
	{name: "hostile", what: "hostile producers mid-stream: a 600,000-character name, a hijack of another job's run (COMPLETE and FAIL), events dated 9999 and year 0, an invalid UTF-8 name: the generated traffic's graph exact (missing=0), each hostile record one dead letter for its reason",
		workers: 2, fault: hostileFault, check: hostileCheck},
	{name: "freeze", what: "SIGSTOP a worker past its failover time, then SIGCONT: exact graph, its lease gauge and /readyz follow the leases it really holds",
		workers: 2, fault: freezeFault, live: freezeLive},
}

// standins runs scripts/standins-<verb>.sh for the named stand-ins, with
// this process's STANDIN_* environment (scripts/e2e.sh sets it).
func standins(verb string, names ...string) error {
	cmd := exec.Command("bash", append([]string{filepath.Join(testenv.RepoRoot(), "scripts", "standins-"+verb+".sh")}, names...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("standins-%s %v: %w\n%s", verb, names, err, out)
	}
	return nil
}

// joinFault starts a fourth worker once edges flow and waits until it
// holds a lease (taken from the others by lease stealing).
func joinFault(ctx context.Context, s *state) error {
	if err := s.waitAcked(ctx); err != nil {
		return err
	}
	p, err := s.h.StartWorker(ctx, s.spec("w4"))
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	return s.h.WaitFor(ctx, 60*time.Second, "w4 holds a lease", func() (bool, error) {
		ls, err := s.h.Leases(ctx)
		if err != nil {
			return false, nil
		}
		return len(harness.Owners(ls, time.Now())["w4"]) > 0, nil
	})
}

// dedupCheck (every worker stopped: their exit stats lines are final)
// sums the duplicate counters over the workers and compares them with the
// generator's injected duplicates. With the shared tier each duplicate
// counts once, however often a moved shard's records were replayed; the
// local tier's part is what it found alone, the shortfall the rest (the
// retries whose first copy another worker had processed).
func dedupCheck(_ context.Context, s *state) error {
	var detected, sharedOnly, fallbacks, read int64
	for _, p := range s.procs {
		st := p.Stats()
		if st == nil {
			return fmt.Errorf("worker %s logged no stats line", p.Spec.ID)
		}
		detected += st["duplicates"]
		sharedOnly += st["shared_dedup_duplicates"]
		fallbacks += st["shared_dedup_fallbacks"]
		read += st["records"]
	}
	injected := int64(s.want.Duplicates)
	// records_replayed: records read more than once (a moved shard's
	// records after its last checkpoint, read again by the new owner).
	s.note = fmt.Sprintf("duplicates_injected=%d duplicates_detected=%d local_tier=%d local_shortfall=%d redis_fallbacks=%d records_replayed=%d",
		injected, detected, detected-sharedOnly, sharedOnly, fallbacks, read-int64(s.records))
	if detected != injected {
		return fmt.Errorf("duplicates_detected %d summed over the workers, want the %d injected", detected, injected)
	}
	return nil
}

// replaySeconds is the time the stream's replay is spread over
// (runScenario).
const replaySeconds = 20

// moveFault kills the only worker (SIGKILL: no flush, no checkpoint) once
// it has processed three quarters of the stream (edges flowing, runs of
// every age open) and starts a replacement with
// another id on an empty disk: every shard moves
// to a worker without its local state, as when a pod is rescheduled on a
// fresh volume.
func moveFault(ctx context.Context, s *state) error {
	if err := s.waitAcked(ctx); err != nil {
		return err
	}
	victim := s.procs[0]
	// ... and the graph has acknowledged what it sealed (a checkpoint was
	// written, the outbox is empty): then the replay measures what holds
	// the checkpoint back besides a slow graph (open windows, and without
	// the store open runs). On a loaded machine the Gremlin stand-in can
	// lag the whole stream: the kill then comes after the replay's end.
	err := s.h.WaitFor(ctx, 3*time.Minute, "the worker to process 3/4 of the stream with its outbox acknowledged", func() (bool, error) {
		st := victim.Stats()
		return st["records"] >= int64(s.records)*3/4 && st["checkpoints"] > 0 && st["outbox_acked"] >= st["outbox_written"], nil
	})
	if err != nil {
		return err
	}
	s.h.Logf("SIGKILL %s; w2 starts on an empty data directory", victim.Spec.ID)
	if err := victim.Kill(); err != nil {
		return err
	}
	// The victim's directory is never used again (w2 has its own, empty):
	// it stays only so that the matrix can count the dead letters it holds
	// (dead letters live on the worker's disk: a lost volume loses those
	// recorded before the checkpoint, with or without the run store).
	p, err := s.h.StartWorker(ctx, s.spec("w2"))
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	// w2 takes the shards once the victim's leases expire; then it reads
	// what it must replay: done when its record count has not moved for
	// 3 s (stats every 100 ms), so that moveCheck counts all of it.
	err = s.h.WaitFor(ctx, 90*time.Second, "w2 to hold every lease", func() (bool, error) {
		ls, err := s.h.Leases(ctx)
		if err != nil {
			return false, nil
		}
		open := 0
		for _, l := range ls {
			if l.Checkpoint != "SHARD_END" {
				open++
			}
		}
		return len(harness.Owners(ls, time.Now())["w2"]) == open, nil
	})
	if err != nil {
		return err
	}
	last, since := int64(-1), time.Now()
	return s.h.WaitFor(ctx, 3*time.Minute, "w2 to finish its replay (records steady for 3 s)", func() (bool, error) {
		n := p.Stats()["records"]
		if n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 3*time.Second, nil
	})
}

// moveCheck reports the records read twice: read by both workers (the
// victim's last stats line is at most 100 ms old: -stats-every below),
// minus the records put. window_records is one window's worth at the
// replay's rate. With the run store, more than two windows' worth fails
// (the goal is one; a KCL checkpoint trails the last record by up to a
// window plus lateness plus an acknowledgement).
func moveCheck(_ context.Context, s *state) error {
	var read int64
	for _, p := range s.procs {
		st := p.Stats()
		if st == nil {
			return fmt.Errorf("worker %s logged no stats line", p.Spec.ID)
		}
		read += st["records"]
	}
	replayed := read - int64(s.records)
	windowRecs := int64(float64(s.records) / replaySeconds * window.DefaultSize.Seconds())
	last := s.procs[len(s.procs)-1].Stats()
	s.note = fmt.Sprintf("records_replayed=%d window_records=%d replay_goal_met=%v run_store_reads=%d run_store_hits=%d",
		replayed, windowRecs, replayed <= windowRecs, last["run_store_reads"], last["run_store_hits"])
	if !s.sc.noRunStore && replayed > 2*windowRecs {
		return fmt.Errorf("%d records replayed after the move, want at most about a window's (%d)", replayed, windowRecs)
	}
	return nil
}
