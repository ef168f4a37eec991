package main

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kinesistypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/lineageflow/lineageflow/internal/graphread"
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
	want      *refmodel.Graph
	records   int // user records put on the stream
	dlq       int
}

type replayJob struct{ j *harness.ReplayJob }

func (s *state) spec(id string) harness.WorkerSpec {
	spec := harness.WorkerSpec{ID: id, Sink: "gremlin:" + s.h.Env.GremlinEndpoint, LeaseStealing: s.sc.steal,
		FailoverTime: 4 * time.Second, ShardSync: 500 * time.Millisecond}
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

// splitShard splits the stream's first open shard at the middle of its
// hash key range, and waits until the stream is ACTIVE again.
func (s *state) splitShard(ctx context.Context) error {
	kc := s.h.Kinesis()
	out, err := kc.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(s.h.Stream)})
	if err != nil {
		return err
	}
	for _, sh := range out.Shards {
		if sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil {
			continue // closed already
		}
		lo, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.StartingHashKey), 10)
		hi, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.EndingHashKey), 10)
		mid := new(big.Int).Rsh(new(big.Int).Add(lo, hi), 1)
		s.h.Logf("split %s at %s", aws.ToString(sh.ShardId), mid)
		if _, err := kc.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(s.h.Stream),
			ShardToSplit: sh.ShardId, NewStartingHashKey: aws.String(mid.String())}); err != nil {
			return fmt.Errorf("split %s: %w", aws.ToString(sh.ShardId), err)
		}
		return s.h.WaitFor(ctx, time.Minute, "stream ACTIVE after the split", func() (bool, error) {
			d, err := kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(s.h.Stream)})
			if err != nil {
				return false, nil
			}
			return d.StreamDescriptionSummary.StreamStatus == kinesistypes.StreamStatusActive, nil
		})
	}
	return errors.New("no open shard to split")
}

func countEdges(endpoint string) (int64, error) {
	g, closeFn, err := graphread.Connect(endpoint)
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
