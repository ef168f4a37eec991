package processor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// memRunStore is an in-memory RunStore for unit tests (the DynamoDB one is
// tested against dynalite in source/). It counts its calls.
type memRunStore struct {
	mu              sync.Mutex
	items           map[string]RunItem
	gets, puts      int
	keysAsked       int
	maxKeysAskedPer int
}

func newMemRunStore() *memRunStore { return &memRunStore{items: map[string]RunItem{}} }

func (m *memRunStore) Get(_ context.Context, ids []string) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	m.keysAsked += len(ids)
	m.maxKeysAskedPer = max(m.maxKeysAskedPer, len(ids))
	out := map[string][]byte{}
	for i, id := range ids {
		if slices.Contains(ids[:i], id) {
			return nil, fmt.Errorf("run %s twice in one Get (DynamoDB refuses it)", id)
		}
		if it, ok := m.items[id]; ok {
			out[id] = append([]byte(nil), it.Value...)
		}
	}
	return out, nil
}

func (m *memRunStore) Put(_ context.Context, items []RunItem) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	seen := map[string]bool{}
	for _, it := range items {
		if seen[it.ID] {
			return fmt.Errorf("run %s twice in one Put (DynamoDB refuses it)", it.ID)
		}
		seen[it.ID] = true
		it.Value = append([]byte(nil), it.Value...)
		m.items[it.ID] = it
	}
	return nil
}

func (m *memRunStore) calls() (gets, puts int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gets, m.puts
}

// TestRunStoreMoves is TestCrashAtArbitraryPoints with a run store: the
// shard crashes or moves (an empty disk: another worker) at random points,
// runs are never pinned, and the graph is still exactly the reference
// model. It checks what the store's being ahead of the checkpoint needs:
// a replayed record whose run the store already holds (even committed)
// gives its edges again.
func TestRunStoreMoves(t *testing.T) {
	seeds, points := 3, 12
	if testing.Short() {
		seeds, points = 2, 5
	}
	for seed := 1; seed <= seeds; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 23))
		st := makeStream(t, gen.Config{Seed: int64(300 + seed), Events: 600}, r)
		runs := []semantics.RunRecords{semantics.RunsAll, semantics.RunsFailed}[seed%2]
		want := refmodel.Build(st.data, refmodel.Options{Policy: "strict", Runs: string(runs)})
		for p := 0; p < points; p++ {
			t.Run("seed="+itoa(seed)+"/point="+itoa(p), func(t *testing.T) {
				kills := []int{r.IntN(len(st.recs))}
				if p%2 == 1 {
					kills = append(kills, r.IntN(len(st.recs)*2))
					sort.Ints(kills)
				}
				store := newMemRunStore()
				c := &crashRun{t: t, st: st, r: r, kills: kills, mem: sink.NewMemory(), runs: runs, store: store,
					sameDisk: func(i int) bool { return (p+i)%3 == 0 }}
				c.run()
				if d := refmodelCompare(want, graphOf(c.mem)); d != "" {
					t.Fatalf("after %d move(s) at %v: graph differs:\n%s", c.restarts, kills, d)
				}
				if len(store.items) == 0 {
					t.Fatal("nothing written to the run store")
				}
			})
		}
	}
}

// TestRunStoreEviction: with a store, MaxRuns only bounds memory: runs
// evicted (even open ones, even with changes not yet in the store) are
// loaded again when their next event comes, and the graph is exactly the
// reference model (without a store the same budget loses edges: counted
// as runs_evicted, checked to show the test bites).
func TestRunStoreEviction(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	st := makeStream(t, gen.Config{Seed: 909, Events: 1500}, r)
	want := refmodel.Build(st.data, refmodel.Options{Policy: "strict", Runs: string(semantics.RunsAll)})
	for _, withStore := range []bool{true, false} {
		t.Run(fmt.Sprintf("store=%v", withStore), func(t *testing.T) {
			c := &crashRun{t: t, st: st, r: rand.New(rand.NewPCG(1, 2)), mem: sink.NewMemory(), runs: semantics.RunsAll, maxRuns: 4,
				sameDisk: func(int) bool { return true }}
			if withStore {
				c.store = newMemRunStore()
			}
			c.run()
			d := refmodelCompare(want, graphOf(c.mem))
			if withStore && d != "" {
				t.Fatalf("graph differs:\n%s", d)
			}
			if !withStore && d == "" {
				t.Fatal("MaxRuns=4 without a store lost nothing: the test does not exercise eviction")
			}
		})
	}
}

