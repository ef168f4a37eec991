package semantics

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
)

// recorder is an Emitter that records what the rules write. Every lane is
// the event's bucket.
type recorder struct {
	touches     []string // "bucket/origin"
	vertices    []lineage.Vertex
	edges       []string // "LABEL out->in first..last run"
	transitions []string // "from->to"
	counts      map[Counter]int64
	written     map[int64]bool // buckets touched before a write
}

func newRecorder() *recorder {
	return &recorder{counts: map[Counter]int64{}, written: map[int64]bool{}}
}

func (r *recorder) Touch(b int64, o Origin) {
	r.touches = append(r.touches, fmt.Sprintf("%d/%d", b, o))
	r.written[b] = true
}

func (r *recorder) check(b int64) {
	if !r.written[b] {
		panic(fmt.Sprintf("write to bucket %d before a Touch", b))
	}
}

func (r *recorder) AddVertex(b int64, v lineage.Vertex) {
	r.check(b)
	r.vertices = append(r.vertices, v)
}
func (r *recorder) AddVertexProps(b int64, v lineage.Vertex, ps []lineage.Prop) {
	r.check(b)
	v.Props = lineage.MakeProps(ps...)
	r.vertices = append(r.vertices, v)
}
func (r *recorder) AddEdge(b int64, label, out, in string, first, last int64, runID string) {
	r.check(b)
	r.edges = append(r.edges, fmt.Sprintf("%s %s->%s %d..%d %s", label, out, in, first, last, runID))
}
func (r *recorder) AddEdgeProps(b int64, label, out, in string, first, last int64, runID string, _ lineage.Props) {
	r.AddEdge(b, label, out, in, first, last, runID)
}
func (r *recorder) EdgeLane(b int64, _, _, _ string) int64                       { return b }
func (r *recorder) EdgePropsLane(b int64, _, _, _ string, _ lineage.Props) int64 { return b }
func (r *recorder) PropLane(b int64, _ string, _ lineage.Prop) int64             { return b }
func (r *recorder) MaySpill()                                                    {}
func (r *recorder) Transition(_ *Run, from, to Status) {
	r.transitions = append(r.transitions, statusName[from]+"->"+statusName[to])
}
func (r *recorder) Count(c Counter, n int64) { r.counts[c] += n }

// lineageEdges are the recorded INPUT_TO, OUTPUTS and DERIVES edges.
func (r *recorder) lineageEdges() []string {
	var out []string
	for _, e := range r.edges {
		for _, l := range []string{lineage.EdgeInputTo, lineage.EdgeOutputs, lineage.EdgeDerives} {
			if len(e) > len(l) && e[:len(l)+1] == l+" " {
				out = append(out, e)
			}
		}
	}
	return out
}

func (r *recorder) reset() {
	r.touches, r.vertices, r.edges, r.transitions = nil, nil, nil, nil
}

var statusName = map[Status]string{StatusOpen: "open", StatusCommitted: "committed", StatusClosed: "closed", StatusStreaming: "streaming"}

var (
	job  = lineage.Job{Namespace: "ns", Name: "etl"}
	dsIn = lineage.Dataset{Namespace: "s3://raw", Name: "in"}
	dsOu = lineage.Dataset{Namespace: "s3://mart", Name: "out"}
)

// runEv is a RunEvent of run "r1" at Unix ms t.
func runEv(typ lineage.EventType, t int64, ins, outs []lineage.Dataset) *lineage.Event {
	return &lineage.Event{Kind: lineage.KindRun, Type: typ, Time: time.UnixMilli(t).UTC(), RunID: "r1", Job: job,
		Inputs: ins, Outputs: outs}
}

// streaming marks ev's job as a streaming job (jobType facet).
func streaming(ev *lineage.Event) *lineage.Event {
	ev.Facets = append(ev.Facets, lineage.FacetProps{Label: lineage.LabelJob, Namespace: job.Namespace, Name: job.Name,
		Props: []lineage.Prop{lineage.StrLWW(lineage.PropProcessingType, lineage.ProcessingStreaming, ev.Time.UnixMilli())}})
	return ev
}

type fixture struct {
	x   *Rules
	ids *IDs
	run Run
	em  *recorder
}

func newFixture(cfg Config) *fixture {
	ids := NewIDs()
	return &fixture{x: NewRules(cfg, ids), ids: ids, run: StartRun("r1", job, ids.Job(job)), em: newRecorder()}
}

func (f *fixture) put(ev *lineage.Event) { f.x.Event(ev, &f.run, 1000, f.em) }

