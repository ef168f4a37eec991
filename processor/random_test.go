package processor

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// TestRandomizedAgainstReference feeds generated streams through one shard
// with random batch sizes, random barrier points, random idle periods and
// a small in-memory table (forced barriers), and compares the graph the
// sink received with the reference model: same vertices, same edges with
// the same properties, same invalid and duplicate counts.
func TestRandomizedAgainstReference(t *testing.T) {
	randomizedAgainstReference(t, dedupOptions{})
}

// randomizedAgainstReference is TestRandomizedAgainstReference with the
// dedup sets' sizes dedup (zero: the defaults).
func randomizedAgainstReference(t *testing.T, dedup dedupOptions) {
	seeds := 50
	if testing.Short() {
		seeds = 10
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run("seed="+itoa(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 7))
			st := makeStream(t, gen.Config{Seed: int64(seed), Events: 400 + r.IntN(800)}, r)
			runs := []semantics.RunRecords{semantics.RunsAll, semantics.RunsFailed, semantics.RunsNone}[seed%3]
			want := refmodel.Build(st.data, refmodel.Options{Policy: "strict", Runs: string(runs)})

			clk := &fakeClock{now: st.recs[0].Arrival}
			stats := &Stats{}
			cfg := testConfig(t, clk, stats)
			cfg.Semantics.Runs = runs
			cfg.Budgets.MaxOpenKeys = 20 + r.IntN(500)
			cfg.Drain.OutboxCap = 1 + r.IntN(8)
			cfg.Drain.ChunkRecords = 3 + r.IntN(200)
			if seed%3 == 0 {
				cfg.Window.TimeSource = TimeEvent
			}
			if seed%2 == 0 {
				// 1 s windows and a refresh lane of 2-6 of them: stamp
				// refreshes in windows of their own, the same graph.
				cfg.Window.Size = time.Second
				cfg.Window.Refresh = time.Duration(2+seed%5) * time.Second
			}
			db := openMem(t, vfs.NewMem())
			defer db.Close()
			mem := sink.NewMemory()
			s, err := NewShard("shardId-000000000001", db, mem, cfg)
			if err != nil {
				t.Fatal(err)
			}
			tuneDedup(s, dedup)
			ctx := ctxT(t)
			if err := s.Start(ctx, ""); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			kcl := &kclStore{}
			for _, b := range batches(st.recs, r, 50) {
				clk.Set(b[len(b)-1].Arrival.Add(time.Duration(r.IntN(3000)) * time.Millisecond))
				if err := s.Process(ctx, b, r.IntN(4) == 0); err != nil {
					t.Fatal(err)
				}
				if r.IntN(5) == 0 {
					if err := s.Barrier(ctx); err != nil {
						t.Fatal(err)
					}
				}
				kcl.take(s)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			kcl.take(s)
			// With everything acknowledged only open runs (no terminal event
			// yet) hold the checkpoint back: to the record before the first
			// of the oldest one.
			wantCk := st.recs[len(st.recs)-1].Seq
			for _, run := range s.runs.m {
				if run.Status == semantics.StatusOpen && checkpoint.CompareSeq(run.pin, wantCk) < 0 {
					wantCk = run.pin
				}
			}
			if kcl.seq != wantCk {
				t.Errorf("final checkpoint %s, want %s", kcl.seq, wantCk)
			}
			got := graphOf(mem)
			if d := refmodelCompare(want, got); d != "" {
				t.Fatalf("graph differs from the reference:\n%s", d)
			}
			if inv := stats.InvalidTotal(); inv != int64(want.Invalid) {
				t.Errorf("invalid = %d, want %d", inv, want.Invalid)
			}
			if dup := stats.Duplicates.Load(); dup != int64(want.Duplicates) {
				t.Errorf("duplicates = %d, want %d", dup, want.Duplicates)
			}
			if len(want.Edges) == 0 {
				t.Errorf("reference has no edges: the test proves nothing")
			}
			if cfg.Window.Refresh > 0 && stats.RefreshLane.Load() == 0 {
				t.Errorf("the refresh lane took no record: the seed proves nothing about it")
			}
		})
	}
}
