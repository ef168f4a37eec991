package main

import (
	"context"
	"fmt"
	"time"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// state is what a scenario's fault and check functions work with.
type state struct {
	cfg       config
	sc        scenario
	h         *harness.Harness
	procs     []*harness.Proc
	replayJob *replayJob
	feed      *collectFeed // the collect scenario's producers and collector (replayJob is nil then)
	want      *refmodel.Graph
	records   int             // user records put on the stream
	generated []replay.Record // the generated stream, in order (hostile picks a victim run in it)
	dlq       int
	extraDLQ  int           // dead letters the fault added beyond the generated stream's (poison)
	frozen    *harness.Proc // the worker the freeze scenario froze
	redisURL  string        // the Redis stand-in, for scenarios with redis
	note      string        // extra key=value fields for the result line
	recs      []gen.Record  // the generated stream with its markers (graph-lost archives its unique valid events)
	closers   []func()      // run when the scenario ends (graph-lost's second harness)
}

type replayJob struct{ j *harness.ReplayJob }

func (s *state) spec(id string) harness.WorkerSpec {
	spec := harness.WorkerSpec{ID: id, Sink: "gremlin:" + s.h.Env.GremlinEndpoint, LeaseStealing: s.sc.steal,
		FailoverTime: 4 * time.Second, ShardSync: 500 * time.Millisecond}
	if s.sc.redis {
		// 1 s, not 50 ms: on a loaded test machine a slow claim would fall
		// back to the local tier and the count being checked would be the
		// degraded one (fallbacks are reported in the line).
		spec.Args = append(spec.Args, "-dedup", s.redisURL, "-dedup-timeout", "1s")
	}
	if s.sc.noRunStore {
		spec.Args = append(spec.Args, "-run-store", "none")
	}
	if s.sc.name == "move" || s.sc.name == "move-pinned" {
		// moveCheck counts the killed worker's records from its last
		// stats line: keep it fresh.
		spec.StatsEvery = 100 * time.Millisecond
	}
	if s.cfg.breakMode != "" {
		spec.Env = append(spec.Env, "LINEAGEFLOW_UNSAFE_BREAK="+s.cfg.breakMode)
	}
	return spec
}

// waitAcked waits until the graph holds some of the stream's edges, so a
// fault hits a pipeline in full flow (windows open, batches in flight).
func (s *state) waitAcked(ctx context.Context) error {
	return s.h.WaitFor(ctx, 90*time.Second, "first edges in the graph", func() (bool, error) {
		n, err := countEdges(s.h.Env.GremlinEndpoint)
		return err == nil && n > 0, nil
	})
}

// waitCaughtUp waits until the replay is done and the workers' stats
// lines say they processed every record put (each record once: no worker
// has failed over yet).
func (s *state) waitCaughtUp(ctx context.Context) error {
	if _, err := s.replayJob.j.Wait(); err != nil {
		return err
	}
	return s.h.WaitFor(ctx, 2*time.Minute, "workers processed every record", func() (bool, error) {
		var n int64
		for _, p := range s.procs {
			n += p.Stats()["records"]
		}
		return n >= int64(s.records), nil
	})
}

// busiest returns the live worker that holds the most leases (a worker
// holding none would make a fault that tests nothing).
func (s *state) busiest(ctx context.Context) (*harness.Proc, error) {
	ls, err := s.h.Leases(ctx)
	if err != nil {
		return nil, err
	}
	owners := harness.Owners(ls, time.Now())
	var best *harness.Proc
	for _, p := range s.procs {
		if done, _ := p.Exited(); done {
			continue
		}
		if best == nil || len(owners[p.Spec.ID]) > len(owners[best.Spec.ID]) {
			best = p
		}
	}
	if best == nil || len(owners[best.Spec.ID]) == 0 {
		return nil, fmt.Errorf("no live worker holds a lease (owners %v)", owners)
	}
	return best, nil
}

// waitOwners waits until exactly n workers hold all the shards' leases.
func (s *state) waitOwners(ctx context.Context, n int) error {
	return s.h.WaitFor(ctx, 60*time.Second, fmt.Sprintf("%d workers hold every lease", n), func() (bool, error) {
		ls, err := s.h.Leases(ctx)
		if err != nil {
			return false, nil
		}
		owners := harness.Owners(ls, time.Now())
		held := 0
		for _, shards := range owners {
			held += len(shards)
		}
		open := 0
		for _, l := range ls {
			if l.Checkpoint != "SHARD_END" {
				open++
			}
		}
		return len(owners) == n && held >= open, nil
	})
}

func countEdges(endpoint string) (int64, error) {
	g, closeFn, err := graph.Connect(endpoint)
	if err != nil {
		return 0, err
	}
	defer closeFn()
	rs, err := g.E().Count().ToList()
	if err != nil || len(rs) == 0 {
		return 0, err
	}
	return rs[0].GetInt64()
}
