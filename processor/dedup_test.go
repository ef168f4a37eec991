package processor

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/sink"
)

// tuneDedup sets the sizes of s's dedup set (before Start): o's non-zero
// fields, the others as configured.
func tuneDedup(s *Shard, o dedupOptions) {
	if o == (dedupOptions{}) {
		return
	}
	if o.maxBytes == 0 {
		o.maxBytes = s.dedup.opts.maxBytes
	}
	s.dedup.setOptions(o)
}

// The randomized and crash tests again, with a tiny recent tier: almost
// every hash lives in the old tier (fingerprints + Pebble Get), across
// barriers, resumes and crashes.
func TestRandomizedAgainstReferenceOldTierDedup(t *testing.T) {
	randomizedAgainstReference(t, dedupOptions{recentMax: 3})
}

func TestCrashAtArbitraryPointsOldTierDedup(t *testing.T) {
	crashAtArbitraryPoints(t, dedupOptions{recentMax: 3})
}

// The randomized and crash tests again, with a tiny recent tier and a
// dedup memory budget of 32 fingerprint slots (16 at least): the old tier
// spills to Pebble and comes back as entries expire, across barriers,
// resumes and crashes, and the graph still matches the reference.
func TestRandomizedAgainstReferenceDedupBudget(t *testing.T) {
	randomizedAgainstReference(t, dedupOptions{recentMax: 3, minSlots: 16, maxBytes: 128})
}

func TestCrashAtArbitraryPointsDedupBudget(t *testing.T) {
	crashAtArbitraryPoints(t, dedupOptions{recentMax: 3, minSlots: 16, maxBytes: 128})
}

type dedupRun struct {
	events, dups, lookups, spills, spilledLookups int64
	peak                                          int64 // largest old-tier table, bytes
	maxMem                                        int64 // largest memBytes() seen after a barrier
	spilledAtEnd                                  bool
}

