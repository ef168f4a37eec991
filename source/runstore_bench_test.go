package source

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/window"
)

// sizingStore wraps a RunStore and measures what goes through it.
type sizingStore struct {
	processor.RunStore
	items, bytes, maxBytes atomic.Int64
}

func (s *sizingStore) Put(ctx context.Context, items []processor.RunItem) error {
	for _, it := range items {
		n := int64(len(it.Value))
		s.items.Add(1)
		s.bytes.Add(n)
		if n > s.maxBytes.Load() {
			s.maxBytes.Store(n)
		}
	}
	return s.RunStore.Put(ctx, items)
}

// mapRunStore is a RunStore in a map (no I/O).
type mapRunStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *mapRunStore) Get(_ context.Context, ids []string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for _, id := range ids {
		if v, ok := s.m[id]; ok {
			out[id] = v
		}
	}
	return out, nil
}

func (s *mapRunStore) Put(_ context.Context, items []processor.RunItem) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range items {
		s.m[it.ID] = it.Value
	}
	return nil
}

type discardWriter struct{}

func (discardWriter) WriteBatch(context.Context, sink.Batch) error { return nil }
func (discardWriter) Close(context.Context) error                  { return nil }

// BenchmarkRunStorePipeline: one shard over generated events, 1,000-record
// batches, a barrier per second of arrival time (the injected clock), with
// no run store, an in-memory one (the processor's own cost: the second
// decode of each batch, encoding the changed runs) and the DynamoDB run
// store on dynalite. It reports the throughput, the store's wall time per
// barrier, the runs written per barrier, the cost of one run update (write
// time per item), the mean and largest encoded run (the item's State
// attribute) and the store reads.
//
//	go test ./source/ -run '^$' -bench BenchmarkRunStorePipeline -benchtime 1x
func BenchmarkRunStorePipeline(b *testing.B) {
	ctx := context.Background()
	recs := benchRecords(20000)
	for _, kind := range []string{"none", "memory", "dynalite"} {
		b.Run("store="+kind, func(b *testing.B) {
			var store *sizingStore
			switch kind {
			case "memory":
				store = &sizingStore{RunStore: &mapRunStore{m: map[string][]byte{}}}
			case "dynalite":
				store = &sizingStore{RunStore: newDynamoRunStore(b, ctx, "bench")}
			}
			st := &processor.Stats{}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				db, err := processor.OpenDB(b.TempDir(), checkpoint.Options{})
				if err != nil {
					b.Fatal(err)
				}
				now := recs[0].Arrival
				cfg := processor.PipelineConfig{Stats: st, BarrierInterval: time.Second, Clock: func() time.Time { return now }}
				if store != nil {
					cfg.RunStore.Store = store
				}
				s, err := processor.NewShard(fmt.Sprintf("shardId-%012d", i), db, discardWriter{}, cfg)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Start(ctx, ""); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for j := 0; j < len(recs); j += 1000 {
					k := min(j+1000, len(recs))
					now = recs[k-1].Arrival
					if err := s.Process(ctx, recs[j:k], false); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Barrier(ctx); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				_ = db.Close()
				b.StartTimer()
			}
			events := float64(len(recs) * b.N)
			bars := float64(st.Barriers.Load())
			b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
			if store == nil {
				return
			}
			writes := float64(st.RunStoreWrites.Load())
			b.ReportMetric(float64(st.RunStoreWriteNanos.Load())/bars/1e6, "store-write-ms/barrier")
			b.ReportMetric(writes/bars, "runs-written/barrier")
			b.ReportMetric(float64(st.RunStoreWriteNanos.Load())/writes/1e3, "µs/run-update")
			b.ReportMetric(writes/events, "run-writes/event")
			b.ReportMetric(float64(store.bytes.Load())/float64(store.items.Load()), "state-bytes/item")
			b.ReportMetric(float64(store.maxBytes.Load()), "max-state-bytes")
			b.ReportMetric(float64(st.RunStoreReads.Load())/events, "run-reads/event")
			b.ReportMetric(float64(st.RunStoreReadNanos.Load())/float64(max(st.RunStoreReadCalls.Load(), 1))/1e6, "read-ms/batch")
		})
	}
}

