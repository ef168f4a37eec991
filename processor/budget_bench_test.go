package processor

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
)

// heapPeak samples the live heap every millisecond until stop.
type heapPeak struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
}

func startHeapPeak() *heapPeak {
	runtime.GC()
	h := &heapPeak{stop: make(chan struct{})}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			h.peak = max(h.peak, s[0].Value.Uint64())
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *heapPeak) Stop() uint64 { close(h.stop); h.done.Wait(); return h.peak }

// countWriter is a sink that only counts (a memory sink would put the
// whole graph in the heap measured).
type countWriter struct{ edges atomic.Int64 }

func (c *countWriter) WriteBatch(_ context.Context, b lineage.Batch) error {
	c.edges.Add(int64(len(b.Edges)))
	return nil
}

// benchShard is a started shard with default budgets on a Pebble DB on
// disk (an in-memory FS would put Pebble's data in the heap measured).
func benchShard(b *testing.B) (*Shard, *fakeClock, *Stats, func()) {
	b.Helper()
	db, err := OpenDB(b.TempDir(), checkpoint.Options{Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	clk := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st := &Stats{}
	s, err := NewShard("shardId-000000000001", db, &countWriter{}, testConfig(b, clk, st))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(ctxT(b), ""); err != nil {
		b.Fatal(err)
	}
	return s, clk, st, func() { s.Close(); db.Close() }
}

// BenchmarkWideEvent: one COMPLETE event with 1000 inputs x 1000 outputs
// (1,002,000 edges) through a shard with the default budgets, sealed and
// drained. Reports its time, the peak live heap and the process's peak RSS.
//
//	go test ./processor/ -run '^$' -bench BenchmarkWideEvent -benchtime 1x
func BenchmarkWideEvent(b *testing.B) {
	ev := wideEvent("COMPLETE", "r1", 1, 0, 1000, 1000)
	var peak, sealPeak uint64
	var edges int64
	var spills int64
	var proc, seal time.Duration
	for i := 0; i < b.N; i++ {
		s, clk, st, done := benchShard(b)
		hp := startHeapPeak()
		t0 := time.Now()
		if err := s.Process(ctxT(b), []Record{{Seq: seqOf(1), Arrival: clk.Now(), Data: ev}}, false); err != nil {
			b.Fatal(err)
		}
		proc = time.Since(t0)
		peak = max(peak, hp.Stop())
		hp = startHeapPeak()
		t0 = time.Now()
		if err := s.Flush(ctxT(b)); err != nil {
			b.Fatal(err)
		}
		seal = time.Since(t0)
		sealPeak = max(sealPeak, hp.Stop())
		edges, spills = st.EdgesEmitted.Load(), st.Budget.TableSpills.Load()
		done()
	}
	if edges != 1000*1000+2000 {
		b.Fatalf("%d edges emitted, want %d", edges, 1000*1000+2000)
	}
	b.ReportMetric(float64(edges), "edges")
	b.ReportMetric(float64(spills), "spills")
	b.ReportMetric(float64(peak)/(1<<20), "process-peak-heap-MB")
	b.ReportMetric(float64(sealPeak)/(1<<20), "seal-peak-heap-MB")
	b.ReportMetric(proc.Seconds(), "process-s")
	b.ReportMetric(seal.Seconds(), "seal-drain-s")
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-rss-MB")
	b.ReportMetric(float64(len(ev))/1024, "event-KB")
}

// BenchmarkRunGrowth: one run of 49 RUNNING events of 6000 new inputs each
// (one output) then a COMPLETE of 6000 more: 300,000 inputs. The time of
// an event must not grow with the run's size: reports the first and last
// five RUNNING events' median time and their ratio, the COMPLETE's time (it emits the
// whole run: 600,001 edges), the peak live heap and the peak RSS.
//
//	go test ./processor/ -run '^$' -bench BenchmarkRunGrowth -benchtime 1x
func BenchmarkRunGrowth(b *testing.B) {
	const events, per = 50, 6000
	evs := make([][]byte, events)
	for k := range evs {
		typ := "RUNNING"
		if k == events-1 {
			typ = "COMPLETE"
		}
		evs[k] = wideEvent(typ, "r1", k, k*per, per, 1)
	}
	var first, last, complete time.Duration // medians of the first and last 5 RUNNING events
	times := make([]time.Duration, events-1)
	var peak, sealPeak uint64
	var maxEv time.Duration
	for i := 0; i < b.N; i++ {
		s, clk, st, done := benchShard(b)
		hp := startHeapPeak()
		for k, ev := range evs {
			t0 := time.Now()
			if err := s.Process(ctxT(b), []Record{{Seq: seqOf(k + 1), Arrival: clk.Now(), Data: ev}}, false); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t0)
			if k == events-1 {
				complete = d
			} else {
				times[k] = d
			}
			if k < events-1 {
				maxEv = max(maxEv, d)
			}
		}
		first, last = median(times[:5]), median(times[len(times)-5:])
		peak = max(peak, hp.Stop())
		hp = startHeapPeak()
		if err := s.Flush(ctxT(b)); err != nil {
			b.Fatal(err)
		}
		sealPeak = max(sealPeak, hp.Stop())
		if got := st.EdgesEmitted.Load(); got != events*per*2+1 {
			b.Fatalf("%d edges emitted, want %d", got, events*per*2+1)
		}
		if dropped := st.Budget.RunDatasetsDropped.Load(); dropped != 0 {
			b.Fatalf("%d run datasets dropped under the default budget", dropped)
		}
		done()
	}
	b.ReportMetric(float64(first.Microseconds())/1000, "first5-event-ms")
	b.ReportMetric(float64(last.Microseconds())/1000, "last5-event-ms")
	b.ReportMetric(float64(maxEv.Microseconds())/1000, "max-event-ms")
	b.ReportMetric(float64(first)/float64(last), "first/last")
	b.ReportMetric(float64(complete.Microseconds())/1000, "complete-ms")
	b.ReportMetric(float64(peak)/(1<<20), "process-peak-heap-MB")
	b.ReportMetric(float64(sealPeak)/(1<<20), "seal-peak-heap-MB")
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-rss-MB")
	b.ReportMetric(float64(len(evs[0]))/1024, "event-KB")
}

func median(ds []time.Duration) time.Duration {
	c := append([]time.Duration(nil), ds...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c[len(c)/2]
}
