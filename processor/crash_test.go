package processor

import (
	"errors"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// crashRun drives one shard over st, crashing it at the given points
// (cumulative records fed, including re-fed ones). A crash abandons the
// shard without Close or barrier and keeps only what Pebble synced
// (MemFS.CrashClone); the restart reads the KCL checkpoint the shard had
// written and re-feeds everything after it. With sameDisk false the
// restart happens on an empty disk, as on another worker. inject, if set,
// wraps the file system of the first incarnation.
type crashRun struct {
	t        *testing.T
	st       stream
	r        *rand.Rand
	kills    []int
	sameDisk func(i int) bool
	// dieAt, if > 0, makes the first incarnation die at its dieAt-th
	// file-system write operation (errorfs): the disk keeps exactly what
	// was synced before that operation, and nothing the process did after
	// it counts (no KCL checkpoint).
	dieAt   int32
	mem     *sink.Memory
	runs    semantics.RunRecords // -runs of every incarnation ("" = all)
	refresh bool                 // 1 s windows with a 3 s refresh lane
	// store, if set, is every incarnation's run store; maxRuns (0: the
	// default) their MaxRuns.
	store   RunStore
	maxRuns int
	// dedup: every incarnation's dedup set sizes (zero: the defaults).
	dedup    dedupOptions
	restarts int
	// arc, if set, turns the archive on in every incarnation (with the
	// shared dedup tier shared); arcCrash(i) is where incarnation i's
	// archive drain dies (archiveDrain.crashAt; 0: never).
	arc      ArchiveStore
	shared   *fakeShared
	arcCrash func(inc int) int
}

func (c *crashRun) run() {
	t := c.t
	ctx := ctxT(t)
	clk := &fakeClock{now: c.st.recs[0].Arrival}
	kcl := &kclStore{}
	mfs := vfs.NewCrashableMem()
	fed := 0
	for inc := 0; ; inc++ {
		var fs vfs.FS = mfs
		var dead atomic.Bool
		var snap *vfs.MemFS
		if inc == 0 && c.dieAt > 0 {
			var count atomic.Int32
			under := mfs
			fs = errorfs.Wrap(mfs, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if op.Kind.ReadOrWrite() == errorfs.OpIsWrite && count.Add(1) == c.dieAt {
					snap = under.CrashClone(vfs.CrashCloneCfg{})
					dead.Store(true)
				}
				return nil
			}))
		}
		db := openMem(t, fs)
		cfg := testConfig(t, clk, &Stats{})
		cfg.Semantics.Runs = c.runs
		cfg.RunStore.Store, cfg.Budgets.MaxRuns = c.store, c.maxRuns
		cfg.Budgets.MaxOpenKeys = 30 + c.r.IntN(300)
		cfg.Drain.OutboxCap = 1 + c.r.IntN(4)
		if c.refresh {
			cfg.Window.Size, cfg.Window.Refresh = time.Second, 3*time.Second
		}
		if c.arc != nil {
			cfg.Archive = ArchiveConfig{Store: c.arc, Prefix: "lf/", MinBytes: int64(2<<10 + c.r.IntN(64<<10)), MaxAge: time.Hour,
				Backoff: time.Millisecond}
			cfg.Dedup.Shared = c.shared
		}
		s, err := NewShard("shardId-000000000007", db, c.mem, cfg)
		if err != nil {
			t.Fatal(err)
		}
		tuneDedup(s, c.dedup)
		arcCrash := 0
		if c.arc != nil && c.arcCrash != nil {
			arcCrash = c.arcCrash(inc)
			s.arc.d.crashAt = arcCrash
		}
		arcDied := func() bool { return arcCrash != 0 && s.arc.d.crashed.Load() }
		crashed := false
		crash := func() {
			s.Abandon()
			next := snap
			if !dead.Load() {
				next = mfs.CrashClone(vfs.CrashCloneCfg{})
			}
			closeQuietly(db)
			if c.sameDisk(inc) {
				mfs = next
			} else {
				mfs = vfs.NewCrashableMem()
			}
			crashed = true
			c.restarts++
		}
		if err := s.Start(ctx, kcl.seq); err != nil {
			t.Fatalf("start: %v", err)
		}
		if dead.Load() {
			crash()
			continue
		}
		for _, b := range batches(feedFrom(c.st.recs, kcl.seq), c.r, 40) {
			if len(c.kills) > 0 && fed >= c.kills[0] {
				c.kills = c.kills[1:]
				crash()
				break
			}
			fed += len(b)
			clk.Set(b[len(b)-1].Arrival.Add(time.Duration(c.r.IntN(2500)) * time.Millisecond))
			if err := s.Process(ctx, b, c.r.IntN(3) == 0); err != nil {
				if !errors.Is(err, ErrShardFailed) {
					t.Fatal(err)
				}
				crash()
				break
			}
			if c.r.IntN(4) == 0 {
				if err := s.Barrier(ctx); err != nil {
					if !errors.Is(err, ErrShardFailed) {
						t.Fatal(err)
					}
					crash()
					break
				}
			}
			if dead.Load() || arcDied() {
				crash()
				break
			}
			kcl.take(s)
		}
		if crashed {
			continue
		}
		if arcCrash != 0 {
			// Its cuts fail: it cannot flush. Dies at the end instead.
			crash()
			continue
		}
		if err := s.Flush(ctx); err != nil {
			if !errors.Is(err, ErrShardFailed) {
				t.Fatal(err)
			}
			crash()
			continue
		}
		if dead.Load() {
			crash()
			continue
		}
		kcl.take(s)
		s.Close()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
}

