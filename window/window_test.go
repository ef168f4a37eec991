package window

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/lineage"
)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func TestBucketBoundaries(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	tests := []struct {
		name string
		ts   int64
		want int64
	}{
		{"start of window", ms("2024-01-01T00:00:10Z"), ms("2024-01-01T00:00:10Z")},
		{"last ms of window", ms("2024-01-01T00:00:19.999Z"), ms("2024-01-01T00:00:10Z")},
		{"first ms of next", ms("2024-01-01T00:00:20Z"), ms("2024-01-01T00:00:20Z")},
		{"epoch", 0, 0},
		{"just before epoch", -1, -10000},
		{"minus one window", -10000, -10000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Bucket(tt.ts); got != tt.want {
				t.Fatalf("Bucket(%d) = %d, want %d", tt.ts, got, tt.want)
			}
		})
	}
	odd := Config{Size: 3 * time.Second, Lateness: time.Second}
	if got := odd.Bucket(ms("2024-01-01T00:00:04Z")); got%3000 != 0 || got > ms("2024-01-01T00:00:04Z") || got+3000 <= ms("2024-01-01T00:00:04Z") {
		t.Fatalf("3s bucket = %d", got)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    Config
		ok   bool
	}{
		{"defaults", Config{}.WithDefaults(), true},
		{"sub-ms size", Config{Size: time.Microsecond}, false},
		{"fractional ms", Config{Size: 1500 * time.Microsecond}, false},
		{"negative lateness", Config{Size: time.Second, Lateness: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.c.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// clock is an injected processing-time clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func TestWatermarkSealAndLateness(t *testing.T) {
	t.Parallel()
	c := Config{Size: 10 * time.Second, Lateness: time.Second}
	base := ms("2024-01-01T00:00:00Z")
	steps := []struct {
		name        string
		observe     int64 // relative ms, -1 = none
		bucket      int64 // relative
		wantSealed  bool
		wantWMAfter int64
	}{
		{"first record", 3000, 0, false, 3000},
		{"end of window, inside lateness", 10500, 0, false, 10500},
		{"lateness exactly reached", 11000, 0, true, 11000},
		{"older record never moves it back", 2000, 0, true, 11000},
		{"next window still open", -1, 10000, false, 11000},
	}
	w := NewWatermark(c)
	if w.Sealed(base) {
		t.Fatal("empty watermark seals")
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.observe >= 0 {
				w.Observe(base + s.observe)
			}
			if got := w.Sealed(base + s.bucket); got != s.wantSealed {
				t.Fatalf("Sealed(+%d) = %v, want %v", s.bucket, got, s.wantSealed)
			}
			if v, _ := w.Value(); v != base+s.wantWMAfter {
				t.Fatalf("watermark = +%d, want +%d", v-base, s.wantWMAfter)
			}
		})
	}
}

func TestWatermarkIdleAdvance(t *testing.T) {
	t.Parallel()
	c := Config{Size: 10 * time.Second, Lateness: 500 * time.Millisecond}
	base := ms("2024-01-01T00:00:00Z")
	clk := &clock{now: time.UnixMilli(base + 4000)}
	w := NewWatermark(c)
	w.Observe(base + 4000)
	tests := []struct {
		name    string
		advance time.Duration
		sealed  bool
	}{
		{"idle within window", 5 * time.Second, false},
		{"idle past end but within lateness", 1400 * time.Millisecond, false},
		{"idle past lateness", 100 * time.Millisecond, true},
		{"clock going back does not unseal", -20 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.now = clk.now.Add(tt.advance)
			w.Idle(clk.Now())
			if got := w.Sealed(base); got != tt.sealed {
				v, _ := w.Value()
				t.Fatalf("Sealed = %v, want %v (watermark +%d)", got, tt.sealed, v-base)
			}
		})
	}
}

func TestTableCollapses(t *testing.T) {
	t.Parallel()
	tb := NewTable()
	tb.AddEdge(0, "DERIVES", "a", "b", 5, 9, "r1")
	tb.AddEdge(0, "DERIVES", "a", "b", 3, 9, "r2")
	tb.AddEdge(10000, "DERIVES", "a", "b", 7, 12, "r0")
	tb.AddVertex(0, lineageVertex("a"))
	tb.AddVertex(0, lineageVertex("a"))
	if tb.Len() != 3 {
		t.Fatalf("Len = %d, want 3", tb.Len())
	}
	got := map[Key]Props{}
	tb.Range(func(k Key, p Props) { got[k] = p })
	p := got[Key{Bucket: 0, Kind: KindEdge, Label: "DERIVES", Out: "a", In: "b"}]
	if p.First != 3 || p.Last != 9 || p.RunID != "r2" {
		t.Fatalf("collapsed = %+v", p)
	}
	tb.Reset()
	if tb.Len() != 0 {
		t.Fatal("Reset kept entries")
	}
}

