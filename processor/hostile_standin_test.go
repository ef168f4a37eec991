package processor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// TestOversizedNameIsOneDeadLetterOtherEdgesInGraph (issue 26, item 1, on
// the Gremlin Server stand-in): 30 normal COMPLETE events and one whose
// output name has 600,000 characters, in one window of one shard. Before
// the guard the client refused the whole outbox entry (E1201, over its
// 1 MiB write buffer) and it was parked: none of its 93 edges reached the
// graph. Now the oversized event is one dead letter (name_too_long) and
// the other 30 events' 93 edges are in the graph. With the guard off (a
// name it would let pass, refused by the graph), the sink's isolation
// parks the refused vertex and its two edges alone and writes the rest.
func TestOversizedNameIsOneDeadLetterOtherEdgesInGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the Gremlin Server stand-in")
	}
	t.Run("guard", func(t *testing.T) { oversizedName(t, true) })
	t.Run("isolation", func(t *testing.T) { oversizedName(t, false) })
}

func oversizedName(t *testing.T, guard bool) {
	ep := testenv.Gremlin(t)
	ns := fmt.Sprintf("hostile-%d", time.Now().UnixNano())
	w, err := sink.New(sink.Config{Endpoint: ep, Logger: testLogger(t), RequestTimeout: 10 * time.Second, CoalesceWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close(ctxT(t)) }()

	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	ev := func(i int, ins, outs []string) []byte {
		q := func(names []string) string {
			parts := make([]string, len(names))
			for k, n := range names {
				parts[k] = `{"namespace":"` + ns + `","name":"` + n + `"}`
			}
			return "[" + strings.Join(parts, ",") + "]"
		}
		return []byte(fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":%q,"run":{"runId":"run-%d"},"job":{"namespace":%q,"name":"job-%d"},"inputs":%s,"outputs":%s}`,
			t0.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), i, ns, i, q(ins), q(outs)))
	}
	// 28 events with one input and one output (3 edges each), one with
	// two and two (8), one with an input only (1): 93 edges.
	var good [][]byte
	for i := 0; i < 28; i++ {
		good = append(good, ev(i, []string{fmt.Sprintf("in-%d", i)}, []string{fmt.Sprintf("out-%d", i)}))
	}
	good = append(good, ev(28, []string{"in-28a", "in-28b"}, []string{"out-28a", "out-28b"}), ev(29, []string{"in-29"}, nil))
	bad := ev(30, []string{"in-30"}, []string{strings.Repeat("x", 600000)})
	recs := append(append([][]byte{}, good[:15]...), bad)
	recs = append(recs, good[15:]...)

	clk := &fakeClock{now: t0}
	stats := &Stats{}
	cfg := testConfig(t, clk, stats)
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	cfg.Drain.ParkAfter = 1
	s, err := NewShard("shardId-000000000001", db, w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !guard {
		s.guard.MaxNameBytes = 1 << 30
	}
	ctx := ctxT(t)
	if err := s.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	batch := make([]Record, len(recs))
	for i, d := range recs {
		batch[i] = Record{Seq: seqOf(i + 1), Arrival: t0, Data: d} // one window
	}
	if err := s.Process(ctx, batch, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wantDead, wantParked := int64(1), int64(0)
	if !guard {
		// The vertex, its OUTPUTS and DERIVES edges, and the bad event's
		// Run vertex, whose outputs list names it.
		wantDead, wantParked = 0, 4
	}
	if n, all := stats.Invalid()[lineage.ReasonNameTooLong], stats.InvalidTotal(); n != wantDead || all != wantDead {
		t.Errorf("dead letters: %d name_too_long, %d in all; want %d", n, all, wantDead)
	}
	if n := stats.ItemsParked.Load(); n != wantParked {
		t.Errorf("%d items parked, want %d", n, wantParked)
	}
	want := refmodel.Build(good, refmodel.Options{})
	if len(want.Edges) != 93 {
		t.Fatalf("the good events give %d edges, want 93", len(want.Edges))
	}
	snap, err := graph.Dump(ep, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	inGraph := map[string]bool{}
	for _, e := range snap.Edges {
		inGraph[e.ID] = true
	}
	missing := 0
	for id := range want.Edges {
		if !inGraph[id] {
			missing++
		}
	}
	if missing != 0 {
		t.Errorf("%d of the good events' 93 edges are not in the graph", missing)
	}
	for _, v := range snap.Vertices {
		if len(v.ID) > 100000 {
			t.Errorf("a vertex with a %d-byte id is in the graph", len(v.ID))
		}
	}
}
