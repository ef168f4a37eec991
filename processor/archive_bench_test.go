package processor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/internal/gen"
)

// BenchmarkArchiveCPU: the process CPU per record of one shard over the
// generated workload (20% duplicates, 1% malformed), with the archive off
// and on, interleaved in one run (off, on, off, on...: the machine's
// drift hits both alike). Each pass processes the whole stream in batches
// of 1000 and flushes (graph outbox drained; with the archive, every
// pending entry cut into zstd Parquet and put). Both passes use the
// shared dedup tier (in memory) the archive requires; the store is in
// memory, so S3's network time is not in the figure (its CPU is the
// HTTP client's: small beside encoding). Reports cpu-us/record for each
// and their ratio (goal: at most 1.15).
func BenchmarkArchiveCPU(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	st := makeStream(b, gen.Config{Seed: 1, Events: 20000}, r)
	var cpu [2]time.Duration
	records := 0
	for i := 0; i < b.N; i++ {
		for _, on := range []bool{false, true} {
			b.StopTimer()
			db := benchDB(b)
			clk := &fakeClock{now: st.recs[0].Arrival}
			cfg := testConfig(b, clk, &Stats{})
			cfg.BarrierInterval = time.Second
			cfg.Dedup.Shared = &fakeShared{}
			if on {
				cfg.Archive = ArchiveConfig{Store: newMemStore(), Prefix: "lf/"}
			}
			s, err := NewShard(fmt.Sprintf("shardId-%012d", i), db, discardSink{}, cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := s.Start(ctx, ""); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			cpu0 := processCPU(b)
			for j := 0; j < len(st.recs); {
				k := min(j+1000, len(st.recs))
				for k < len(st.recs) && st.recs[k].Seq == st.recs[k-1].Seq {
					k++
				}
				clk.Set(st.recs[k-1].Arrival)
				if err := s.Process(ctx, st.recs[j:k], false); err != nil {
					b.Fatal(err)
				}
				j = k
			}
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			idx := 0
			if on {
				idx = 1
			}
			cpu[idx] += processCPU(b) - cpu0
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
		records += len(st.recs)
	}
	off, on := cpu[0].Seconds()*1e6/float64(records), cpu[1].Seconds()*1e6/float64(records)
	b.ReportMetric(off, "off-cpu-us/record")
	b.ReportMetric(on, "on-cpu-us/record")
	b.ReportMetric(on/off, "on/off")
}