func (f *fixture) edge(label string, out, in string, first, last int64) string {
	return fmt.Sprintf("%s %s->%s %d..%d r1", label, out, in, first, last)
}

func (f *fixture) allEdges(first, last int64) []string {
	in, out, j := f.ids.Dataset(dsIn), f.ids.Dataset(dsOu), f.ids.Job(job)
	return []string{
		f.edge(lineage.EdgeInputTo, in, j, first, last),
		f.edge(lineage.EdgeOutputs, j, out, first, last),
		f.edge(lineage.EdgeDerives, in, out, first, last),
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// COMPLETE commits a strict run: its first events give no edge, COMPLETE
// gives the union's edges stamped with its eventTime, as the run's own
// emission (pinned by the run).
func TestCompleteCommits(t *testing.T) {
	t.Parallel()
	f := newFixture(Config{Policy: PolicyStrict, Runs: RunsNone})
	f.put(runEv(lineage.TypeStart, 100, []lineage.Dataset{dsIn}, nil))
	f.put(runEv(lineage.TypeRunning, 150, nil, nil))
	if len(f.em.edges) != 0 || len(f.em.transitions) != 0 || f.run.Status != StatusOpen {
		t.Fatalf("open run wrote %v, transitions %v, status %v", f.em.edges, f.em.transitions, f.run.Status)
	}
	f.put(runEv(lineage.TypeComplete, 200, nil, []lineage.Dataset{dsOu}))
	if f.run.Status != StatusCommitted || !slices.Equal(f.em.transitions, []string{"open->committed"}) {
		t.Fatalf("status %v, transitions %v", f.run.Status, f.em.transitions)
	}
	if got := f.em.lineageEdges(); !sameSet(got, f.allEdges(200, 200)) {
		t.Errorf("edges %v, want %v", got, f.allEdges(200, 200))
	}
	if !slices.Contains(f.em.touches, "1000/1") {
		t.Errorf("touches %v: want the run's emission (FromRun)", f.em.touches)
	}
}

// FAIL or ABORT first closes a strict run: no edge then or ever, and the
// run forgets its datasets.
func TestFailAbortClose(t *testing.T) {
	t.Parallel()
	for _, typ := range []lineage.EventType{lineage.TypeFail, lineage.TypeAbort} {
		f := newFixture(Config{Policy: PolicyStrict, Runs: RunsNone})
		f.put(runEv(lineage.TypeStart, 100, []lineage.Dataset{dsIn}, nil))
		f.put(runEv(typ, 200, nil, []lineage.Dataset{dsOu}))
		f.put(runEv(lineage.TypeComplete, 300, []lineage.Dataset{dsIn}, []lineage.Dataset{dsOu}))
		if f.run.Status != StatusClosed || !slices.Equal(f.em.transitions, []string{"open->closed"}) {
			t.Errorf("%s: status %v, transitions %v", typ, f.run.Status, f.em.transitions)
		}
		if len(f.em.lineageEdges()) != 0 || len(f.run.Inputs)+len(f.run.Outputs) != 0 || f.run.HasC {
			t.Errorf("%s: edges %v, run datasets %d, stamped %v", typ, f.em.lineageEdges(), len(f.run.Inputs)+len(f.run.Outputs), f.run.HasC)
		}
	}
}

// Policy any: every event commits and stamps; a FAIL too.
func TestPolicyAny(t *testing.T) {
	t.Parallel()
	f := newFixture(Config{Policy: PolicyAny, Runs: RunsNone})
	f.put(runEv(lineage.TypeStart, 100, []lineage.Dataset{dsIn}, []lineage.Dataset{dsOu}))
	if got := f.em.lineageEdges(); !sameSet(got, f.allEdges(100, 100)) {
		t.Errorf("START: edges %v, want %v", got, f.allEdges(100, 100))
	}
	f.em.reset()
	f.put(runEv(lineage.TypeFail, 300, nil, nil))
	if got := f.em.lineageEdges(); !sameSet(got, f.allEdges(100, 300)) {
		t.Errorf("FAIL: edges %v, want %v (restamped)", got, f.allEdges(100, 300))
	}
	if f.run.Status != StatusCommitted || len(f.em.transitions) != 0 {
		t.Errorf("status %v, transitions %v", f.run.Status, f.em.transitions)
	}
}

// Stamps: the min and max eventTime of the events that stamp (COMPLETE
// under strict), whatever their order; an event that widens neither and
// adds nothing writes no lineage.
func TestStamps(t *testing.T) {
	t.Parallel()
	f := newFixture(Config{Policy: PolicyStrict, Runs: RunsNone})
	f.put(runEv(lineage.TypeStart, 50, []lineage.Dataset{dsIn}, []lineage.Dataset{dsOu}))
	f.put(runEv(lineage.TypeComplete, 200, nil, nil))
	f.put(runEv(lineage.TypeComplete, 120, nil, nil))
	if f.run.MinC != 120 || f.run.MaxC != 200 || !f.run.HasC {
		t.Fatalf("stamps %d..%d (set %v), want 120..200", f.run.MinC, f.run.MaxC, f.run.HasC)
	}
	if got := f.em.lineageEdges()[3:]; !sameSet(got, f.allEdges(120, 200)) {
		t.Errorf("edges %v, want %v", got, f.allEdges(120, 200))
	}
	f.em.reset()
	f.put(runEv(lineage.TypeComplete, 150, nil, nil))
	f.put(runEv(lineage.TypeRunning, 10, nil, nil)) // not a stamping event
	if len(f.em.lineageEdges()) != 0 || f.run.MinC != 120 {
		t.Errorf("edges %v, min %d: nothing changed", f.em.lineageEdges(), f.run.MinC)
	}
}

// Streaming: jobType STREAMING before any terminal event commits the run
// at once, stamped with every event so far; a later FAIL stops it without
// retracting, and gives nothing new.
func TestStreaming(t *testing.T) {
	t.Parallel()
	f := newFixture(Config{Policy: PolicyStrict, Runs: RunsNone})
	f.put(runEv(lineage.TypeStart, 100, []lineage.Dataset{dsIn}, nil))
	f.put(streaming(runEv(lineage.TypeRunning, 300, nil, []lineage.Dataset{dsOu})))
	if f.run.Status != StatusStreaming || !slices.Equal(f.em.transitions, []string{"open->streaming"}) {
		t.Fatalf("status %v, transitions %v", f.run.Status, f.em.transitions)
	}
	if got := f.em.lineageEdges(); !sameSet(got, f.allEdges(100, 300)) {
		t.Errorf("edges %v, want %v", got, f.allEdges(100, 300))
	}
	f.em.reset()
	f.put(runEv(lineage.TypeRunning, 400, nil, nil)) // the facet holds: stamps
	if got := f.em.lineageEdges(); !sameSet(got, f.allEdges(100, 400)) {
		t.Errorf("edges %v, want %v", got, f.allEdges(100, 400))
	}
	f.em.reset()
	f.put(runEv(lineage.TypeFail, 500, []lineage.Dataset{{Namespace: "x", Name: "late"}}, nil))
	if f.run.Status != StatusClosed || !slices.Equal(f.em.transitions, []string{"streaming->closed"}) || len(f.em.lineageEdges()) != 0 {
		t.Errorf("status %v, transitions %v, edges %v", f.run.Status, f.em.transitions, f.em.lineageEdges())
	}
}

// The facet on a terminal event only does not make a run streaming: a FAIL
// then gives nothing.
func TestStreamingTerminalOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(Config{Policy: PolicyStrict, Runs: RunsNone})
	f.put(runEv(lineage.TypeStart, 100, []lineage.Dataset{dsIn}, []lineage.Dataset{dsOu}))
	f.put(streaming(runEv(lineage.TypeFail, 200, nil, nil)))
	if f.run.Status != StatusClosed || len(f.em.lineageEdges()) != 0 {
		t.Errorf("status %v, edges %v", f.run.Status, f.em.lineageEdges())
	}
}

// -runs: all gives a Run vertex per event (each listing the datasets of
// the run so far); failed only from the closing event on (listing every
// dataset of the run); none never. No run ever gives an edge.
func TestRunRecords(t *testing.T) {
	t.Parallel()
	runVertices := func(em *recorder) int {
		n := 0
		for _, v := range em.vertices {
			if v.Label == lineage.LabelRun {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		runs        RunRecords
		typ         lineage.EventType
		want, reads int
	}{
		{RunsAll, lineage.TypeComplete, 2, 2}, {RunsAll, lineage.TypeFail, 2, 2},
		{RunsFailed, lineage.TypeComplete, 0, 0}, {RunsFailed, lineage.TypeFail, 1, 1},
		{RunsNone, lineage.TypeFail, 0, 0},
	} {
		f := newFixture(Config{Policy: PolicyStrict, Runs: tc.runs})
		f.put(runEv(lineage.TypeStart, 100, []lineage.Dataset{dsIn}, nil))
		f.put(runEv(tc.typ, 200, nil, []lineage.Dataset{dsOu}))
		reads := 0 // Run vertices that list dsIn among their inputs
		for _, v := range f.em.vertices {
			if p, ok := v.Props.Get(lineage.PropInputs); ok && v.Label == lineage.LabelRun &&
				slices.Contains(lineage.ParseRunDatasetList(p.Str), lineage.DatasetID(dsIn)) {
				reads++
			}
		}
		for _, e := range f.em.edges {
			if strings.Contains(e, "run:") {
				t.Errorf("-runs %s: a run edge %s", tc.runs, e)
			}
		}
		if got := runVertices(f.em); got != tc.want || reads != tc.reads {
			t.Errorf("-runs %s, %s: %d Run vertices, %d READ; want %d, %d", tc.runs, tc.typ, got, reads, tc.want, tc.reads)
		}
	}
}

// The run budget: datasets past MaxRunDatasets are left out and counted.
func TestRunBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(Config{Policy: PolicyStrict, Runs: RunsNone, MaxRunDatasets: 20})
	var ins []lineage.Dataset
	for i := range 30 {
		ins = append(ins, lineage.Dataset{Namespace: "s3://raw", Name: fmt.Sprint("t", i)})
	}
	f.put(runEv(lineage.TypeStart, 100, ins, nil))
	f.put(runEv(lineage.TypeRunning, 110, ins, nil)) // all known or over: nothing added
	if len(f.run.Inputs) != 20 || len(f.run.inIdx) != 20 || f.em.counts[CountRunDatasetsDropped] != 20 {
		t.Errorf("inputs %d, index %d, dropped %d; want 20, 20, 20", len(f.run.Inputs), len(f.run.inIdx), f.em.counts[CountRunDatasetsDropped])
	}
}

// Merge: FAIL first anywhere closes; otherwise committed over streaming
// over open, with the union of datasets and stamps.
func TestMerge(t *testing.T) {
	t.Parallel()
	ids := NewIDs()
	a, b := StartRun("r", job, ids.Job(job)), StartRun("r", job, ids.Job(job))
	a.Inputs = []DatasetRef{ids.Ref(dsIn)}
	b.Status, b.Outputs, b.HasC, b.MinC, b.MaxC = StatusCommitted, []DatasetRef{ids.Ref(dsOu)}, true, 5, 9
	a.Merge(&b)
	if a.Status != StatusCommitted || len(a.Inputs) != 1 || len(a.Outputs) != 1 || a.MinC != 5 || a.MaxC != 9 {
		t.Errorf("merged %+v", a)
	}
	c := StartRun("r", job, ids.Job(job))
	c.Status = StatusClosed
	a.Merge(&c)
	if a.Status != StatusClosed || a.Inputs != nil {
		t.Errorf("merged with a closed run: %+v", a)
	}
}

// A Run event's properties come in key order (lineage.MakeProps encodes
// them without sorting), every optional one present.
func TestRunEventPropsInKeyOrder(t *testing.T) {
	t.Parallel()
	ev := runEv(lineage.TypeFail, 200, nil, nil)
	ev.Run.HasError, ev.Run.ErrorMessage = true, "boom"
	ev.Run.HasNominalStart, ev.Run.HasNominalEnd = true, true
	ev.Run.EngineName, ev.Run.EngineVersion, ev.Run.AdapterVersion = lineage.OptStr{V: "spark", Ok: true}, lineage.OptStr{V: "3.5", Ok: true}, lineage.OptStr{V: "1.40", Ok: true}
	ev.Run.ExternalQueryID, ev.Run.ExternalQuerySource = lineage.OptStr{V: "q", Ok: true}, lineage.OptStr{V: "bq", Ok: true}
	ev.Parent = &lineage.ParentRun{RunID: "parent", Job: lineage.Job{Namespace: "n", Name: "p"}}
	ps := appendRunEventProps(nil, "r", lineage.Job{Namespace: "n", Name: "j"}, "job:1:n/j", ev, 100, 200, true,
		[]string{"b", "a"}, []string{"c"})
	if len(ps) != 22 {
		t.Fatalf("%d properties, want 22: %+v", len(ps), ps)
	}
	for i := 1; i < len(ps); i++ {
		if ps[i-1].Key >= ps[i].Key {
			t.Fatalf("%s before %s", ps[i-1].Key, ps[i].Key)
		}
	}
	if got, want := lineage.MakeProps(ps...), lineage.Props("").With(ps...); got != want {
		t.Fatal("MakeProps of the ordered set differs from a merge")
	}
}
