package processor

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/sink"
)

func withRecentMax(t *testing.T, n int) {
	old := dedupRecentMax
	dedupRecentMax = n
	t.Cleanup(func() { dedupRecentMax = old })
}

// The randomized and crash tests again, with a tiny recent tier: almost
// every hash lives in the old tier (fingerprints + Pebble Get), across
// barriers, resumes and crashes.
func TestRandomizedAgainstReferenceOldTierDedup(t *testing.T) {
	withRecentMax(t, 3)
	TestRandomizedAgainstReference(t)
}

func TestCrashAtArbitraryPointsOldTierDedup(t *testing.T) {
	withRecentMax(t, 3)
	TestCrashAtArbitraryPoints(t)
}

// With a short TTL (entries expiring from both tiers while duplicates keep
// coming), a tiny recent tier counts exactly what the all-recent set counts.
func TestDedupTiersAgreeWithTTL(t *testing.T) {
	run := func(recent int) (events, dups, lookups int64) {
		withRecentMax(t, recent)
		r := rand.New(rand.NewPCG(5, 5))
		st := makeStream(t, gen.Config{Seed: 5, Events: 3000, DuplicateShare: 0.3}, r)
		// Resend a prefix much later: some hashes expired, some not.
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
		cfg.DedupTTL = 40 * time.Second
		cfg.MaxOpenKeys = 200
		db := openMem(t, vfs.NewMem())
		defer db.Close()
		s, err := NewShard("shardId-000000000001", db, sink.NewMemory(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		if err := s.Start(ctx, ""); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, b := range batches(st.recs, r, 40) {
			clk.Set(b[len(b)-1].Arrival)
			if err := s.Process(ctx, b, false); err != nil {
				t.Fatal(err)
			}
			if err := s.Barrier(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return stats.Events.Load(), stats.Duplicates.Load(), stats.DedupLookups.Load()
	}
	e1, d1, _ := run(1 << 20)
	e2, d2, l2 := run(2)
	if e1 != e2 || d1 != d2 {
		t.Fatalf("events/duplicates: all recent %d/%d, old tier %d/%d", e1, d1, e2, d2)
	}
	if d1 == 0 || l2 == 0 {
		t.Fatalf("test exercises nothing: %d duplicates, %d old-tier lookups", d1, l2)
	}
	t.Logf("events %d, duplicates %d, old-tier lookups %d", e1, d1, l2)
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
