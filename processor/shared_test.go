package processor

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// fakeShared is an in-memory SharedDedup with the Redis store's semantics
// (SET NX GET): the first owner of a key stays.
type fakeShared struct {
	mu      sync.Mutex
	owner   map[[32]byte]string
	counted map[string]bool // positions whose duplicate was counted
	err     error           // returned by Claim when set
	calls   int
}

func (f *fakeShared) Claim(_ context.Context, cs []SharedClaim) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return f.err
	}
	if f.owner == nil {
		f.owner = map[[32]byte]string{}
	}
	for i := range cs {
		c := &cs[i]
		c.Count = false
		if p, ok := f.owner[c.Key]; ok {
			c.Prior = p
			if p != c.Owner && !f.counted[c.Owner] {
				if f.counted == nil {
					f.counted = map[string]bool{}
				}
				f.counted[c.Owner] = true
				c.Count = true
			}
		} else {
			f.owner[c.Key] = c.Owner
			c.Prior = ""
		}
	}
	return nil
}

// sharedShard starts a shard over a fresh in-memory DB with shared as its
// shared tier.
func sharedShard(t *testing.T, id string, shared SharedDedup, st *Stats) *Shard {
	t.Helper()
	clk := &fakeClock{}
	cfg := testConfig(t, clk, st)
	cfg.Dedup.Shared = shared
	db := openMem(t, vfs.NewMem())
	s, err := NewShard(id, db, sink.NewMemory(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctxT(t), ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Abandon(); db.Close() })
	return s
}

// uniqueStream is a gen stream without duplicates.
func uniqueStream(t *testing.T, seed uint64, n int) stream {
	return makeStream(t, gen.Config{Seed: int64(seed), Events: n, DuplicateShare: -1, MalformedShare: -1}, rand.New(rand.NewPCG(seed, seed)))
}

