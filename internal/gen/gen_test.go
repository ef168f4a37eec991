package gen

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/verify/refmodel"
)

func TestDeterministicBySeed(t *testing.T) {
	t.Parallel()
	c := Config{Seed: 42, Events: 2000}
	a, b := Generate(c), Generate(c)
	if len(a) != len(b) {
		t.Fatalf("lengths %d and %d", len(a), len(b))
	}
	for i := range a {
		if a[i].PartitionKey != b[i].PartitionKey || !bytes.Equal(a[i].Data, b[i].Data) ||
			a[i].Malformed != b[i].Malformed || a[i].Duplicate != b[i].Duplicate {
			t.Fatalf("record %d differs between two runs with the same seed", i)
		}
	}
	c.Seed = 43
	other := Generate(c)
	same := 0
	for i := 0; i < min(len(a), len(other)); i++ {
		if bytes.Equal(a[i].Data, other[i].Data) {
			same++
		}
	}
	if same > len(a)/100 {
		t.Fatalf("seeds 42 and 43 share %d of %d records", same, len(a))
	}
}

// olEvent is what the tests read back from a valid record.
type olEvent struct {
	EventTime string
	EventType *string
	Run       *struct {
		RunID  string
		Facets struct {
			Parent *struct {
				Job struct{ Namespace, Name string }
			}
		}
	}
	Job     *struct{ Namespace, Name string }
	Dataset *struct{ Namespace, Name string }
	Inputs  []struct{ Namespace, Name string }
	Outputs []struct{ Namespace, Name string }
}

func TestRecords(t *testing.T) {
	t.Parallel()
	c := Config{Seed: 7, Events: 6000, MalformedShare: 0.02}.WithDefaults()
	recs := Generate(c)
	if n := len(recs); n < c.Events*9/10 || n > c.Events*11/10 {
		t.Errorf("%d records for Events %d", n, c.Events)
	}
	kinds := map[string]int{}
	seen := map[string]string{} // data -> partition key
	var dups, outOfOrder, timed, wide int
	var prev time.Time
	type runState struct {
		last     string // last event type
		terminal string
	}
	runs := map[string]*runState{}
	var failedRuns, endedRuns int
	for i, r := range recs {
		if bytes.ContainsAny(r.Data, "\n\r") {
			t.Fatalf("record %d holds a line break", i)
		}
		if r.Duplicate {
			dups++
			if key, ok := seen[string(r.Data)]; !ok || key != r.PartitionKey {
				t.Fatalf("record %d: duplicate of no earlier record with key %q", i, r.PartitionKey)
			}
			continue
		}
		if r.Malformed != "" {
			kinds[r.Malformed]++
			if err := refmodel.Valid(r.Data); err == nil {
				t.Errorf("record %d (%s) accepted by refmodel: %.200s", i, r.Malformed, r.Data)
			}
			continue
		}
		if err := refmodel.Valid(r.Data); err != nil {
			t.Fatalf("record %d refused by refmodel: %v: %.300s", i, err, r.Data)
		}
		if r.Wide {
			wide++
			if len(r.Data) <= WideBytes || len(r.Data) >= WideBytes+8<<10 {
				t.Errorf("wide record of %d bytes", len(r.Data))
			}
		}
		if _, ok := seen[string(r.Data)]; ok {
			t.Fatalf("record %d: not marked Duplicate but repeats an earlier record", i)
		}
		seen[string(r.Data)] = r.PartitionKey
		var ev olEvent
		if err := json.Unmarshal(r.Data, &ev); err != nil {
			t.Fatal(err)
		}
		et, err := time.Parse(time.RFC3339Nano, ev.EventTime)
		if err != nil {
			t.Fatal(err)
		}
		if timed == 0 && !et.Equal(c.Start) {
			t.Errorf("first eventTime %v, want %v", et, c.Start)
		}
		if timed > 0 && et.Before(prev) {
			outOfOrder++
		}
		timed++
		prev = et
		var key string
		switch {
		case ev.Run != nil:
			root := *ev.Job
			if p := ev.Run.Facets.Parent; p != nil {
				root = p.Job
			}
			key = "run:" + root.Namespace + "/" + root.Name
			typ := ""
			if ev.EventType != nil {
				typ = *ev.EventType
			}
			st := runs[ev.Run.RunID]
			if st == nil {
				st = &runState{}
				runs[ev.Run.RunID] = st
				if typ != "START" && !r.Wide { // a wide event is a run of one COMPLETE
					t.Errorf("run %s starts with %q", ev.Run.RunID, typ)
				}
			}
			switch {
			case st.terminal == "COMPLETE" && typ == "COMPLETE":
			case st.terminal != "":
				t.Errorf("run %s: %s after terminal %s", ev.Run.RunID, typ, st.terminal)
			case typ == "START" && st.last != "":
				t.Errorf("run %s: START after %s", ev.Run.RunID, st.last)
			}
			if typ == "COMPLETE" || typ == "FAIL" || typ == "ABORT" {
				if st.terminal == "" {
					endedRuns++
					if typ != "COMPLETE" {
						failedRuns++
					}
				}
				st.terminal = typ
			}
			st.last = typ
		case ev.Dataset != nil:
			key = "dataset:" + ev.Dataset.Namespace + "/" + ev.Dataset.Name
		default:
			key = "job:" + ev.Job.Namespace + "/" + ev.Job.Name
		}
		if key != r.PartitionKey {
			t.Fatalf("record %d: partition key %q, want %q", i, r.PartitionKey, key)
		}
	}
	for _, k := range MalformedKinds {
		if kinds[k] == 0 {
			t.Errorf("no %s record", k)
		}
	}
	if wide == 0 {
		t.Error("no wide event")
	}
	near := func(name string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s share %.3f, want %.3f±%.3f", name, got, want, tol)
		}
	}
	near("duplicate", float64(dups)/float64(len(recs)), c.DuplicateShare, 0.03)
	near("out-of-order", float64(outOfOrder)/float64(timed), c.OutOfOrder, 0.03)
	near("failed run", float64(failedRuns)/float64(endedRuns), c.FailShare, 0.04)
	near("malformed", float64(len(recs)-dups-len(seen))/float64(len(recs)), c.MalformedShare, 0.01)
}