// benchRecords: n generated events, 1 ms of arrival time apart (1,000
// events a second, a Kinesis shard's write limit), so a barrier folds a
// second of them.
func benchRecords(n int) []processor.Record {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []processor.Record
	for i, g := range gen.Generate(gen.Config{Seed: 3, Events: n, DuplicateShare: -1, MalformedShare: -1}) {
		recs = append(recs, processor.Record{Seq: fmt.Sprintf("49590338271490256608559692538361570959215759%012d", i+1),
			Arrival: t0.Add(time.Duration(i) * time.Millisecond), Data: g.Data})
	}
	return recs
}

// BenchmarkDynamoRunStoreFirstEvent: the latency a run store read adds to
// the first event of a run the shard does not hold (a shard's new owner):
// one BatchGetItem of the batch's unknown runs. Sub-benchmarks by the
// number of unknown runs in the batch.
//
//	go test ./source/ -run '^$' -bench BenchmarkDynamoRunStoreFirstEvent
func BenchmarkDynamoRunStoreFirstEvent(b *testing.B) {
	ctx := context.Background()
	s := newDynamoRunStore(b, ctx, "bench")
	val := make([]byte, 600) // about a run of five events (BenchmarkRunStorePipeline: state-bytes/item)
	var items []processor.RunItem
	for i := 0; i < 1000; i++ {
		items = append(items, processor.RunItem{ID: fmt.Sprintf("run-%04d", i), Value: val, Status: "open", Job: "n/j", Shard: "s", Expires: time.Now().Add(time.Hour)})
	}
	if err := s.Put(ctx, items); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 10, 100, 500} {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			ids := make([]string, n)
			for i := 0; i < b.N; i++ {
				for k := range ids {
					ids[k] = items[(i*n+k)%len(items)].ID
				}
				got, err := s.Get(ctx, ids)
				if err != nil || len(got) != n {
					b.Fatalf("got %d of %d: %v", len(got), n, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/batch")
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "runs-read/s")
		})
	}
	b.Run("put-100", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := s.Put(ctx, items[:100]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(100*b.N), "µs/run-update")
	})
}

// BenchmarkRunStoreBarrier: the wall time of one barrier after a second of
// a shard's records (1,000 generated events) with no run store, an
// in-memory one and DynamoDB on dynalite: what the store adds to the
// barrier (its write comes before the Pebble commit). Each op processes
// the next 1,000 records (not timed, no barrier inside: the barrier
// interval is longer than the stream), then times Barrier.
//
//	go test ./source/ -run '^$' -bench BenchmarkRunStoreBarrier -benchtime 20x
func BenchmarkRunStoreBarrier(b *testing.B) {
	ctx := context.Background()
	recs := benchRecords(30000)
	for _, kind := range []string{"none", "memory", "dynalite"} {
		b.Run("store="+kind, func(b *testing.B) {
			if b.N*1000 > len(recs) {
				b.Fatalf("at most %dx", len(recs)/1000)
			}
			st := &processor.Stats{}
			db, err := processor.OpenDB(b.TempDir(), checkpoint.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			now := recs[0].Arrival
			cfg := processor.PipelineConfig{Stats: st, BarrierInterval: 1000 * time.Hour, Clock: func() time.Time { return now },
				Budgets: processor.Budgets{MaxOpenKeys: 1 << 22}, Window: processor.WindowConfig{Config: window.Config{Size: time.Hour}}}
			switch kind {
			case "memory":
				cfg.RunStore.Store = &mapRunStore{m: map[string][]byte{}}
			case "dynalite":
				cfg.RunStore.Store = newDynamoRunStore(b, ctx, "bench")
			}
			s, err := processor.NewShard("shardId-000000000001", db, discardWriter{}, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Start(ctx, ""); err != nil {
				b.Fatal(err)
			}
			var barrier time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				batch := recs[i*1000 : (i+1)*1000]
				now = batch[len(batch)-1].Arrival
				if err := s.Process(ctx, batch, false); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				if err := s.Barrier(ctx); err != nil {
					b.Fatal(err)
				}
				barrier += time.Since(t0)
			}
			b.ReportMetric(float64(barrier.Microseconds())/1e3/float64(b.N), "barrier-ms")
			if w := st.RunStoreWrites.Load(); w > 0 {
				b.ReportMetric(float64(w)/float64(b.N), "runs-written/barrier")
				b.ReportMetric(float64(st.RunStoreWriteNanos.Load())/float64(w)/1e3, "µs/run-update")
			}
		})
	}
}
