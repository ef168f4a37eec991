package processor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// TestRefreshLaneWritesChangedFacet: with the refresh lane on, an
// unchanged facet property goes to the refresh window, but a changed one
// (and a change back) reaches the graph when its normal window seals,
// while the refresh window is still open; after Flush the graph is the
// reference model's. A lane that held a real change back fails here.
func TestRefreshLaneWritesChangedFacet(t *testing.T) {
	start := time.Date(2026, 1, 1, 6, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	event := func(s int, job, out, field string) []byte {
		facets := ""
		if field != "" {
			facets = `,"facets":{"schema":{"_producer":"p","_schemaURL":"u","fields":[{"name":"` + field + `","type":"int"}]}}`
		}
		return []byte(fmt.Sprintf(`{"eventTime":%q,"job":{"namespace":"n","name":%q},"inputs":[{"namespace":"n","name":"src"}],"outputs":[{"namespace":"n","name":%q%s}],"schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent"}`,
			at(s).Format(time.RFC3339), job, out, facets))
	}
	steps := []struct {
		sec  int
		data []byte
	}{
		{1, event(1, "j", "t", "a")},   // new: normal window [0 s, 10 s)
		{12, event(12, "j", "t", "a")}, // unchanged: refresh window [0 s, 60 s)
		{23, event(23, "j", "t", "b")}, // changed: normal window [20 s, 30 s)
		{34, event(34, "k", "u", "")},  // moves the watermark past 30.5 s
		{45, event(45, "j", "t", "a")}, // changed back: normal window [40 s, 50 s)
		{56, event(56, "k", "u", "")},  // past 50.5 s
	}
	clk := &fakeClock{now: start}
	stats := &Stats{}
	cfg := testConfig(t, clk, stats)
	cfg.Window.Refresh = time.Minute
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	mem := sink.NewMemory()
	s, err := NewShard("shardId-000000000001", db, mem, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if err := s.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ds := lineage.DatasetID(lineage.Dataset{Namespace: "n", Name: "t"})
	refresh := s.windows.refreshBucket(start.UnixMilli())
	schemaIs := func(field string, sec int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			p, ok := graphOf(mem).Vertices[ds].Props.Get(lineage.PropSchema)
			if ok && strings.Contains(p.Str, `"`+field+`"`) && p.Stamp == at(sec).UnixMilli() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("schema in the graph %+v (found %v), want field %q stamped %v", p, ok, field, at(sec))
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, open := s.windows.buckets[refresh]; !open {
			t.Fatal("the refresh window is sealed already: the test means nothing")
		}
	}
	var data [][]byte
	for i, st := range steps {
		data = append(data, st.data)
		clk.Set(at(st.sec))
		if err := s.Process(ctx, []Record{{Seq: seqOf(i + 1), Data: st.data, Arrival: at(st.sec)}}, false); err != nil {
			t.Fatal(err)
		}
		if err := s.Barrier(ctx); err != nil {
			t.Fatal(err)
		}
		switch st.sec {
		case 34:
			schemaIs("b", 23)
		case 56:
			schemaIs("a", 45)
		}
	}
	if stats.RefreshLane.Load() == 0 {
		t.Fatal("nothing went to the refresh lane")
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if d := refmodelCompare(refmodel.Build(data, refmodel.Options{}), graphOf(mem)); d != "" {
		t.Fatalf("graph differs from the reference:\n%s", d)
	}
}

// TestRefreshWindowConfig: a refresh window that is not a whole multiple
// of the window size greater than it fails at start.
func TestRefreshWindowConfig(t *testing.T) {
	for _, tc := range []struct {
		refresh time.Duration
		ok      bool
	}{{0, true}, {time.Minute, true}, {10 * time.Second, false}, {15 * time.Second, false}, {-time.Minute, false}} {
		cfg := PipelineConfig{Window: WindowConfig{Refresh: tc.refresh}}.WithDefaults()
		if err := cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("refresh window %v: err %v", tc.refresh, err)
		}
	}
}

// TestRefreshBucket: refresh windows are aligned on the epoch, never
// collide with a normal window, and seal RefreshWindow after their start.
func TestRefreshBucket(t *testing.T) {
	w := &windowTable{sizeMs: 10_000, latenessMs: 500, refreshMs: 60_000}
	for _, b := range []int64{0, 10_000, 50_000, 60_000, 1_767_225_610_000, -10_000, -60_000, -70_000} {
		rb := w.refreshBucket(b)
		if !w.isRefresh(rb) || w.isRefresh(b) {
			t.Errorf("bucket %d: refresh %d", b, rb)
		}
		if start := rb - 1; start > b || b >= start+60_000 || start%60_000 != 0 {
			t.Errorf("bucket %d: refresh window starts at %d", b, start)
		}
		if w.sealAt(rb) != rb-1+60_500 || w.sealAt(b) != b+10_500 {
			t.Errorf("bucket %d: seal at %d / %d", b, w.sealAt(rb), w.sealAt(b))
		}
	}
}

// TestRefreshLaneMemory: a key seen with the same content takes the lane,
// with other content not; past refreshSeenMax keys the memory is emptied
// and a known key goes to the normal window once more.
func TestRefreshLaneMemory(t *testing.T) {
	w := &windowTable{sizeMs: 10_000, latenessMs: 500, refreshMs: 60_000, seen: map[uint64]uint64{}, st: &Stats{}}
	const b = 1_767_225_610_000
	rb := w.refreshBucket(b)
	p := func(v string) lineage.Prop { return lineage.StrLWW(lineage.PropSchema, v, 1) }
	if w.propLane(b, "d", p("a")) != b || w.propLane(b, "d", p("a")) != rb || w.propLane(b, "d", p("b")) != b ||
		w.propLane(b, "d", p("b")) != rb || w.propLane(b, "e", p("b")) != b {
		t.Fatal("lanes of a property: first and changed values to the normal window, repeats to the refresh window")
	}
	if w.edgeLane(b, lineage.EdgeFieldOf, "f", "d") != b || w.edgeLane(b, lineage.EdgeFieldOf, "f", "d") != rb ||
		w.edgeLane(b, lineage.EdgeColumnDerives, "f", "d") != b {
		t.Fatal("lanes of an edge: new to the normal window, known to the refresh window")
	}
	for i := 0; len(w.seen) < refreshSeenMax; i++ {
		w.edgeLane(b, lineage.EdgeFieldOf, fmt.Sprint(i), "x")
	}
	w.edgeLane(b, lineage.EdgeFieldOf, "one", "more")
	if len(w.seen) != 1 || w.propLane(b, "d", p("b")) != b {
		t.Fatalf("memory of %d keys past its bound; a known key must go to the normal window once more", len(w.seen))
	}
}