// storeShard starts a shard over a fresh in-memory disk with store.
func storeShard(t *testing.T, store RunStore, mem *sink.Memory, st *Stats, clk *fakeClock, kcl string, timeout time.Duration) *Shard {
	t.Helper()
	cfg := testConfig(t, clk, st)
	cfg.RunStore.Store, cfg.Semantics.RunTimeout = store, timeout
	db := openMem(t, vfs.NewMem())
	t.Cleanup(func() { _ = db.Close() })
	s, err := NewShard("shardId-000000000001", db, mem, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctxT(t), kcl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func runEventJSON(typ string, at time.Time, ins, outs []string) []byte {
	list := func(ns []string) string {
		b := "["
		for i, n := range ns {
			if i > 0 {
				b += ","
			}
			b += `{"namespace":"n","name":"` + n + `"}`
		}
		return b + "]"
	}
	return []byte(`{"eventType":"` + typ + `","eventTime":"` + at.UTC().Format(time.RFC3339Nano) + `","run":{"runId":"01930000-0000-7000-8000-00000000000a"},` +
		`"job":{"namespace":"n","name":"spark-3h"},"inputs":` + list(ins) + `,"outputs":` + list(outs) +
		`,"producer":"p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`)
}

// wantLongRunEdges checks that g has exactly the lineage edges of a run of
// job n/spark-3h that read a and b and wrote c.
func longRunEdges() []string {
	ds := func(n string) string { return lineage.DatasetID(lineage.Dataset{Namespace: "n", Name: n}) }
	job := lineage.JobID(lineage.Job{Namespace: "n", Name: "spark-3h"})
	return []string{
		lineage.EdgeID(lineage.EdgeInputTo, ds("a"), job),
		lineage.EdgeID(lineage.EdgeInputTo, ds("b"), job),
		lineage.EdgeID(lineage.EdgeOutputs, job, ds("c")),
		lineage.EdgeID(lineage.EdgeDerives, ds("a"), ds("c")),
		lineage.EdgeID(lineage.EdgeDerives, ds("b"), ds("c")),
	}
}

// TestLongRunThreeHours: a run whose START (inputs a, b) and COMPLETE
// (output c only) are 3 h apart, in event time and in arrival time, with
// traffic every minute in between (windows seal, the injected clock
// follows). With a store, the KCL checkpoint passes the START within a
// window, the shard moves to an empty disk half-way (records after the
// checkpoint only are fed again), and the COMPLETE gives all five edges.
// Without a store (the old 1 h run timeout) the run expires and its
// COMPLETE gives only job->c: checked, so the test shows the gap.
func TestLongRunThreeHours(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	var recs []Record
	add := func(at time.Time, data []byte) {
		recs = append(recs, Record{Seq: seqOf(len(recs) + 1), Arrival: at, Data: data})
	}
	add(t0, runEventJSON("START", t0, []string{"a", "b"}, nil))
	for m := 1; m < 180; m++ {
		at := t0.Add(time.Duration(m) * time.Minute)
		add(at, []byte(`{"eventTime":"`+at.Format(time.RFC3339)+`","dataset":{"namespace":"n","name":"tick`+itoa(m)+`"},"producer":"p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"}`))
	}
	end := t0.Add(3 * time.Hour)
	add(end, runEventJSON("COMPLETE", end, nil, []string{"c"}))
	startSeq := recs[0].Seq

	for _, withStore := range []bool{true, false} {
		t.Run(fmt.Sprintf("store=%v", withStore), func(t *testing.T) {
			ctx := ctxT(t)
			clk := &fakeClock{now: t0}
			mem := sink.NewMemory()
			var store *memRunStore
			var rs RunStore
			if withStore {
				store = newMemRunStore()
				rs = store
			}
			kcl := &kclStore{}
			s := storeShard(t, rs, mem, &Stats{}, clk, "", 0)
			moved, refed := false, 0
			for i := 0; i < len(recs); i++ {
				rec := recs[i]
				clk.Set(rec.Arrival)
				if err := s.Process(ctx, []Record{rec}, true); err != nil {
					t.Fatal(err)
				}
				if err := s.drain.waitEmpty(ctx); err != nil {
					t.Fatal(err)
				}
				kcl.take(s)
				if withStore && !moved && i == 90 {
					// Half-way: the checkpoint is past the START (runs do
					// not pin); the shard moves to an empty disk and gets
					// the records after the checkpoint again.
					if checkpoint.CompareSeq(kcl.seq, startSeq) <= 0 {
						t.Fatalf("checkpoint %s not past the START %s after 90 minutes", kcl.seq, startSeq)
					}
					s.Abandon()
					s = storeShard(t, rs, mem, &Stats{}, clk, kcl.seq, 0)
					moved = true
					next := feedFrom(recs, kcl.seq)
					refed = i + 1 - (len(recs) - len(next))
					i = len(recs) - len(next) - 1
				}
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			got := graphOf(mem)
			present := 0
			for _, id := range longRunEdges() {
				if _, ok := got.Edges[id]; ok {
					present++
				}
			}
			if withStore {
				if present != 5 {
					t.Fatalf("%d of the 5 edges of the 3-hour run in the graph, want all", present)
				}
				// One window (10 s) of records at most was fed again: here
				// one record a minute, so at most one.
				if refed > 1 {
					t.Errorf("%d records fed again after the move, want <= 1 (one window)", refed)
				}
				gets, _ := store.calls()
				t.Logf("store: %d gets, %d keys asked; %d records fed again after the move", gets, store.keysAsked, refed)
				if gets != 2 {
					t.Errorf("%d store reads, want 2 (the START on the first shard, the COMPLETE after the move)", gets)
				}
			} else if present != 1 {
				t.Fatalf("without a store: %d edges, want only job->c (the START's inputs expired after 1 h)", present)
			}
		})
	}
}

// TestRunStoreReadsPerBatch: the unknown runs of one Process call are read
// from the store in one Get, whatever their number, and none for the runs
// the shard holds.
func TestRunStoreReadsPerBatch(t *testing.T) {
	ctx := ctxT(t)
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	clk := &fakeClock{now: t0}
	store := newMemRunStore()
	s := storeShard(t, store, sink.NewMemory(), &Stats{}, clk, "", 0)
	var batch []Record
	for i := 0; i < 50; i++ {
		ev := fmt.Sprintf(`{"eventType":"START","eventTime":"2026-03-01T08:00:00Z","run":{"runId":"r%d"},"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"n","name":"a"}],"producer":"p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`, i%25)
		batch = append(batch, Record{Seq: seqOf(i + 1), Arrival: t0, Data: []byte(ev)})
	}
	if err := s.Process(ctx, batch[:40], false); err != nil {
		t.Fatal(err)
	}
	if gets, _ := store.calls(); gets != 1 || store.keysAsked != 25 {
		t.Fatalf("first batch: %d gets for %d keys, want 1 get for the 25 distinct runs", gets, store.keysAsked)
	}
	if err := s.Process(ctx, batch[40:], false); err != nil {
		t.Fatal(err)
	}
	if gets, _ := store.calls(); gets != 1 {
		t.Fatalf("second batch (runs held): %d gets in all, want still 1", gets)
	}
	if err := s.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if _, puts := store.calls(); puts != 1 || len(store.items) != 25 {
		t.Fatalf("barrier: %d puts, %d items; want 1 put of 25 runs", puts, len(store.items))
	}
	if err := s.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if _, puts := store.calls(); puts != 1 {
		t.Fatalf("a barrier with no changed run wrote to the store (%d puts)", puts)
	}
}

// failingRunStore fails every Put.
type failingRunStore struct{ memRunStore }

func (f *failingRunStore) Put(context.Context, []RunItem) error {
	return fmt.Errorf("ProvisionedThroughputExceeded (test)")
}

// TestRunStoreWriteFailureHoldsCheckpoint: a barrier whose store write
// fails does not commit: the shard fails and its checkpoint never passes
// the records of the unsaved run updates.
func TestRunStoreWriteFailureHoldsCheckpoint(t *testing.T) {
	ctx := ctxT(t)
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	clk := &fakeClock{now: t0}
	store := &failingRunStore{memRunStore: *newMemRunStore()}
	s := storeShard(t, store, sink.NewMemory(), &Stats{}, clk, "", 0)
	rec := Record{Seq: seqOf(1), Arrival: t0, Data: runEventJSON("START", t0, []string{"a"}, nil)}
	if err := s.Process(ctx, []Record{rec}, false); err != nil {
		t.Fatal(err)
	}
	err := s.Barrier(ctx)
	if err == nil {
		t.Fatal("barrier succeeded with a failing run store")
	}
	if seq, _ := s.Checkpoint(); checkpoint.CompareSeq(seq, rec.Seq) >= 0 {
		t.Fatalf("checkpoint %s passed the unsaved record %s", seq, rec.Seq)
	}
	// The worker is not ready while the store fails, and says why.
	if err := s.st.RunStoreUnavailable(); err == nil || !strings.Contains(err.Error(), "run store not answering") {
		t.Errorf("RunStoreUnavailable %v after a failed write, want the reason", err)
	}
	s.st.runStoreResult(nil)
	if err := s.st.RunStoreUnavailable(); err != nil {
		t.Errorf("RunStoreUnavailable %v after a success", err)
	}
}

// TestStreamingRunStoreMoves: streaming runs (committed on START/RUNNING,
// stopped by FAIL/ABORT) and a batch run beside them, among other traffic,
// moved to a worker with an empty disk (or the same disk) between any two
// of their events: with the run store the graph is exactly the reference
// model's, so a moved streaming run keeps its streaming status and its
// datasets.
func TestStreamingRunStoreMoves(t *testing.T) {
	const S = "STREAMING"
	const filler = 19 // single-event batch runs after each key event
	var st stream
	arrival := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(data []byte) {
		arrival = arrival.Add(time.Second)
		st.data = append(st.data, data)
		st.recs = append(st.recs, Record{Seq: seqOf(len(st.recs) + 1), Arrival: arrival, Data: data})
	}
	for i, data := range [][]byte{
		streamEvent("START", "s1", 0, S, []string{"a"}, []string{"b"}),
		streamEvent("START", "s2", 30, "", []string{"k"}, nil),
		streamEvent("START", "b1", 60, "BATCH", []string{"c"}, nil),
		streamEvent("RUNNING", "s1", 90, "", []string{"e"}, nil),
		streamEvent("RUNNING", "s2", 120, S, nil, []string{"l"}),
		streamEvent("RUNNING", "s1", 150, "", nil, []string{"f"}),
		streamEvent("FAIL", "s2", 180, "", []string{"m"}, []string{"n"}),
		streamEvent("COMPLETE", "b1", 210, "BATCH", nil, []string{"d"}),
		streamEvent("RUNNING", "s1", 240, "", []string{"g"}, nil),
		streamEvent("RUNNING", "s2", 270, "", []string{"o"}, nil),
	} {
		// Event times 30 s apart: the windows of earlier events seal and
		// the checkpoint passes them before the next move.
		add(data)
		for j := 0; j < filler; j++ {
			n := itoa(i*filler + j)
			add(streamEvent("COMPLETE", "x"+n, i*30+1, "BATCH", []string{"in" + n}, []string{"out" + n}))
		}
	}
	for _, runs := range []semantics.RunRecords{semantics.RunsFailed, semantics.RunsAll} {
		want := refmodel.Build(st.data, refmodel.Options{Policy: "strict", Runs: string(runs)})
		for k := 1; k < 10; k++ {
			kill := k*(filler+1) - filler/2 // between key events k-1 and k
			for _, same := range []bool{false, true} {
				name := "runs=" + string(runs) + "/move-at=" + itoa(kill)
				if same {
					name += "/same-disk"
				}
				t.Run(name, func(t *testing.T) {
					r := rand.New(rand.NewPCG(uint64(kill), 29))
					store := newMemRunStore()
					c := &crashRun{t: t, st: st, r: r, kills: []int{kill}, mem: sink.NewMemory(), runs: runs, store: store,
						sameDisk: func(int) bool { return same }}
					c.run()
					if c.restarts != 1 {
						t.Fatalf("%d moves, want 1", c.restarts)
					}
					if d := refmodelCompare(want, graphOf(c.mem)); d != "" {
						t.Fatalf("graph differs from the reference:\n%s", d)
					}
				})
			}
		}
	}
}
