package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kinesistypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/testkit/harness"
)

type tputResult struct {
	userRecords, kinesisRecords int64
	preloadRPS                  float64
	rawRPS                      float64
	rawSeconds                  float64
	rawBytes                    int64   // Kinesis data bytes read by the raw reader
	hotShardBytes               int64   // of those, on the shard that holds the most
	workerCPU                   float64 // CPU seconds of the worker process until all records were processed
	pipeRPS                     float64 // from worker start to all records processed
	pipeSeconds                 float64
	firstRecord                 float64 // seconds from worker start to its first processed record
	steadyRPS                   float64 // from the first processed record
	leasedAt                    float64 // seconds from worker start until it held every shard's lease
	leasedRPS                   float64 // from then on (0: it finished before holding them all)
	red                         reduction
}

func throughput(ctx context.Context, c config, env harness.Env, bin, dir string, log io.Writer, round int) (tputResult, error) {
	var r tputResult
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	h, err := harness.New(harness.Options{Env: env, Bin: bin, Dir: dir, Log: log, Name: "bench-tput"})
	if err != nil {
		return r, err
	}
	defer h.Close()
	defer cleanupStream(h)
	if err := h.CreateStream(ctx, c.shards); err != nil {
		return r, err
	}
	recs := gen.Generate(gen.Config{Seed: int64(1000 + round), Events: c.tputEvents, Pipelines: c.tputPipes}.WithDefaults())
	toReplay, _ := harness.Generated(recs)
	cfg := h.ReplayConfig()
	cfg.Aggregate = c.aggregate
	cfg.Seed = uint64(round)
	sum, err := replay.Run(ctx, h.Kinesis(), cfg, replay.FromSlice(toReplay))
	if err != nil {
		return r, fmt.Errorf("pre-load: %w", err)
	}
	h.Logf("pre-load: %s", sum)
	r.userRecords, r.kinesisRecords, r.preloadRPS = sum.UserRecords, sum.Records, sum.RecordsPerSecond()

	// Kinesalite's own rate: a plain reader per shard, in parallel.
	start := time.Now()
	n, nb, hot, err := rawRead(ctx, h, c.maxRecords)
	if err != nil {
		return r, fmt.Errorf("raw read: %w", err)
	}
	r.rawSeconds = time.Since(start).Seconds()
	if n != sum.UserRecords {
		return r, fmt.Errorf("raw read: %d user records, want %d", n, sum.UserRecords)
	}
	r.rawRPS = float64(n) / r.rawSeconds
	r.rawBytes, r.hotShardBytes = nb, hot
	h.Logf("raw read: %d user records in %.2f s", n, r.rawSeconds)

	spec := harness.WorkerSpec{ID: "w1", StatsEvery: 100 * time.Millisecond, ShardSync: time.Second, FailoverTime: 10 * time.Second,
		Args: c.runArgs()}
	if c.tputSink == "gremlin" {
		if err := graph.Drop(env.GremlinEndpoint); err != nil {
			return r, err
		}
		spec.Sink = "gremlin:" + env.GremlinEndpoint
	}
	p, err := h.StartWorker(ctx, spec)
	if err != nil {
		return r, err
	}
	var first, leased time.Time
	var leasedN int64
	shardIDs, err := h.ShardIDs(ctx)
	if err != nil {
		return r, err
	}
	err = harness.Poll(ctx, 10*time.Minute, 100*time.Millisecond, func() (bool, error) {
		if done, perr := p.Exited(); done {
			return false, fmt.Errorf("worker exited: %w", perr)
		}
		st := p.Stats()
		if first.IsZero() && st["records"] > 0 {
			first = time.Now()
		}
		// Steady state: the KCL takes one new lease per shard sync, so
		// with many shards the last one starts seconds after the first.
		if leased.IsZero() {
			if ls, lerr := h.Leases(ctx); lerr == nil && len(harness.Owners(ls, time.Now())["w1"]) >= len(shardIDs) {
				leased, leasedN = time.Now(), p.Stats()["records"]
			}
		}
		return st["records"] >= sum.UserRecords, nil
	}, "the worker to process every record")
	if err != nil {
		h.DumpLogs(log, 3000)
		return r, err
	}
	end := time.Now()
	r.workerCPU = cpuSeconds(p.PID())
	r.pipeSeconds = end.Sub(p.Started).Seconds()
	r.pipeRPS = float64(sum.UserRecords) / r.pipeSeconds
	r.firstRecord = first.Sub(p.Started).Seconds()
	r.steadyRPS = float64(sum.UserRecords) / end.Sub(first).Seconds()
	if !leased.IsZero() && leasedN < sum.UserRecords {
		r.leasedAt = leased.Sub(p.Started).Seconds()
		r.leasedRPS = float64(sum.UserRecords-leasedN) / end.Sub(leased).Seconds()
	}
	h.Logf("worker: %d records in %.2f s (first record after %.2f s)", sum.UserRecords, r.pipeSeconds, r.firstRecord)

	// Write reduction at the burst rate: wait until every sealed window is
	// acknowledged (the last window seals on the idle watermark).
	st, err := settle(ctx, p, 90*time.Second)
	if err != nil {
		h.DumpLogs(log, 3000)
		return r, err
	}
	r.red = newReduction(sum.RecordsPerSecond(), st, -1)
	if err := p.Stop(60 * time.Second); err != nil {
		h.Logf("stop: %v", err)
	}
	return r, nil
}

// rawRead reads every shard from TRIM_HORIZON to its end with GetRecords
// (limit records per call, no pause while records come), de-aggregating KPL records,
// and returns the user records read, the data bytes read, and the bytes
// of the shard that holds the most.
func rawRead(ctx context.Context, h *harness.Harness, limit int) (int64, int64, int64, error) {
	ids, err := h.ShardIDs(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	kc := h.Kinesis()
	var total, bytes atomic.Int64
	perShard := make([]int64, len(ids))
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it, err := kc.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(h.Stream),
				ShardId: aws.String(id), ShardIteratorType: kinesistypes.ShardIteratorTypeTrimHorizon})
			if err != nil {
				errs[i] = err
				return
			}
			iter := it.ShardIterator
			for iter != nil {
				out, err := kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(int32(limit))})
				if err != nil {
					errs[i] = err
					return
				}
				for _, rec := range out.Records {
					bytes.Add(int64(len(rec.Data)))
					perShard[i] += int64(len(rec.Data))
					if kpl.IsAggregated(rec.Data) {
						urs, err := kpl.Deaggregate(rec.Data)
						if err == nil {
							total.Add(int64(len(urs)))
							continue
						}
					}
					total.Add(1)
				}
				if len(out.Records) == 0 {
					return // caught up: kinesalite returns whatever there is
				}
				iter = out.NextShardIterator
			}
		}()
	}
	wg.Wait()
	return total.Load(), bytes.Load(), slices.Max(perShard), errors.Join(errs...)
}