// TestSharedDedupCountsDuplicateSeenByOtherShard: a record first seen on
// shard A and later (another sequence number: a producer retry) on shard B,
// another worker's: B's local tier cannot know it, the shared tier does.
func TestSharedDedupCountsDuplicateSeenByOtherShard(t *testing.T) {
	shared := &fakeShared{}
	stA, stB := &Stats{}, &Stats{}
	a := sharedShard(t, "shardId-000000000001", shared, stA)
	b := sharedShard(t, "shardId-000000000002", shared, stB)
	st := uniqueStream(t, 11, 400)
	ctx := ctxT(t)
	if err := a.Process(ctx, st.recs, false); err != nil {
		t.Fatal(err)
	}
	// B gets every third of A's records again, under B's own sequence
	// numbers, between records of its own.
	own := uniqueStream(t, 12, 200)
	var recs []Record
	retries := 0
	for i := range own.recs {
		recs = append(recs, own.recs[i])
		if i < len(st.recs) && i%3 == 0 {
			r := st.recs[i]
			r.Seq, r.Sub = seqOf(900000+i), 0
			recs = append(recs, r)
			retries++
		}
	}
	// Renumber so B's stream is in order.
	for i := range recs {
		recs[i].Seq, recs[i].Sub = seqOf(i+1), 0
	}
	for _, part := range batches(recs, rand.New(rand.NewPCG(1, 2)), 50) {
		if err := b.Process(ctx, part, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := stB.Duplicates.Load(); got != int64(retries) {
		t.Fatalf("B counted %d duplicates, want the %d records A had seen", got, retries)
	}
	if got := stB.SharedDedupDuplicates.Load(); got != int64(retries) {
		t.Fatalf("B's shared-tier duplicates = %d, want %d (the local tier's shortfall)", got, retries)
	}
	if stA.Duplicates.Load() != 0 {
		t.Fatalf("A counted %d duplicates in a stream without any", stA.Duplicates.Load())
	}
	if got, want := stB.SharedDedupClaims.Load(), int64(len(recs)); got != want {
		t.Fatalf("B claimed %d keys, want one per record (%d)", got, want)
	}
}

// TestSharedDedupReplayIsNotDuplicate: a worker processes records (so
// they are claimed) and dies before any barrier; the next owner of the
// shard replays the same records from the same positions. They are the
// same records, not duplicates: skipping them would lose their lineage.
func TestSharedDedupReplayIsNotDuplicate(t *testing.T) {
	shared := &fakeShared{}
	st := uniqueStream(t, 21, 300)
	ctx := ctxT(t)
	first := sharedShard(t, "shardId-000000000001", shared, &Stats{})
	if err := first.Process(ctx, st.recs, false); err != nil {
		t.Fatal(err)
	}
	first.Abandon()
	stats := &Stats{}
	next := sharedShard(t, "shardId-000000000001", shared, stats)
	if err := next.Process(ctx, st.recs, false); err != nil {
		t.Fatal(err)
	}
	if stats.Duplicates.Load() != 0 || stats.Events.Load() != int64(len(st.recs)) {
		t.Fatalf("replay: %d duplicates, %d events; want 0 and %d", stats.Duplicates.Load(), stats.Events.Load(), len(st.recs))
	}
}

// TestSharedDedupFailureFallsBackToLocal: a failing shared tier never
// stops records; they are counted as decided by the local tier alone, and
// the degraded flag follows the last claim.
func TestSharedDedupFailureFallsBackToLocal(t *testing.T) {
	shared := &fakeShared{err: errors.New("connection refused")}
	stats := &Stats{}
	s := sharedShard(t, "shardId-000000000001", shared, stats)
	st := makeStream(t, gen.Config{Seed: 31, Events: 300, DuplicateShare: 0.2}, rand.New(rand.NewPCG(31, 31)))
	half := len(st.recs) / 2
	for half < len(st.recs) && st.recs[half].Seq == st.recs[half-1].Seq {
		half++
	}
	ctx := ctxT(t)
	if err := s.Process(ctx, st.recs[:half], false); err != nil {
		t.Fatal(err)
	}
	if !stats.SharedDedupDegraded() || stats.SharedDedupFallbacks.Load() != int64(half) {
		t.Fatalf("after a failed claim: degraded=%v fallbacks=%d, want true and %d",
			stats.SharedDedupDegraded(), stats.SharedDedupFallbacks.Load(), half)
	}
	shared.mu.Lock()
	shared.err = nil
	shared.mu.Unlock()
	if err := s.Process(ctx, st.recs[half:], false); err != nil {
		t.Fatal(err)
	}
	if stats.SharedDedupDegraded() {
		t.Fatal("still degraded after a successful claim")
	}
	// Every record went through: the local tier found the duplicates.
	local := &Stats{}
	ref := sharedShard(t, "shardId-000000000009", nil, local)
	if err := ref.Process(ctx, st.recs, false); err != nil {
		t.Fatal(err)
	}
	if stats.Events.Load() != local.Events.Load() || stats.Duplicates.Load() != local.Duplicates.Load() {
		t.Fatalf("with fallback: %d events %d duplicates; local tier alone: %d, %d",
			stats.Events.Load(), stats.Duplicates.Load(), local.Events.Load(), local.Duplicates.Load())
	}
	if local.Duplicates.Load() == 0 {
		t.Fatal("stream has no duplicates: the comparison proves nothing")
	}
}

// TestSharedDedupReplayCountsDuplicatesOnce: a stream with producer
// retries is processed by one worker that dies before any barrier, then
// replayed from the same positions by the shard's next owner (the join
// scenario's lease move). Each duplicate counts once over both workers:
// the shared tier remembers which positions were counted.
func TestSharedDedupReplayCountsDuplicatesOnce(t *testing.T) {
	shared := &fakeShared{}
	st := makeStream(t, gen.Config{Seed: 23, Events: 400, DuplicateShare: 0.2, MalformedShare: -1}, rand.New(rand.NewPCG(23, 23)))
	want := refmodel.Build(st.data, refmodel.Options{Policy: "strict"})
	if want.Duplicates == 0 {
		t.Fatal("the stream has no duplicates")
	}
	ctx := ctxT(t)
	stA, stB := &Stats{}, &Stats{}
	first := sharedShard(t, "shardId-000000000001", shared, stA)
	// The first owner gets the first two thirds before it dies.
	cut := 2 * len(st.recs) / 3
	for cut < len(st.recs) && st.recs[cut].Seq == st.recs[cut-1].Seq {
		cut++
	}
	if err := first.Process(ctx, st.recs[:cut], false); err != nil {
		t.Fatal(err)
	}
	first.Abandon()
	next := sharedShard(t, "shardId-000000000001", shared, stB)
	for _, part := range batches(st.recs, rand.New(rand.NewPCG(3, 4)), 40) {
		if err := next.Process(ctx, part, false); err != nil {
			t.Fatal(err)
		}
	}
	if stA.Duplicates.Load() == 0 {
		t.Fatal("the first owner counted no duplicate: the test proves nothing")
	}
	if got := stA.Duplicates.Load() + stB.Duplicates.Load(); got != int64(want.Duplicates) {
		t.Fatalf("duplicates summed over both owners = %d (%d + %d), want the %d injected",
			got, stA.Duplicates.Load(), stB.Duplicates.Load(), want.Duplicates)
	}
	if stB.Events.Load() != int64(len(st.recs)-want.Duplicates) {
		t.Fatalf("next owner processed %d events, want every non-duplicate record (%d)",
			stB.Events.Load(), len(st.recs)-want.Duplicates)
	}
}
