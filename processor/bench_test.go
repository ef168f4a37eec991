package processor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/sink"
)

type discardSink struct{}

func (discardSink) WriteBatch(context.Context, sink.Batch) error { return nil }
func (discardSink) Close(context.Context) error                  { return nil }

func benchDB(b *testing.B) *pebble.DB {
	db, err := OpenDB(b.TempDir(), checkpoint.Options{Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkPipeline: raw record bytes -> sealed outbox on one shard, with
// generated OpenLineage events (no duplicates or malformed records, so
// every record is a full decode + dedup + run + window step). The
// sub-benchmarks are the two realistic Process batch sizes: 1000 records
// (a live tail) and 10000 (KCL's GetRecords maximum, what a catch-up read
// delivers). The barrier interval runs on the injected clock, set to the
// arrival time of each batch's last record.
func BenchmarkPipeline(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	st := makeStream(b, gen.Config{Seed: 1, Events: 50000, DuplicateShare: -1, MalformedShare: -1}, r)
	var bytes int
	for _, rec := range st.recs {
		bytes += len(rec.Data)
	}
	b.Logf("%d records, mean %d bytes", len(st.recs), bytes/len(st.recs))
	for _, batch := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			benchPipeline(b, st.recs, batch)
		})
	}
}

func benchPipeline(b *testing.B, recs []Record, batch int) {
	events := 0
	stats := &Stats{}
	var cpu time.Duration // process CPU time (user+system, every goroutine, Pebble's too) of the timed part
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		db := benchDB(b)
		clk := &fakeClock{now: recs[0].Arrival}
		cfg := testConfig(b, clk, stats)
		cfg.BarrierInterval = time.Second
		s, _ := NewShard(fmt.Sprintf("shardId-%012d", i), db, discardSink{}, cfg)
		ctx := context.Background()
		if err := s.Start(ctx, ""); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := processCPU(b)
		// j = k, not j += batch: k runs past j+batch to keep the
		// sub-records of one KPL aggregate (same Seq) in one batch.
		for j := 0; j < len(recs); {
			k := min(j+batch, len(recs))
			for k < len(recs) && recs[k].Seq == recs[k-1].Seq {
				k++
			}
			clk.Set(recs[k-1].Arrival)
			if err := s.Process(ctx, recs[j:k], false); err != nil {
				b.Fatal(err)
			}
			j = k
		}
		if err := s.Barrier(ctx); err != nil {
			b.Fatal(err)
		}
		events += len(recs)
		cpu += processCPU(b) - cpu0
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(stats.Barriers.Load())/float64(b.N), "barriers/op")
	b.ReportMetric(float64(stats.BarrierNanos.Load())/float64(b.Elapsed()), "barrier-share")
	// CPU per event compares with a worker's CPU per record (scripts/bench-cpu.sh):
	// both count every thread of the process.
	b.ReportMetric(cpu.Seconds()*1e6/float64(events), "cpu-us/event")
}

// processCPU returns the user+system CPU time of this process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWideWindow: 1M distinct keys in one window (a JobEvent-like
// fan-in: synthetic edges straight into the table), then seal.
func BenchmarkWideWindow(b *testing.B) {
	const keys = 1 << 20
	for i := 0; i < b.N; i++ {
		db := benchDB(b)
		clk := &fakeClock{now: time.Unix(1767225600, 0)}
		cfg := testConfig(b, clk, &Stats{})
		cfg.Drain.OutboxCap = 1 << 20
		s, _ := NewShard("shardId-000000000001", db, discardSink{}, cfg)
		ctx := context.Background()
		if err := s.Start(ctx, ""); err != nil {
			b.Fatal(err)
		}
		s.curSeq = "1"
		t0 := time.Now()
		fillKeys(s, keys, 0)
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(keys)/time.Since(t0).Seconds(), "keys/s")
		s.Close()
	}
}

// fillKeys adds n distinct DERIVES edges to window 0 through the table,
// barriering whenever the table is full (as Process does).
func fillKeys(s *Shard, n, offset int) {
	ctx := context.Background()
	for k := 0; k < n; k++ {
		out := fmt.Sprintf("dataset:2:ns/o%d", (k+offset)%1024)
		in := fmt.Sprintf("dataset:2:ns/i%d", (k+offset)/1024)
		s.windows.touch(1767225600000, "1")
		s.windows.tab.AddEdge(1767225600000, "DERIVES", in, out, 1, 2, "r")
		if s.windows.tab.Len() >= s.cfg.Budgets.MaxOpenKeys {
			if err := s.barrier(ctx, false, true); err != nil {
				panic(err)
			}
		}
	}
}

// BenchmarkBarrier measures one barrier (with MaxOpenKeys fresh deltas)
// when the shard already holds 10k and 1M keys in open windows.
func BenchmarkBarrier(b *testing.B) {
	for _, held := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("state=%d", held), func(b *testing.B) {
			db := benchDB(b)
			clk := &fakeClock{now: time.Unix(1767225600, 0)}
			cfg := testConfig(b, clk, &Stats{})
			s, _ := NewShard("shardId-000000000001", db, discardSink{}, cfg)
			ctx := context.Background()
			if err := s.Start(ctx, ""); err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.curSeq = "1"
			fillKeys(s, held, 0)
			if err := s.Barrier(ctx); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var ds []float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				fillKeysNoBarrier(s, 10_000, held+i*10_000)
				b.StartTimer()
				t0 := time.Now()
				if err := s.Barrier(ctx); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, float64(time.Since(t0))/1e6)
			}
			sort.Float64s(ds)
			b.ReportMetric(ds[len(ds)/2], "p50-ms")
			b.ReportMetric(ds[len(ds)-1], "max-ms")
		})
	}
}

func fillKeysNoBarrier(s *Shard, n, offset int) {
	for k := 0; k < n; k++ {
		s.windows.touch(1767225600000, "1")
		s.windows.tab.AddEdge(1767225600000, "DERIVES", fmt.Sprintf("dataset:2:ns/i%d", (k+offset)/1024), fmt.Sprintf("dataset:2:ns/o%d", (k+offset)%1024), 1, 2, "r")
	}
}

// TestPeakRSSFiveMillionKeys holds 5M distinct keys in one open window
// (barriers every MaxOpenKeys) and prints the peak RSS. Opt-in: set
// LINEAGEFLOW_RSS_TEST=1 (it takes a minute).
func TestPeakRSSFiveMillionKeys(t *testing.T) {
	if os.Getenv("LINEAGEFLOW_RSS_TEST") != "1" {
		t.Skip("set LINEAGEFLOW_RSS_TEST=1")
	}
	db, err := OpenDB(t.TempDir(), checkpoint.Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clk := &fakeClock{now: time.Unix(1767225600, 0)}
	s, _ := NewShard("shardId-000000000001", db, discardSink{}, testConfig(t, clk, &Stats{}))
	if err := s.Start(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.curSeq = "1"
	fillKeys(s, 5_000_000, 0)
	if err := s.Barrier(context.Background()); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	rss := peakRSS()
	t.Logf("peak RSS with 5M open keys: %d MiB", rss>>20)
	if rss > 512<<20 {
		t.Errorf("peak RSS %d MiB > 512 MiB", rss>>20)
	}
}

func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	var kb int64
	for _, line := range splitLines(string(b)) {
		if n, _ := fmt.Sscanf(line, "VmHWM: %d kB", &kb); n == 1 {
			return kb << 10
		}
	}
	return -1
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}
