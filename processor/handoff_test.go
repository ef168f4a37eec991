package processor

import (
	"context"
	"crypto/md5"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// hashHigh says whether key hashes to the upper half of the Kinesis hash
// key range (MD5 as a 128-bit number), i.e. to the second child of a
// split at the midpoint.
func hashHigh(key string) bool { return md5.Sum([]byte(key))[0] >= 0x80 }

// feeder gives one shard's records sequence numbers and arrival times.
type feeder struct {
	t       *testing.T
	s       *Shard
	n       int
	arrival time.Time
}

func (f *feeder) put(ctx context.Context, data []byte) {
	f.t.Helper()
	f.n++
	f.arrival = f.arrival.Add(7 * time.Millisecond)
	if err := f.s.Process(ctx, []Record{{Seq: seqOf(f.n), Arrival: f.arrival, Data: data}}, false); err != nil {
		f.t.Fatal(err)
	}
}

func newTestShard(t *testing.T, id string, db *pebble.DB, mem *sink.Memory, st *Stats, clk *fakeClock) *Shard {
	t.Helper()
	return newTestShardStore(t, id, db, mem, st, clk, nil)
}

// newTestShardStore is newTestShard with a run store (nil: none).
func newTestShardStore(t *testing.T, id string, db *pebble.DB, mem *sink.Memory, st *Stats, clk *fakeClock, store RunStore) *Shard {
	t.Helper()
	cfg := testConfig(t, clk, st)
	cfg.RunStore.Store = store
	s, err := NewShard(id, db, mem, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctxT(t), ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// openRuns counts the runs of s with no terminal event yet.
func openRuns(s *Shard) int {
	n := 0
	for _, r := range s.runs.m {
		if r.Status == semantics.StatusOpen {
			n++
		}
	}
	return n
}

// TestHandoffSplitMerge drives Shard instances directly through a split
// (one parent, two children at the hash midpoint) and a merge (two
// parents, one child). Parents process the first part of a generated
// stream (many runs START there), end (Flush, HandoffState); children
// load their parents' handoffs and process the rest (the COMPLETEs of
// the straddling runs). The union of the sink equals refmodel.Build over
// the whole stream. Without the handoff the same run misses edges
// (checked, so the test shows the gap). A tail record an hour later makes
// the handed-off runs that never reach a child expire there: no edges,
// counted in HandoffRunsExpired.
func TestHandoffSplitMerge(t *testing.T) {
	gr := gen.Generate(gen.Config{Seed: 5, Events: 3000, Pipelines: 32})
	cut := len(gr) / 2
	// Besides the generated runs (whose COMPLETE often repeats the
	// inputs), runs that straddle the split by construction, keyed to
	// both hash halves: START with the inputs before the split and
	// COMPLETE with the outputs only after it; a run FAILed before the
	// split whose late COMPLETE comes after it (no edges ever); a run
	// committed before the split whose later event adds an input.
	var pre, post []gen.Record
	for i := 0; i < 8; i++ {
		key := "run:straddle/job" + itoa(i)
		ev := func(typ, run, ins, outs string) gen.Record {
			return gen.Record{PartitionKey: key, Data: []byte(`{"eventType":"` + typ + `","eventTime":"2026-01-01T00:00:0` + itoa(len(typ)%10) +
				`Z","run":{"runId":"` + run + `"},"job":{"namespace":"straddle","name":"job` + itoa(i) + `"},"inputs":[` + ins + `],"outputs":[` + outs +
				`],"producer":"p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`)}
		}
		ds := func(n string) string { return `{"namespace":"straddle","name":"` + n + itoa(i) + `"}` }
		pre = append(pre, ev("START", "open"+itoa(i), ds("in"), ""),
			ev("START", "failed"+itoa(i), ds("fin"), ""), ev("FAIL", "failed"+itoa(i), "", ""),
			ev("COMPLETE", "done"+itoa(i), ds("din"), ds("dout")))
		post = append(post, ev("COMPLETE", "open"+itoa(i), "", ds("out")),
			ev("COMPLETE", "failed"+itoa(i), "", ds("fout")),
			ev("RUNNING", "done"+itoa(i), ds("dextra"), ""))
	}
	recs := append(append(append(append([]gen.Record{}, gr[:cut]...), pre...), gr[cut:]...), post...)
	cut += len(pre)
	var all [][]byte
	for _, r := range recs {
		all = append(all, r.Data)
	}
	tail := []byte(`{"eventTime":"2026-01-02T00:00:00Z","dataset":{"namespace":"t","name":"tail"},"producer":"t","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"}`)
	want := refmodel.Build(append(append([][]byte{}, all...), tail), refmodel.Options{Policy: "strict"})

	for _, tc := range []struct {
		name    string
		parents int
		load    bool
		// store: every shard has the same run store, and no handoff is
		// loaded: children load the runs they meet from the store.
		store bool
	}{
		{"split", 1, true, false}, {"merge", 2, true, false}, {"split-without-handoff", 1, false, false},
		{"split-run-store", 1, false, true}, {"merge-run-store", 2, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clk := &fakeClock{now: start}
			st := &Stats{}
			db := openMem(t, vfs.NewMem())
			defer db.Close()
			mem := sink.NewMemory()
			ho := map[string][]byte{} // the handoff store (source.MemHandoff's role)
			var store RunStore
			if tc.store {
				store = newMemRunStore()
			}

			// Parents: one takes everything (split), or the two hash halves (merge).
			var parents []*feeder
			for i := 0; i < tc.parents; i++ {
				parents = append(parents, &feeder{t: t, s: newTestShardStore(t, "shardId-00000000000"+itoa(i), db, mem, st, clk, store), arrival: start})
			}
			pf := func(key string) *feeder {
				if tc.parents == 2 && hashHigh(key) {
					return parents[1]
				}
				return parents[0]
			}
			for _, r := range recs[:cut] {
				pf(r.PartitionKey).put(ctx, r.Data)
			}
			open := 0
			for _, p := range parents {
				open += openRuns(p.s)
				if err := p.s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				ho[p.s.ID()] = p.s.HandoffState()
			}
			if open == 0 {
				t.Fatal("no run open at the split: the test proves nothing")
			}
			t.Logf("%d runs open in the parents at the split", open)

			// Children: the two halves (split), or one (merge).
			nChildren := 2
			if tc.parents == 2 {
				nChildren = 1
			}
			var children []*feeder
			for i := 0; i < nChildren; i++ {
				arr := parents[0].arrival
				for _, p := range parents {
					if p.arrival.After(arr) {
						arr = p.arrival
					}
				}
				c := &feeder{t: t, s: newTestShardStore(t, "shardId-00000000001"+itoa(i), db, mem, st, clk, store), arrival: arr}
				if c.s.Resumed() {
					t.Fatal("a fresh child resumed")
				}
				if tc.load {
					for _, p := range parents {
						data, ok := ho[p.s.ID()]
						if !ok {
							t.Fatalf("no handoff of %s", p.s.ID())
						}
						if _, err := c.s.LoadHandoff(p.s.ID(), data); err != nil {
							t.Fatal(err)
						}
					}
				}
				children = append(children, c)
			}
			cf := func(key string) *feeder {
				if nChildren == 2 && hashHigh(key) {
					return children[1]
				}
				return children[0]
			}
			for _, r := range recs[cut:] {
				cf(r.PartitionKey).put(ctx, r.Data)
			}
			// Handed-off runs still pin nothing: a child's checkpoint
			// reaches its last record once its own runs are closed.
			for _, c := range children {
				if err := c.s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				c.arrival = c.arrival.Add(2 * time.Hour)
				c.put(ctx, tail)
				if err := c.s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				for _, r := range c.s.runs.m {
					if r.handoff && r.Status == semantics.StatusOpen {
						t.Errorf("handed-off run %s still open after the run timeout", r.ID)
					}
				}
				if ck, _ := c.s.Checkpoint(); ck != seqOf(c.n) {
					t.Errorf("%s: checkpoint %q, want the last record %q", c.s.ID(), ck, seqOf(c.n))
				}
			}
			got := graphOf(mem)
			d := refmodel.Compare(want, got)
			if !tc.load && !tc.store {
				if d.Empty() {
					t.Fatal("without the handoff the graph equals the reference: the stream has no run straddling the split")
				}
				t.Logf("without the handoff (expected to differ): %s", firstLine(d.String()))
				return
			}
			if !d.Empty() {
				t.Fatalf("graph differs from the reference:\n%s", d)
			}
			if tc.store {
				if st.RunStoreHits.Load() == 0 {
					t.Error("no child loaded a run from the store")
				}
				t.Logf("%d vertices, %d edges; runs loaded from the store by the children %d (in %d reads)", len(got.Vertices), len(got.Edges),
					st.RunStoreHits.Load(), st.RunStoreReadCalls.Load())
				return
			}
			if st.RunsHandedIn.Load() == 0 || st.HandoffRunsExpired.Load() == 0 {
				t.Errorf("runs handed in %d, handed-off runs expired %d: want both > 0", st.RunsHandedIn.Load(), st.HandoffRunsExpired.Load())
			}
			t.Logf("%d vertices, %d edges; runs handed off %d, in %d, expired on a child %d", len(got.Vertices), len(got.Edges),
				st.RunsHandedOff.Load(), st.RunsHandedIn.Load(), st.HandoffRunsExpired.Load())
		})
	}
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// TestHandoffResumeKeepsRuns: handed-off runs are made durable by the
// child's first barrier, as handed-off runs (no pin), so a child that
// restarts on the same disk resumes them; loading after the first record
// is refused.
func TestHandoffResumeKeepsRuns(t *testing.T) {
	ctx := ctxT(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &fakeClock{now: start}
	st := &Stats{}
	fs := vfs.NewMem()
	db := openMem(t, fs)
	defer db.Close()
	mem := sink.NewMemory()
	p := &feeder{t: t, s: newTestShard(t, "shardId-000000000000", db, mem, st, clk), arrival: start}
	startEv := []byte(`{"eventType":"START","eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"n","name":"in"}],"producer":"p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`)
	complete := []byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T00:01:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},"outputs":[{"namespace":"n","name":"out"}],"producer":"p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`)
	p.put(ctx, startEv)
	if err := p.s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	data := p.s.HandoffState()

	c := newTestShard(t, "shardId-000000000001", db, mem, st, clk)
	if n, err := c.LoadHandoff("shardId-000000000000", data); err != nil || n != 1 {
		t.Fatalf("loaded %d, %v", n, err)
	}
	ds := []byte(`{"eventTime":"2026-01-01T00:00:30Z","dataset":{"namespace":"n","name":"other"},"producer":"p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"}`)
	f := &feeder{t: t, s: c, arrival: p.arrival}
	f.put(ctx, ds)
	if err := c.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LoadHandoff("x", data); err == nil {
		t.Error("LoadHandoff after the first record: want an error")
	}
	c.Close()
	// Restart on the same disk at the KCL checkpoint of the first record: resumes.
	c2, err := NewShard("shardId-000000000001", db, mem, testConfig(t, clk, st))
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Start(ctx, seqOf(1)); err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if !c2.Resumed() {
		t.Fatal("child did not resume from its local state")
	}
	if r := c2.runs.m["r1"]; r == nil || !r.handoff || r.Status != semantics.StatusOpen {
		t.Fatalf("run r1 after resume = %+v", r)
	}
	f.s = c2
	f.put(ctx, complete)
	if err := c2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := refmodel.Build([][]byte{startEv, ds, complete}, refmodel.Options{Policy: "strict"})
	if d := refmodel.Compare(want, graphOf(mem)); !d.Empty() {
		t.Fatalf("graph differs:\n%s", d)
	}
	if ck, _ := c2.Checkpoint(); ck != seqOf(2) {
		t.Errorf("checkpoint %q, want %q", ck, seqOf(2))
	}
}