func closeQuietly(db *pebble.DB) {
	defer func() { _ = recover() }()
	_ = db.Close()
}

// TestCrashAtArbitraryPoints: crash the pipeline at many points (one or
// two crashes per run, restarting on the same disk or on an empty one) and
// check that the graph is still exactly the reference.
func TestCrashAtArbitraryPoints(t *testing.T) {
	crashAtArbitraryPoints(t, dedupOptions{})
}

// crashAtArbitraryPoints is TestCrashAtArbitraryPoints with the dedup
// sets' sizes dedup (zero: the defaults).
func crashAtArbitraryPoints(t *testing.T, dedup dedupOptions) {
	seeds, points := 4, 16
	if testing.Short() {
		seeds, points = 2, 6
	}
	for seed := 1; seed <= seeds; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		st := makeStream(t, gen.Config{Seed: int64(100 + seed), Events: 600}, r)
		runs := []semantics.RunRecords{semantics.RunsAll, semantics.RunsFailed}[seed%2]
		want := refmodel.Build(st.data, refmodel.Options{Policy: "strict", Runs: string(runs)})
		for p := 0; p < points; p++ {
			t.Run("seed="+itoa(seed)+"/point="+itoa(p), func(t *testing.T) {
				kills := []int{r.IntN(len(st.recs))}
				if p%2 == 1 {
					kills = append(kills, r.IntN(len(st.recs)*2))
					sort.Ints(kills)
				}
				c := &crashRun{t: t, st: st, r: r, kills: kills, mem: sink.NewMemory(), runs: runs, dedup: dedup,
					sameDisk: func(i int) bool { return (p+i)%3 != 0 }, refresh: p%4 >= 2}
				c.run()
				if d := refmodelCompare(want, graphOf(c.mem)); d != "" {
					t.Fatalf("after %d crash(es) at %v: graph differs:\n%s", c.restarts, kills, d)
				}
			})
		}
	}
}

// TestDiskDiesAtOperationI: the process dies at the i-th write operation
// on Pebble's file system (errorfs wrapping a crashable MemFS): the disk
// keeps what was synced before it, the KCL checkpoint what was written
// before it. The restart resumes from that disk and re-feeds from that
// checkpoint. For many i the final graph must equal the reference.
//
// (Returning an error from the file system instead is not survivable in
// process: Pebble panics with a mutex held when a WAL sync fails during a
// WAL rotation, so a real disk failure means a process restart, which is
// what this models.)
func TestDiskDiesAtOperationI(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	st := makeStream(t, gen.Config{Seed: 77, Events: 500}, r)
	want := wantGraph(st)
	n, step := 90, 1
	if testing.Short() {
		n, step = 90, 4
	}
	hit := 0
	for i := 1; i <= n; i += step {
		t.Run("op="+itoa(i), func(t *testing.T) {
			c := &crashRun{t: t, st: st, r: rand.New(rand.NewPCG(uint64(i), 3)), mem: sink.NewMemory(),
				dieAt: int32(i), sameDisk: func(int) bool { return true }}
			c.run()
			if c.restarts > 0 {
				hit++
			}
			if d := refmodelCompare(want, graphOf(c.mem)); d != "" {
				t.Fatalf("died at op %d (%d restarts): graph differs:\n%s", i, c.restarts, d)
			}
		})
	}
	if hit == 0 {
		t.Fatal("the process never died: the test proves nothing")
	}
	t.Logf("%d of %d runs died and restarted", hit, (n+step-1)/step)
}