// runDedupStream processes a stream with duplicates, and a prefix resent
// much later (some hashes expired, some not), with a short TTL so entries
// expire from both tiers while duplicates keep coming.
func runDedupStream(t *testing.T, o dedupOptions, events int) dedupRun {
	r := rand.New(rand.NewPCG(5, 5))
	st := makeStream(t, gen.Config{Seed: 5, Events: events, DuplicateShare: 0.3}, r)
	last := st.recs[len(st.recs)-1]
	for i := 0; i < 600; i++ {
		rec := st.recs[i]
		rec.Seq = seqOf(100000 + i)
		rec.Sub = 0
		rec.Arrival = last.Arrival.Add(time.Duration(i) * 100 * time.Millisecond)
		st.recs = append(st.recs, rec)
	}
	clk := &fakeClock{now: st.recs[0].Arrival}
	stats := &Stats{}
	cfg := testConfig(t, clk, stats)
	cfg.Dedup.TTL = 40 * time.Second
	cfg.Budgets.MaxOpenKeys = 200
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	s, err := NewShard("shardId-000000000001", db, sink.NewMemory(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tuneDedup(s, o)
	ctx := ctxT(t)
	if err := s.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var res dedupRun
	for _, b := range batches(st.recs, r, 40) {
		clk.Set(b[len(b)-1].Arrival)
		if err := s.Process(ctx, b, false); err != nil {
			t.Fatal(err)
		}
		if err := s.Barrier(ctx); err != nil {
			t.Fatal(err)
		}
		res.maxMem = max(res.maxMem, s.dedup.memBytes())
	}
	res.events, res.dups, res.lookups = stats.Events.Load(), stats.Duplicates.Load(), stats.DedupLookups.Load()
	res.spills, res.spilledLookups = stats.Budget.DedupSpills.Load(), stats.Budget.DedupSpilledLookups.Load()
	res.peak, res.spilledAtEnd = s.dedup.peak, s.dedup.spilled
	return res
}

// With a short TTL (entries expiring from both tiers while duplicates keep
// coming), a tiny recent tier counts exactly what the all-recent set counts.
func TestDedupTiersAgreeWithTTL(t *testing.T) {
	a := runDedupStream(t, dedupOptions{recentMax: 1 << 20}, 3000)
	b := runDedupStream(t, dedupOptions{recentMax: 2}, 3000)
	if a.events != b.events || a.dups != b.dups {
		t.Fatalf("events/duplicates: all recent %d/%d, old tier %d/%d", a.events, a.dups, b.events, b.dups)
	}
	if a.dups == 0 || b.lookups == 0 {
		t.Fatalf("test exercises nothing: %d duplicates, %d old-tier lookups", a.dups, b.lookups)
	}
	t.Logf("events %d, duplicates %d, old-tier lookups %d", a.events, a.dups, b.lookups)
}

// A stream of distinct payloads much larger than the dedup memory budget:
// the old tier's table never exceeds the budget, the budget bites
// (counted), and every duplicate is still detected (the same counts as an
// unbounded all-recent set). The TTL then brings the old tier back into
// memory.
func TestDedupMemoryBudget(t *testing.T) {
	const budget = 4096 // 1024 slots: 768 fingerprints
	a := runDedupStream(t, dedupOptions{recentMax: 1 << 20}, 4000)
	b := runDedupStream(t, dedupOptions{recentMax: 2, minSlots: 16, maxBytes: budget}, 4000)
	if a.events != b.events || a.dups != b.dups {
		t.Fatalf("events/duplicates: unbounded %d/%d, budget %d/%d", a.events, a.dups, b.events, b.dups)
	}
	if a.events < 2*budget/4 {
		t.Fatalf("stream of %d distinct payloads is not larger than the budget", a.events)
	}
	if b.peak > budget || b.maxMem > budget {
		t.Fatalf("old tier reached %d bytes (after barriers %d), budget %d", b.peak, b.maxMem, budget)
	}
	if b.spills == 0 || b.spilledLookups == 0 {
		t.Fatalf("budget never bit: %d spills, %d spilled lookups", b.spills, b.spilledLookups)
	}
	if b.spilledAtEnd {
		t.Fatal("old tier never came back into memory")
	}
	t.Logf("events %d, duplicates %d; budget %d B: peak %d B, %d spills, %d Pebble lookups while spilled",
		b.events, b.dups, budget, b.peak, b.spills, b.spilledLookups)
}

func TestFPTable(t *testing.T) {
	var tb fpTable
	r := rand.New(rand.NewPCG(1, 2))
	ref := map[uint32]int{}
	for i := 0; i < 200000; i++ {
		v := uint32(r.IntN(5000)) << 20 // collisions and long runs on purpose
		if v == 0 {
			v = 1
		}
		if r.IntN(3) == 0 {
			tb.remove(v)
			if ref[v] > 0 {
				ref[v]--
			}
		} else {
			tb.insert(v)
			ref[v]++
		}
		if i%997 == 0 {
			n := 0
			for k, c := range ref {
				n += c
				if tb.contains(k) != (c > 0) {
					t.Fatalf("step %d: contains(%x) = %v, count %d", i, k, !(c > 0), c)
				}
			}
			if n != tb.n {
				t.Fatalf("n = %d, want %d", tb.n, n)
			}
		}
	}
}

// BenchmarkDedupSpilled: the cost of a new payload's dedup check with
// 200,000 hashes in the old tier, in memory (fingerprint table) and
// spilled (a Pebble Get per recent-tier miss), Pebble on disk.
func BenchmarkDedupSpilled(b *testing.B) {
	for _, spilled := range []bool{false, true} {
		b.Run(map[bool]string{false: "table", true: "spilled"}[spilled], func(b *testing.B) {
			db, err := OpenDB(b.TempDir(), checkpoint.Options{Logger: testLogger(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			budget := int64(-1)
			if spilled {
				budget = int64(fpMinSlots) * 4
			}
			d := newDedupSet("shardId-000000000001", db, &Stats{}, testLogger(b), budget)
			d.setOptions(dedupOptions{recentMax: 16, maxBytes: budget})
			r := rand.New(rand.NewPCG(1, 1))
			for i := 0; i < 200_000; i++ {
				var h [16]byte
				binary.BigEndian.PutUint64(h[:8], r.Uint64())
				binary.BigEndian.PutUint64(h[8:], r.Uint64())
				d.add(h, int64(i))
				if len(d.added) == 10_000 {
					batch := db.NewBatch()
					if err := d.writeTo(batch, 0); err != nil {
						b.Fatal(err)
					}
					if err := batch.Commit(pebble.Sync); err != nil {
						b.Fatal(err)
					}
					_ = batch.Close()
					d.afterCommit()
				}
			}
			if d.spilled != spilled {
				b.Fatalf("spilled = %v, want %v", d.spilled, spilled)
			}
			b.ResetTimer()
			hits := 0
			for i := 0; i < b.N; i++ {
				var h [16]byte
				binary.BigEndian.PutUint64(h[:8], r.Uint64())
				binary.BigEndian.PutUint64(h[8:], r.Uint64())
				if d.seen(&h) {
					hits++
				}
			}
			if hits != 0 {
				b.Fatalf("%d random hashes seen", hits)
			}
			b.ReportMetric(float64(d.old.bytes()), "old-tier-bytes")
		})
	}
}