func TestCodecRoundTripAndMerger(t *testing.T) {
	t.Parallel()
	entries := []Entry{
		{Kind: KindEdge, Label: "DERIVES", Out: "dataset:2:ns/a", In: "dataset:2:ns/b", Props: Props{First: -5, Last: 1 << 40, RunID: "r"}},
		{Kind: KindVertex, Label: "Dataset", Out: "dataset:1:ß/\"x|y", Props: Props{Namespace: "ß", Name: "\"x|y"}},
	}
	for _, e := range entries {
		b := AppendEntry(nil, &e)
		var got Entry
		rest, err := DecodeEntry(b, &got)
		if err != nil || len(rest) != 0 || got != e {
			t.Fatalf("round trip %+v -> %+v (%v, %d left)", e, got, err, len(rest))
		}
		for i := 0; i < len(b); i++ {
			if _, err := DecodeEntry(b[:i], &got); err == nil {
				t.Fatalf("truncated at %d decoded", i)
			}
		}
	}
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Merger: Merger})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ops := []Entry{
		{Kind: KindEdge, Label: "L", Out: "a", In: "b", Props: Props{First: 5, Last: 9, RunID: "r1"}},
		{Kind: KindEdge, Label: "L", Out: "a", In: "b", Props: Props{First: 7, Last: 12, RunID: "r0"}},
		{Kind: KindEdge, Label: "L", Out: "a", In: "b", Props: Props{First: 3, Last: 9, RunID: "r2"}},
	}
	for i, o := range ops {
		if err := db.Merge([]byte("k"), AppendEntry(nil, &o), nil); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	v, closer, err := db.Get([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	var got Entry
	if _, err := DecodeEntry(v, &got); err != nil {
		t.Fatal(err)
	}
	closer.Close()
	if got.First != 3 || got.Last != 12 || got.RunID != "r0" {
		t.Fatalf("merged = %+v", got)
	}
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(AppendEntry(nil, &Entry{Kind: KindEdge, Label: "L", Out: "a", In: "b", Props: Props{First: 1, Last: 2, RunID: "r"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Entry
		if _, err := DecodeEntry(b, &e); err != nil {
			return
		}
		var e2 Entry
		if _, err := DecodeEntry(AppendEntry(nil, &e), &e2); err != nil || e2 != e {
			t.Fatalf("re-encode %+v -> %+v %v", e, e2, err)
		}
	})
}

func lineageVertex(id string) lineage.Vertex {
	return lineage.Vertex{ID: id, Label: lineage.LabelDataset, Namespace: "ns", Name: id}
}

// StoreKey and Entry.Edge must give exactly lineage's window keys and edge ids.
func TestStoreKeyAndEdgeIDMatchLineage(t *testing.T) {
	t.Parallel()
	long := string(make([]byte, 700)) // longer than the stack buffer
	cases := []struct{ label, out, in string }{
		{"DERIVES", "dataset:2:ns/a", "dataset:2:ns/b"},
		{"INPUT_TO", "", ""},
		{"OUTPUTS", "job:1:n/ß", long},
		{"Dataset", long + long, "x"},
	}
	for _, c := range cases {
		for _, bucket := range []int64{0, -10000, 1767225600000} {
			k := Key{Bucket: bucket, Kind: KindEdge, Label: c.label, Out: c.out, In: c.in}
			if k.StoreKey() != lineage.WindowKey(c.label, c.out, c.in, bucket) {
				t.Fatalf("edge StoreKey(%q) differs from lineage.WindowKey", c.label)
			}
			v := Key{Bucket: bucket, Kind: KindVertex, Label: c.label, Out: c.out}
			if v.StoreKey() != lineage.WindowKey("V:"+c.label, c.out, "", bucket) {
				t.Fatalf("vertex StoreKey(%q) differs from lineage.WindowKey", c.label)
			}
		}
		e := Entry{Kind: KindEdge, Label: c.label, Out: c.out, In: c.in, Props: Props{First: 1, Last: 2, RunID: "r"}}
		if got, want := e.Edge(), lineage.NewEdge(c.label, c.out, c.in, 1, 2, "r"); got != want {
			t.Fatalf("Edge() = %+v, want %+v", got, want)
		}
	}
}

// TestEdgePropsRoundTripAndMerge: an edge entry's further properties
// (lineage.Edge.Props, kept in VProps) survive the codec, merge in the
// table and in the merger by lineage.Props rules, and an edge value
// written before they existed still decodes (no properties).
func TestEdgePropsRoundTripAndMerge(t *testing.T) {
	t.Parallel()
	p1 := lineage.MakeProps(lineage.StrLWW(lineage.PropTransformationType, "DIRECT/IDENTITY", 10))
	p2 := lineage.MakeProps(lineage.StrLWW(lineage.PropTransformationType, "DIRECT/AGGREGATION", 20),
		lineage.StrLWW(lineage.PropTransformationDescription, "sum(x)", 20))
	tab := NewTable()
	tab.AddEdgeProps(0, lineage.EdgeColumnDerives, "a", "b", 5, 5, "r1", p2)
	tab.AddEdgeProps(0, lineage.EdgeColumnDerives, "a", "b", 3, 3, "r0", p1)
	var got Entry
	tab.Range(func(k Key, p Props) { got = EntryOf(k, p) })
	want := p1.Merge(p2)
	if got.VProps != want || got.First != 3 || got.Last != 5 || got.RunID != "r1" {
		t.Fatalf("table entry %+v, want props %s, 3..5, r1", got, want)
	}
	var dec Entry
	if _, err := DecodeEntry(AppendEntry(nil, &got), &dec); err != nil || dec != got {
		t.Fatalf("round trip: %+v, %v; want %+v", dec, err, got)
	}
	if e := dec.Edge(); e.Props != want {
		t.Fatalf("Edge(): props %s, want %s", e.Props, want)
	}
	old := got
	old.VProps = ""
	var dOld Entry
	if _, err := DecodeEntry(AppendEntry(nil, &old), &dOld); err != nil || dOld.VProps != "" || dOld.Last != 5 {
		t.Fatalf("value without properties: %+v, %v", dOld, err)
	}
	m, err := Merger.Merge(nil, AppendEntry(nil, &old))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.MergeNewer(AppendEntry(nil, &got)); err != nil {
		t.Fatal(err)
	}
	b, _, err := m.Finish(true)
	if err != nil {
		t.Fatal(err)
	}
	var merged Entry
	if _, err := DecodeEntry(b, &merged); err != nil || merged.VProps != want {
		t.Fatalf("merger: %+v, %v; want props %s", merged, err, want)
	}
}
