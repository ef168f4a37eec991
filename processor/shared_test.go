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
)

// fakeShared is an in-memory SharedDedup with the Redis store's semantics
// (SET NX GET): the first owner of a key stays.
type fakeShared struct {
	mu    sync.Mutex
	owner map[[32]byte]string
	err   error // returned by Claim when set
	calls int
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
		if p, ok := f.owner[c.Key]; ok {
			c.Prior = p
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
	cfg.SharedDedup = shared
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
