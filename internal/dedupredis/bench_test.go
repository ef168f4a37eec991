package dedupredis

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// commandsProcessed reads total_commands_processed of the server.
func commandsProcessed(b *testing.B, c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		b.Fatal(err)
	}
	s := bufio.NewScanner(strings.NewReader(info))
	for s.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no total_commands_processed in INFO stats")
	return 0
}

// BenchmarkSharedDedupBatch runs KCL-sized batches of generated records
// through a processor shard, with the local tier only and with the Redis
// stand-in as the shared tier. Reported per batch: the time in Process
// (ns/op is per batch), the time in the shared claim (claim-us/batch: the
// latency the shared tier adds), and Redis commands per record
// (redis-ops/event, read from the server's own INFO counter, the INFO
// calls excluded).
func BenchmarkSharedDedupBatch(b *testing.B) {
	for _, batch := range []int{100, 500} {
		for _, tier := range []string{"local", "redis"} {
			b.Run(tier+"/batch="+strconv.Itoa(batch), func(b *testing.B) {
				var st *Store
				if tier == "redis" {
					st = newStore(b, testenv.Redis(b), testPrefix(b))
				}
				recs := records(b, gen.Config{Seed: 51, Events: 20000}, 1)
				stats := &processor.Stats{}
				var shared processor.SharedDedup
				if st != nil {
					shared = st
				}
				s := benchShard(b, shared, stats)
				ctx := context.Background()
				var before int64
				if st != nil {
					before = commandsProcessed(b, st.c)
				}
				next := 0
				records := 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if next+batch > len(recs) {
						// Fresh sequence numbers past the end: a new lap of
						// the same bytes (duplicates from then on).
						base := len(recs)
						lap := make([]processor.Record, len(recs))
						for j, r := range recs {
							r.Seq = seq(base + j + 1)
							lap[j] = r
						}
						recs = append(recs, lap...)
					}
					if err := s.Process(ctx, recs[next:next+batch], false); err != nil {
						b.Fatal(err)
					}
					next += batch
					records += batch
				}
				b.StopTimer()
				if st != nil {
					ops := commandsProcessed(b, st.c) - before - 1 // the INFO call itself
					b.ReportMetric(float64(ops)/float64(records), "redis-ops/event")
					calls := stats.SharedDedupCalls.Load()
					b.ReportMetric(float64(stats.SharedDedupNanos.Load())/float64(max(calls, 1))/1e3, "claim-us/batch")
					b.ReportMetric(float64(calls)/float64(b.N), "round-trips/batch")
					if stats.SharedDedupFallbacks.Load() != 0 {
						b.Fatalf("%d fallbacks against a running Redis", stats.SharedDedupFallbacks.Load())
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(records), "ns/event")
			})
		}
	}
}

func benchShard(b *testing.B, shared processor.SharedDedup, st *processor.Stats) *processor.Shard {
	db, err := processor.OpenDB(b.TempDir(), checkpoint.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	cfg := processor.PipelineConfig{Stats: st, Logger: quiet, Dedup: processor.DedupConfig{Shared: shared, SharedTimeout: time.Second}}
	s, err := processor.NewShard("shardId-000000000000", db, sink.NewMemory(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background(), ""); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Abandon(); db.Close() })
	return s
}