func TestStreamStopsAtEmitError(t *testing.T) {
	t.Parallel()
	stop := errors.New("stop")
	n := 0
	err := Stream(Config{Seed: 1, Events: 1000}, func(Record) error {
		n++
		if n == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 10 {
		t.Fatalf("err %v after %d records", err, n)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	c := Config{DuplicateShare: -1, MalformedShare: -1}.WithDefaults()
	if c.DuplicateShare != 0 || c.MalformedShare != 0 || c.Pipelines != 8 || c.FailShare != 0.1 || c.EventGap != 20*time.Millisecond {
		t.Fatalf("defaults: %+v", c)
	}
	for _, r := range Generate(Config{Seed: 3, Events: 500, DuplicateShare: -1, MalformedShare: -1}) {
		if r.Duplicate || r.Malformed != "" {
			t.Fatalf("record %+v with shares off", r)
		}
	}
	if err := Stream(Config{Compact: 0.5}, func(Record) error { return nil }); err == nil {
		t.Fatal("Compact accepted")
	}
	if err := Stream(Config{FailShare: 1.5}, func(Record) error { return nil }); err == nil {
		t.Fatal("FailShare 1.5 accepted")
	}
}

// The generated stream must give a graph worth testing: edges of every
// kind, ghost bait (failed runs naming outputs), and edges that repeat.
func TestStreamGivesLineage(t *testing.T) {
	t.Parallel()
	recs := Generate(Config{Seed: 11, Events: 3000})
	data := make([][]byte, len(recs))
	for i, r := range recs {
		data[i] = r.Data
	}
	strict := refmodel.Build(data, refmodel.Options{})
	loose := refmodel.Build(data, refmodel.Options{Policy: "any"})
	labels := map[string]int{}
	for _, e := range strict.Edges {
		labels[e.Label]++
	}
	if labels["INPUT_TO"] == 0 || labels["OUTPUTS"] == 0 || labels["DERIVES"] == 0 {
		t.Fatalf("edge labels %v", labels)
	}
	if refmodel.Compare(strict, loose).Empty() {
		t.Fatal("policy any gives the same graph as strict: no ghost lineage in the stream")
	}
	repeated := 0
	for _, e := range strict.Edges {
		if e.FirstSeen != e.LastSeen {
			repeated++
		}
	}
	if repeated < len(strict.Edges)/2 {
		t.Fatalf("only %d of %d edges seen more than once", repeated, len(strict.Edges))
	}
	t.Logf("%d records: %d vertices, %d edges %v, invalid %d, duplicates %d",
		len(recs), len(strict.Vertices), len(strict.Edges), labels, strict.Invalid, strict.Duplicates)
}

func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	events, size := 0, 0
	for i := 0; i < b.N; i++ {
		if err := Stream(Config{Seed: int64(i), Events: 10000}, func(r Record) error {
			events++
			size += len(r.Data)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(size)/float64(events), "bytes/event")
}
