package processor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/sink"
)

// memStore is an in-memory ArchiveStore with S3's semantics for what the
// archive uses: a put replaces the object, a list is in key order.
type memStore struct {
	mu      sync.Mutex
	objects map[string][]byte
	puts    map[string]int
	err     error // returned by every call when set
}

func newMemStore() *memStore {
	return &memStore{objects: map[string][]byte{}, puts: map[string]int{}}
}

func (m *memStore) Put(ctx context.Context, key string, body []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.objects[key] = append([]byte(nil), body...)
	m.puts[key]++
	return nil
}

func (m *memStore) Get(ctx context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	b, ok := m.objects[key]
	if !ok {
		return nil, errors.New("NoSuchKey: " + key)
	}
	return b, nil
}

func (m *memStore) List(ctx context.Context, prefix, startAfter string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	var out []string
	for k := range m.objects {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

// archived is what an archive holds, read back with archive.ReadEvents.
type archived struct {
	events []archive.Row
	dead   []archive.DeadLetterRow
}

func readArchive(t testing.TB, m *memStore, prefix string) archived {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	var a archived
	for k, b := range m.objects {
		switch {
		case strings.HasPrefix(k, prefix+archive.EventsTable+"/"):
			rows, err := archive.ReadEvents(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			a.events = append(a.events, rows...)
		case strings.HasPrefix(k, prefix+archive.DeadLettersTable+"/"):
			rows, err := archive.ReadDeadLetters(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			a.dead = append(a.dead, rows...)
		}
	}
	return a
}

// genStream is a stream with what gen says of each record.
type genStream struct {
	stream
	gen []gen.Record
}

func makeGenStream(t testing.TB, cfg gen.Config, r *rand.Rand) genStream {
	var gs genStream
	if err := gen.Stream(cfg, func(g gen.Record) error {
		gs.gen = append(gs.gen, g)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	gs.stream = makeStream(t, cfg, r)
	return gs
}

// checkArchive checks that a holds each unique valid record of gs exactly
// once (by idempotency key, the row's bytes and position agreeing) and
// each malformed record once, as a dead letter with a reason.
func checkArchive(t testing.TB, gs genStream, a archived) {
	t.Helper()
	wantEv := map[string]int{} // idempotency key -> index of the first copy
	wantDead := map[string]bool{}
	for i, g := range gs.gen {
		rec := gs.recs[i]
		pos := archive.FormatPos(rec.Seq, rec.Sub)
		if g.Malformed != "" {
			wantDead[pos] = true
			continue
		}
		sum := sha256.Sum256(g.Data)
		k := hex.EncodeToString(sum[:])
		if _, ok := wantEv[k]; !ok {
			wantEv[k] = i
		}
	}
	seen := map[string]bool{}
	for _, e := range a.events {
		if seen[e.IdempotencyKey] {
			t.Fatalf("event %s (%s/%d) archived twice", e.IdempotencyKey, e.Sequence, e.SubSequence)
		}
		seen[e.IdempotencyKey] = true
		i, ok := wantEv[e.IdempotencyKey]
		if !ok {
			t.Fatalf("archived event %s/%d is not a valid record of the stream", e.Sequence, e.SubSequence)
		}
		if rec := gs.recs[i]; rec.Seq != e.Sequence || int64(rec.Sub) != e.SubSequence || !bytes.Equal(rec.Data, e.Event) {
			t.Fatalf("event %s archived from %s/%d, want its first copy %s/%d", e.IdempotencyKey, e.Sequence, e.SubSequence, rec.Seq, rec.Sub)
		}
		if e.Shard == "" || e.Kind == "" || e.EventTime.IsZero() || e.ArrivalTime.IsZero() {
			t.Fatalf("event %s/%d lacks columns: %+v", e.Sequence, e.SubSequence, e)
		}
	}
	if len(seen) != len(wantEv) {
		t.Fatalf("archive holds %d unique events, want %d", len(seen), len(wantEv))
	}
	seenDead := map[string]bool{}
	for _, d := range a.dead {
		pos := archive.FormatPos(d.Sequence, uint32(d.SubSequence))
		if seenDead[pos] {
			t.Fatalf("dead letter %s archived twice", pos)
		}
		seenDead[pos] = true
		if !wantDead[pos] {
			t.Fatalf("dead letter %s (%s: %s) is not a malformed record", pos, d.Reason, d.Detail)
		}
		if d.Reason == "" || len(d.Record) == 0 {
			t.Fatalf("dead letter %s without reason or record", pos)
		}
	}
	if len(seenDead) != len(wantDead) {
		t.Fatalf("archive holds %d dead letters, want %d", len(seenDead), len(wantDead))
	}
}

func archiveConfig(t testing.TB, clk *fakeClock, st *Stats, store ArchiveStore) PipelineConfig {
	cfg := testConfig(t, clk, st)
	cfg.Archive = ArchiveConfig{Store: store, Prefix: "lf/", MinBytes: 8 << 10, MaxAge: time.Hour, Backoff: time.Millisecond}
	cfg.Dedup.Shared = &fakeShared{}
	return cfg
}

// startArchiveShard starts a shard with the archive on store, over an
// in-memory Pebble; both are closed when the test ends.
func startArchiveShard(ctx context.Context, t *testing.T, clk *fakeClock, st *Stats, store ArchiveStore) *Shard {
	t.Helper()
	db := openMem(t, vfs.NewMem())
	t.Cleanup(func() { _ = db.Close() })
	s, err := NewShard("shardId-000000000001", db, sink.NewMemory(), archiveConfig(t, clk, st, store))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestArchiveOnce: one shard with small cuts; the archive holds each
// unique valid event once and each malformed record once, the checkpoint
// reaches the end only once everything is archived, and the pins of the
// archive are released.
func TestArchiveOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	gs := makeGenStream(t, gen.Config{Seed: 31, Events: 800, MalformedShare: 0.05}, r)
	ctx := ctxT(t)
	clk := &fakeClock{now: gs.recs[0].Arrival}
	st := &Stats{}
	store := newMemStore()
	s := startArchiveShard(ctx, t, clk, st, store)
	kcl := &kclStore{}
	for _, b := range batches(gs.recs, r, 40) {
		clk.Set(b[len(b)-1].Arrival.Add(time.Second))
		if err := s.Process(ctx, b, false); err != nil {
			t.Fatal(err)
		}
		kcl.take(s)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	kcl.take(s)
	if n := len(s.arc.groups); n != 0 {
		t.Fatalf("%d archive pins left after flush", n)
	}
	checkArchive(t, gs, readArchive(t, store, "lf/"))
	if st.ArchiveCuts.Load() < 2 || st.ArchiveObjects[0].Load() < 2 || st.ArchiveObjects[1].Load() < 1 {
		t.Fatalf("cuts %d, event objects %d, dead-letter objects %d: want several", st.ArchiveCuts.Load(),
			st.ArchiveObjects[0].Load(), st.ArchiveObjects[1].Load())
	}
	if st.ArchivePendingBytes.Load() != 0 || st.ArchiveLag(clk.Now()) != 0 {
		t.Fatalf("pending %d bytes, lag %v after flush", st.ArchivePendingBytes.Load(), st.ArchiveLag(clk.Now()))
	}
}

// TestArchivePinsCheckpoint: while the store fails, the checkpoint stays
// before the first record not archived, whatever the graph acknowledged.
func TestArchivePinsCheckpoint(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	gs := makeGenStream(t, gen.Config{Seed: 32, Events: 300}, r)
	ctx := ctxT(t)
	clk := &fakeClock{now: gs.recs[0].Arrival}
	st := &Stats{}
	store := newMemStore()
	s := startArchiveShard(ctx, t, clk, st, store)
	store.mu.Lock()
	store.err = errors.New("503 SlowDown")
	store.mu.Unlock()
	if err := s.Process(ctx, gs.recs, false); err != nil {
		t.Fatal(err)
	}
	// The graph side drains; the archive cannot.
	fctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := s.Flush(fctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("flush with the store down: %v, want a timeout", err)
	}
	if seq, ok := s.Checkpoint(); ok {
		t.Fatalf("checkpoint moved to %s with nothing archived", seq)
	}
	if st.ArchiveErrors.Load() == 0 || st.ArchivePendingBytes.Load() == 0 {
		t.Fatalf("errors %d, pending %d: want both > 0", st.ArchiveErrors.Load(), st.ArchivePendingBytes.Load())
	}
	store.mu.Lock()
	store.err = nil
	store.mu.Unlock()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if seq, ok := s.Checkpoint(); !ok || len(s.arc.groups) != 0 {
		t.Fatalf("checkpoint %s (moved: %v), %d archive pins once archived", seq, ok, len(s.arc.groups))
	}
	checkArchive(t, gs, readArchive(t, store, "lf/"))
}

// TestArchiveCrash: crash the shard at arbitrary points, with its archive
// drain dying after recording a cut (before the marker) or after the
// marker (before the objects), restarting on the same disk (resume from
// Pebble) or on an empty one (another worker taking over from the KCL
// checkpoint and the markers). Each unique valid event is archived
// exactly once, each dead letter once, and the graph is exact.
func TestArchiveCrash(t *testing.T) {
	seeds, points := 3, 8
	if testing.Short() {
		seeds, points = 2, 4
	}
	for seed := 1; seed <= seeds; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 17))
		gs := makeGenStream(t, gen.Config{Seed: int64(200 + seed), Events: 700, MalformedShare: 0.03}, r)
		want := wantGraph(gs.stream)
		for p := 0; p < points; p++ {
			t.Run("seed="+itoa(seed)+"/point="+itoa(p), func(t *testing.T) {
				kills := []int{r.IntN(len(gs.recs) * 2)}
				store := newMemStore()
				c := &crashRun{t: t, st: gs.stream, r: r, kills: kills, mem: sink.NewMemory(),
					// Both crash points, each resumed from Pebble
					// (p%4 < 2) and taken over on an empty disk.
					sameDisk: func(i int) bool { return (p/2+i)%2 == 0 },
					arc:      store, shared: &fakeShared{},
					arcCrash: func(i int) int {
						if i == 0 {
							return 1 + p%2
						}
						return 0
					}}
				c.run()
				checkArchive(t, gs, readArchive(t, store, "lf/"))
				if d := refmodelCompare(want, graphOf(c.mem)); d != "" {
					t.Fatalf("after %d crash(es): graph differs:\n%s", c.restarts, d)
				}
			})
		}
	}
}

// flakyStore fails its first n calls.
type flakyStore struct {
	*memStore
	mu sync.Mutex
	n  int
}

func (f *flakyStore) List(ctx context.Context, prefix, after string) ([]string, error) {
	f.mu.Lock()
	fail := f.n > 0
	f.n--
	f.mu.Unlock()
	if fail {
		return nil, errors.New("503 SlowDown")
	}
	return f.memStore.List(ctx, prefix, after)
}

// TestArchiveTakeOverRetries: a start without local state retries the
// read of the cut markers briefly, then fails (the worker restarts)
// rather than archive without knowing them.
func TestArchiveTakeOverRetries(t *testing.T) {
	ctx := ctxT(t)
	clk := &fakeClock{now: time.Unix(1767225600, 0)}
	for _, c := range []struct {
		fails int
		ok    bool
	}{{2, true}, {1000, false}} {
		db := openMem(t, vfs.NewMem())
		st := &Stats{}
		s, err := NewShard("shardId-000000000001", db, sink.NewMemory(), archiveConfig(t, clk, st, &flakyStore{memStore: newMemStore(), n: c.fails}))
		if err != nil {
			t.Fatal(err)
		}
		err = s.Start(ctx, "")
		s.Close()
		db.Close()
		if (err == nil) != c.ok {
			t.Fatalf("%d failures: start %v, want ok=%v", c.fails, err, c.ok)
		}
		if st.ArchiveErrors.Load() == 0 {
			t.Fatalf("%d failures: no error counted", c.fails)
		}
	}
}

// TestArchiveResumeRecordedCut: the archive drain dies after recording a
// cut in Pebble (before its marker), or after its marker (before its
// objects); the process crashes (only what Pebble synced survives) and
// restarts on the same disk, resuming from Pebble: it finishes that cut
// as recorded (same first and last record, same object keys) and the
// archive holds each record once.
func TestArchiveResumeRecordedCut(t *testing.T) {
	for _, crashAt := range []int{crashAfterRecord, crashAfterMarker} {
		t.Run(fmt.Sprint("crashAt=", crashAt), func(t *testing.T) {
			r := rand.New(rand.NewPCG(9, uint64(crashAt)))
			gs := makeGenStream(t, gen.Config{Seed: 41, Events: 400, MalformedShare: 0.05}, r)
			ctx := ctxT(t)
			clk := &fakeClock{now: gs.recs[0].Arrival}
			store := newMemStore()
			shared := &fakeShared{}
			mfs := vfs.NewCrashableMem()
			const id = "shardId-000000000003"
			cfgOf := func(st *Stats) PipelineConfig {
				cfg := archiveConfig(t, clk, st, store)
				cfg.Dedup.Shared = shared
				return cfg
			}

			db := openMem(t, mfs)
			s, err := NewShard(id, db, sink.NewMemory(), cfgOf(&Stats{}))
			if err != nil {
				t.Fatal(err)
			}
			s.arc.d.crashAt = crashAt
			if err := s.Start(ctx, ""); err != nil {
				t.Fatal(err)
			}
			half := len(gs.recs) / 2
			for half < len(gs.recs) && gs.recs[half].Seq == gs.recs[half-1].Seq {
				half++
			}
			if err := s.Process(ctx, gs.recs[:half], false); err != nil {
				t.Fatal(err)
			}
			// Flush until the cut fails at crashAt.
			fctx, cancel := context.WithCancel(ctx)
			go func() {
				select {
				case <-s.arc.d.hit:
				case <-ctx.Done():
				}
				cancel()
			}()
			_ = s.Flush(fctx)
			cancel()
			if !s.arc.d.crashed.Load() {
				t.Fatal("the archive drain did not reach the crash point")
			}
			s.Abandon()
			recorded := recordedCut(t, db, id)
			next := mfs.CrashClone(vfs.CrashCloneCfg{})
			closeQuietly(db)
			markers, _ := store.List(ctx, archive.CutPrefix("lf/", id), "")
			if want := map[int]int{crashAfterRecord: 0, crashAfterMarker: 1}[crashAt]; len(markers) != want {
				t.Fatalf("%d markers before the restart, want %d", len(markers), want)
			}

			db = openMem(t, next)
			defer db.Close()
			st := &Stats{}
			s, err = NewShard(id, db, sink.NewMemory(), cfgOf(st))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// An earlier KCL checkpoint: everything after it comes again.
			kcl := gs.recs[0].Seq
			if err := s.Start(ctx, kcl); err != nil {
				t.Fatal(err)
			}
			if !s.Resumed() {
				t.Fatal("did not resume from Pebble")
			}
			if err := s.Process(ctx, feedFrom(gs.recs, kcl), false); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			checkArchive(t, gs, readArchive(t, store, "lf/"))
			for _, k := range recorded.Objects {
				if _, err := store.Get(ctx, k); err != nil {
					t.Fatalf("object %s of the recorded cut %s..%s: %v", k, recorded.First, recorded.Last, err)
				}
			}
			seq, sub, _ := archive.ParsePos(recorded.Last)
			if _, err := store.Get(ctx, archive.CutKey("lf/", id, seq, sub)); err != nil {
				t.Fatalf("marker of the recorded cut: %v", err)
			}
		})
	}
}

// recordedCut returns the cut recorded in Pebble (there must be one).
func recordedCut(t *testing.T, db *pebble.DB, shard string) archive.Cut {
	t.Helper()
	p := checkpoint.ArchiveCutPrefix(shard)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: checkpoint.PrefixEnd(p)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if !it.First() {
		t.Fatal("no cut recorded in Pebble")
	}
	c, err := archive.UnmarshalCut(it.Value())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
