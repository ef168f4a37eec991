package processor

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// wideEvent is a RunEvent of run runID with inputs in<first>..in<first+nIn-1>
// and outputs out0..out<nOut-1>.
func wideEvent(typ, runID string, sec, first, nIn, nOut int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"eventType":%q,"eventTime":"2026-01-01T00:00:%02dZ","run":{"runId":%q},"job":{"namespace":"ns","name":"job"},"inputs":[`, typ, sec%60, runID)
	for i := 0; i < nIn; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"namespace":"ns","name":"in%d"}`, first+i)
	}
	b.WriteString(`],"outputs":[`)
	for j := 0; j < nOut; j++ {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"namespace":"ns","name":"out%d"}`, j)
	}
	b.WriteString(`],"producer":"p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`)
	return []byte(b.String())
}

// budgetShard is a started shard over an in-memory DB and a memory sink.
type budgetShard struct {
	*Shard
	db    *pebble.DB
	mem   *sink.Memory
	clk   *fakeClock
	stats *Stats
	n     int
}

func newBudgetShard(t *testing.T, tune func(*PipelineConfig)) *budgetShard {
	t.Helper()
	b := &budgetShard{clk: &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, stats: &Stats{}, mem: sink.NewMemory()}
	cfg := testConfig(t, b.clk, b.stats)
	if tune != nil {
		tune(&cfg)
	}
	b.db = openMem(t, vfs.NewMem())
	t.Cleanup(func() { b.db.Close() })
	s, err := NewShard("shardId-000000000001", b.db, b.mem, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctxT(t), ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	b.Shard = s
	return b
}

// put processes data as the next records, one second of arrival apart.
func (b *budgetShard) put(t *testing.T, data ...[]byte) {
	t.Helper()
	var recs []Record
	for _, d := range data {
		b.n++
		recs = append(recs, Record{Seq: seqOf(b.n), Arrival: b.clk.Now(), Data: d})
		b.clk.Set(b.clk.Now().Add(time.Second))
	}
	if err := b.Process(ctxT(t), recs, false); err != nil {
		t.Fatal(err)
	}
}

func (b *budgetShard) flush(t *testing.T) *refmodel.Graph {
	t.Helper()
	if err := b.Flush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	return graphOf(b.mem)
}

func (b *budgetShard) deadLetters(t *testing.T) []checkpoint.DeadLetter {
	t.Helper()
	var out []checkpoint.DeadLetter
	if err := checkpoint.ListDeadLetters(b.db, func(d checkpoint.DeadLetter) error { out = append(out, d); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// A 150 x 150 event with a 500-key table: the table is spilled inside the
// emission (never holding much more than 500 keys) and the graph is exact.
func TestEmissionSpillsInsideTheLoop(t *testing.T) {
	b := newBudgetShard(t, func(c *PipelineConfig) { c.Budgets.MaxOpenKeys = 500 })
	ev := wideEvent("COMPLETE", "r1", 1, 0, 150, 150)
	b.put(t, ev)
	if n := b.windows.tab.Len(); n > 500 {
		t.Errorf("table holds %d keys after the record, budget 500", n)
	}
	want := refmodel.Build([][]byte{ev}, refmodel.Options{})
	if d := refmodelCompare(want, b.flush(t)); d != "" {
		t.Fatalf("graph differs:\n%s", d)
	}
	if sp := b.stats.Budget.TableSpills.Load(); sp < 150*150/500 {
		t.Errorf("%d spills, want at least %d", sp, 150*150/500)
	}
	if len(want.Edges) != 150*150+300 {
		t.Fatalf("reference has %d edges", len(want.Edges))
	}
}

// Over MaxEmissionEdges the DERIVES edges are left out and counted; what
// is written is a subset of the reference (no ghost edge).
func TestEmissionEdgeBudget(t *testing.T) {
	b := newBudgetShard(t, func(c *PipelineConfig) { c.Budgets.MaxEmissionEdges = 1000 })
	ev := wideEvent("COMPLETE", "r1", 1, 0, 50, 50)
	b.put(t, ev)
	got := b.flush(t)
	want := refmodel.Build([][]byte{ev}, refmodel.Options{})
	missing, extra := 0, 0
	for id := range want.Edges {
		if _, ok := got.Edges[id]; !ok {
			missing++
		}
	}
	for id := range got.Edges {
		if _, ok := want.Edges[id]; !ok {
			extra++
		}
	}
	if len(got.Edges) != 1000 || extra != 0 || int64(missing) != b.stats.Budget.EdgesDropped.Load() || missing != 50*50+100-1000 {
		t.Errorf("edges %d (want 1000), extra %d, missing %d, counted dropped %d (want %d)",
			len(got.Edges), extra, missing, b.stats.Budget.EdgesDropped.Load(), 50*50+100-1000)
	}
	if b.stats.Budget.EmissionsTruncated.Load() != 1 {
		t.Errorf("emissions truncated %d, want 1", b.stats.Budget.EmissionsTruncated.Load())
	}
}

// An event over MaxEventDatasets is one dead letter; the next one is
// processed.
func TestEventDatasetBudget(t *testing.T) {
	b := newBudgetShard(t, func(c *PipelineConfig) { c.Budgets.MaxEventDatasets = 100 })
	big, small := wideEvent("COMPLETE", "r1", 1, 0, 60, 41), wideEvent("COMPLETE", "r2", 2, 0, 2, 2)
	b.put(t, big, small)
	got := b.flush(t)
	if d := refmodelCompare(refmodel.Build([][]byte{small}, refmodel.Options{}), got); d != "" {
		t.Fatalf("graph differs from the small event's:\n%s", d)
	}
	dls := b.deadLetters(t)
	if len(dls) != 1 || dls[0].Reason != string(lineage.ReasonTooManyDatasets) || dls[0].Seq != seqOf(1) {
		t.Fatalf("dead letters %+v, want one too_many_datasets at %s", dls, seqOf(1))
	}
	if b.stats.Budget.EventsOverDatasets.Load() != 1 {
		t.Errorf("events over budget %d, want 1", b.stats.Budget.EventsOverDatasets.Load())
	}
}

// A run stops growing at MaxRunDatasets; the datasets left out are counted.
func TestRunDatasetBudget(t *testing.T) {
	b := newBudgetShard(t, func(c *PipelineConfig) { c.Budgets.MaxRunDatasets = 100 })
	var evs [][]byte
	for k := 0; k < 5; k++ {
		evs = append(evs, wideEvent("RUNNING", "r1", k, 30*k, 30, 1))
	}
	b.put(t, evs...)
	r := b.runs.m["r1"]
	if r == nil || len(r.Inputs)+len(r.Outputs) != 100 {
		t.Fatalf("run holds %d datasets, budget 100", len(r.Inputs)+len(r.Outputs))
	}
	if got := b.stats.Budget.RunDatasetsDropped.Load(); got != 150-99 {
		t.Errorf("dropped %d, want %d", got, 150-99)
	}
	// The index and the slice agree (a dataset already in is not re-added).
	b.put(t, wideEvent("RUNNING", "r1", 9, 0, 30, 1))
	if len(r.Inputs) != 99 {
		t.Errorf("inputs %d, want 99", len(r.Inputs))
	}
}

// Past MaxRuns the oldest runs are forgotten; open ones are counted and
// release their pins.
func TestRunsBudget(t *testing.T) {
	b := newBudgetShard(t, func(c *PipelineConfig) { c.Budgets.MaxRuns = 64 })
	for k := 0; k < 300; k++ {
		b.put(t, wideEvent("START", fmt.Sprintf("r%d", k), k, 0, 1, 1))
		if n := b.runs.len(); n > 64 {
			t.Fatalf("after run %d the shard holds %d runs, budget 64", k, n)
		}
	}
	ev := b.stats.Budget.RunsEvicted.Load()
	if ev != 300-int64(b.runs.len()) {
		t.Errorf("evicted %d, want %d", ev, 300-b.runs.len())
	}
	if _, ok := b.runs.m["r299"]; !ok {
		t.Error("the newest run was evicted")
	}
	b.flush(t)
	if seq, _ := b.Checkpoint(); checkpoint.CompareSeq(seq, seqOf(300-b.runs.len())) < 0 {
		t.Errorf("checkpoint %s held back by evicted runs", seq)
	}
}

// 5000 refused records in one call never hold more than the dead-letter
// budget in memory; the byte budget and the retention delete the oldest,
// counted, and what is kept is listed.
func TestDeadLetterBudgets(t *testing.T) {
	b := newBudgetShard(t, func(c *PipelineConfig) {
		c.Budgets.MaxDeadLettersPerBarrier = 100
		c.Budgets.DeadLetterMaxBytes = 64 << 10
		c.Budgets.DeadLetterRetention = time.Hour
	})
	var recs []Record
	for k := 0; k < 5000; k++ {
		b.n++
		recs = append(recs, Record{Seq: seqOf(b.n), Arrival: b.clk.Now(), Data: []byte(fmt.Sprintf("not json %d", k))})
	}
	if err := b.Process(ctxT(t), recs, false); err != nil {
		t.Fatal(err)
	}
	if len(b.dead) >= 100 {
		t.Errorf("%d dead letters held in memory, budget 100", len(b.dead))
	}
	if got := b.stats.Budget.DeadLetterBarriers.Load(); got != 50 {
		t.Errorf("dead-letter barriers %d, want 50", got)
	}
	b.flush(t)
	dls := b.deadLetters(t)
	var bytes int64
	for _, d := range dls {
		bytes += int64(len(checkpoint.MarshalDeadLetter(&d)) + len(checkpoint.DLQKey(d.Shard, d.Seq, d.Sub)))
	}
	over := b.stats.Budget.DeadLettersOverBytes.Load()
	if bytes > 64<<10+100*200 || over == 0 || int64(len(dls))+over != 5000 {
		t.Errorf("kept %d dead letters (%d bytes), deleted over bytes %d: want <= ~64 KiB kept and kept+deleted = 5000", len(dls), bytes, over)
	}
	if len(dls) > 0 && dls[len(dls)-1].Seq != seqOf(5000) {
		t.Errorf("the newest dead letter %s was not kept", dls[len(dls)-1].Seq)
	}
	if b.dlq.bytes != bytes {
		t.Errorf("accounted %d bytes, stored %d", b.dlq.bytes, bytes)
	}
	// Two hours later (arrival time) every one of them is past the retention.
	b.clk.Set(b.clk.Now().Add(2 * time.Hour))
	b.put(t, []byte("late garbage"))
	b.flush(t)
	dls = b.deadLetters(t)
	if len(dls) != 1 || dls[0].Seq != seqOf(b.n) || b.stats.Budget.DeadLettersAged.Load() == 0 {
		t.Errorf("after the retention: %d kept (want only the new one), aged %d", len(dls), b.stats.Budget.DeadLettersAged.Load())
	}
}

// permErr is a sink error that says sending again cannot succeed.
type permErr struct{}

func (permErr) Error() string {
	return "sink: writer 0: edges: Other after 1 attempt(s): bad traversal"
}
func (permErr) Permanent() bool { return true }

// refusingWriter refuses permanently every batch holding an edge from
// dataset ns/in0 and counts transient failures of the rest.
type refusingWriter struct {
	mem     *sink.Memory
	refused atomic.Int64
	bad     string
}

func (w *refusingWriter) WriteBatch(ctx context.Context, b lineage.Batch) error {
	for _, e := range b.Edges {
		if e.OutV == w.bad {
			w.refused.Add(1)
			return permErr{}
		}
	}
	return w.mem.WriteBatch(ctx, b)
}

// An entry the graph refuses permanently ParkAfter times is split until
// the refused items are found: only they are parked (kept with the
// reason, counted, listed, decodable for a replay), the rest of the entry
// is written, and the shard goes on: later windows reach the sink and the
// checkpoint moves.
func TestRefusedItemsAreParkedAlone(t *testing.T) {
	clk := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	stats := &Stats{}
	cfg := testConfig(t, clk, stats)
	cfg.Drain.ParkAfter = 3
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	bad := lineage.DatasetID(lineage.Dataset{Namespace: "ns", Name: "in0"})
	w := &refusingWriter{mem: sink.NewMemory(), bad: bad}
	s, err := NewShard("shardId-000000000001", db, w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if err := s.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, second := wideEvent("COMPLETE", "r1", 1, 0, 1, 1), wideEvent("COMPLETE", "r2", 40, 5, 1, 1)
	if err := s.Process(ctx, []Record{{Seq: seqOf(1), Arrival: clk.Now(), Data: first}}, false); err != nil {
		t.Fatal(err)
	}
	clk.Set(clk.Now().Add(time.Minute)) // the first window is long sealed when the second record comes
	if err := s.Process(ctx, []Record{{Seq: seqOf(2), Arrival: clk.Now(), Data: second}}, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("flush with a refused batch: %v", err)
	}
	// Everything but the two edges out of the refused vertex in0
	// (INPUT_TO and DERIVES of the first window) is in the sink.
	want := refmodel.Build([][]byte{first, second}, refmodel.Options{})
	outOfBad := map[string]bool{}
	for id, e := range want.Edges {
		if e.OutV == bad {
			delete(want.Edges, id)
			outOfBad[id] = true
		}
	}
	if d := refmodelCompare(want, graphOf(w.mem)); d != "" {
		t.Fatalf("the sink lacks more than the refused items:\n%s", d)
	}
	if len(outOfBad) != 2 || stats.ItemsParked.Load() != 2 {
		t.Errorf("%d edges out of the refused vertex, %d items parked; want 2 and 2", len(outOfBad), stats.ItemsParked.Load())
	}
	var parked []checkpoint.Parked
	if err := checkpoint.ListParked(db, func(p checkpoint.Parked) error { parked = append(parked, p); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(parked) != 2 {
		t.Fatalf("parked %+v, want 2 items", parked)
	}
	for _, p := range parked {
		if !outOfBad[p.Item] || p.Edges != 1 || p.Vertices != 0 || p.Attempts != 3 || !strings.Contains(p.Reason, "bad traversal") {
			t.Errorf("parked %+v", p)
		}
		e, err := DecodeOutbox(p.Entry)
		if err != nil || len(e.Batch.Edges) != 1 || e.Batch.Edges[0].ID != p.Item {
			t.Errorf("the parked item does not decode to itself: %v", err)
		}
	}
	if seq, _ := s.Checkpoint(); seq != seqOf(2) {
		t.Errorf("checkpoint %s, want %s", seq, seqOf(2))
	}
}
