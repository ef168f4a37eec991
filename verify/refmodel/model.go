package refmodel

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
)

// MaxBytes is the largest valid record (lineage.DefaultMaxBytes, 1 MiB).
const MaxBytes = 1 << 20

// Options configure the model.
type Options struct {
	// Policy is "strict" (default, also for "") or "any"; see the package
	// documentation.
	Policy string
	// Runs is "all" (default, also for ""), "failed" or "none": which
	// runs give Run vertices (no edge: the vertex names its job and the
	// datasets it read and wrote). "failed": the runs whose first
	// terminal event is FAIL or ABORT (policy strict only).
	Runs string
	// NoColumns leaves column lineage out (lineageflow run
	// -column-lineage=false).
	NoColumns bool
}

// Graph is the lineage a stream gives, with counts of what was seen.
type Graph struct {
	Vertices   map[string]lineage.Vertex // by id
	Edges      map[string]lineage.Edge   // by id, properties merged
	Invalid    int                       // records refused
	Duplicates int                       // valid records byte-identical to an earlier valid record
	Events     int                       // records seen
}

// Model folds records one at a time. It is not safe for concurrent use.
type Model struct {
	any        bool
	noColumns  bool
	noRuns     bool
	failedRuns bool

	events, invalid, dups int
	seen                  map[[sha256.Size]byte]struct{}
	runs                  map[string]*run
	jobEdges              map[string]lineage.Edge
	vertices              map[string]lineage.Vertex // of JobEvent edges and DatasetEvents
	aliasEdges            map[string]lineage.Edge   // ALIAS_OF, CHILD_OF
}

type run struct {
	id       string
	job      lineage.Job
	inputs   map[lineage.Dataset]struct{}
	outputs  map[lineage.Dataset]struct{}
	fields   map[fieldPair]lineage.Props // by key(): the props of the first event naming the pair
	terminal lineage.EventType           // the first terminal event type, "" if none yet
	// streaming: an event before the first terminal one (not itself
	// terminal) said jobType.processingType STREAMING (strict policy).
	streaming bool
	// decided: the run left open (committed, streaming or ended): from
	// then on explicit-lineage facets count only if it is explicit.
	decided  bool
	explicit bool
	pairs    map[lineage.DatasetPair]struct{}
	stamped  bool
	first    int64
	last     int64

	// Run vertex and its edges (every run, whatever its outcome).
	props         lineage.Props
	tMin, tMax    int64 // over all its events
	hasEnd        bool
	endMax        int64 // over its terminal events
	reads, writes map[lineage.Dataset][2]int64
}

// span widens a [min, max] pair by t.
func span(m map[lineage.Dataset][2]int64, d lineage.Dataset, t int64) {
	cur, ok := m[d]
	if !ok {
		m[d] = [2]int64{t, t}
		return
	}
	m[d] = [2]int64{min(cur[0], t), max(cur[1], t)}
}

func (r *run) stamp(ms int64) {
	if !r.stamped || ms < r.first {
		r.first = ms
	}
	if !r.stamped || ms > r.last {
		r.last = ms
	}
	r.stamped = true
}

// New returns an empty model. It panics on an unknown policy.
func New(opts Options) *Model {
	m := &Model{
		noColumns:  opts.NoColumns,
		seen:       make(map[[sha256.Size]byte]struct{}),
		runs:       make(map[string]*run),
		jobEdges:   make(map[string]lineage.Edge),
		vertices:   make(map[string]lineage.Vertex),
		aliasEdges: make(map[string]lineage.Edge),
	}
	switch opts.Runs {
	case "", "all":
	case "none":
		m.noRuns = true
	case "failed":
		m.failedRuns = true
	default:
		panic(fmt.Sprintf("refmodel: unknown runs %q", opts.Runs))
	}
	switch opts.Policy {
	case "", "strict":
	case "any":
		m.any = true
	default:
		panic(fmt.Sprintf("refmodel: unknown policy %q", opts.Policy))
	}
	return m
}

// Build folds records, in order, into a new model and returns its graph.
func Build(records [][]byte, opts Options) *Graph {
	m := New(opts)
	for _, r := range records {
		m.Add(r)
	}
	return m.Graph()
}

// Add folds the next record of the stream.
func (m *Model) Add(data []byte) {
	m.events++
	ev, err := parse(data)
	if err == nil {
		err = guard(data, ev)
	}
	if err != nil {
		m.invalid++
		return
	}
	sum := sha256.Sum256(data)
	if _, ok := m.seen[sum]; ok {
		m.dups++
		return
	}
	m.seen[sum] = struct{}{}
	// Run identity: a RunEvent naming another job than its run's is
	// refused (dead letter run_job_mismatch), after dedup.
	if r := m.runs[ev.runID]; ev.kind == lineage.KindRun && r != nil && r.job != ev.job {
		m.invalid++
		return
	}
	if m.noColumns {
		ev.fields = nil
	}
	m.addAliases(ev)
	m.addParents(ev)
	m.addFacets(ev)
	switch ev.kind {
	case lineage.KindDataset:
		lineage.MergeVertexInto(m.vertices, lineage.DatasetVertex(ev.dataset))
	case lineage.KindJob:
		m.addEdges(m.jobEdges, m.vertices, ev.job, ev.inputs, ev.outputs, ev.explicit, ev.pairs, ev.time, ev.time, "")
		fs := make([]fieldPair, len(ev.fields))
		ps := make([]lineage.Props, len(ev.fields))
		for i, f := range ev.fields {
			fs[i], ps[i] = f.key(), f.props(ev.time)
		}
		m.addFieldEdges(m.jobEdges, m.vertices, fs, ps, ev.time, ev.time, "")
	case lineage.KindRun:
		r := m.runs[ev.runID]
		if r == nil {
			r = &run{id: ev.runID, job: ev.job, inputs: map[lineage.Dataset]struct{}{}, outputs: map[lineage.Dataset]struct{}{},
				fields: map[fieldPair]lineage.Props{},
				tMin:   ev.time, tMax: ev.time, reads: map[lineage.Dataset][2]int64{}, writes: map[lineage.Dataset][2]int64{}}
			m.runs[ev.runID] = r
		}
		m.runVertex(r, ev)
		if hp := lineage.HealthProps(nil, ev.typ, ev.runID, ev.time); len(hp) > 0 {
			v := lineage.JobVertex(r.job)
			v.Props = lineage.MakeProps(hp...)
			lineage.MergeVertexInto(m.vertices, v)
		}
		if !m.any && r.terminal == "" && !ev.typ.Terminal() && ev.streaming {
			r.streaming = true
		}
		term := r.terminal
		if term == "" && ev.typ.Terminal() {
			term = ev.typ
		}
		// A streaming run that FAILs or ABORTs first keeps what it
		// committed before, and gains nothing from then on.
		stopped := r.streaming && (term == lineage.TypeFail || term == lineage.TypeAbort)
		if !stopped {
			for _, d := range ev.inputs {
				r.inputs[d] = struct{}{}
			}
			for _, d := range ev.outputs {
				r.outputs[d] = struct{}{}
			}
			for _, f := range ev.fields {
				if _, ok := r.fields[f.key()]; !ok {
					r.fields[f.key()] = f.props(ev.time)
				}
			}
			if ev.explicit && (!r.decided || r.explicit) {
				r.explicit = true
				if r.pairs == nil {
					r.pairs = map[lineage.DatasetPair]struct{}{}
				}
				for _, p := range ev.pairs {
					r.pairs[p] = struct{}{}
				}
			}
		}
		if m.any || term != "" || r.streaming {
			r.decided = true
		}
		r.terminal = term
		// A streaming run before its first terminal event is stamped by
		// all its events so far (those before it became streaming too).
		streamStamp := r.streaming && term == ""
		if streamStamp {
			r.stamp(r.tMin)
			r.stamp(r.tMax)
		}
		if m.any || ev.typ == lineage.TypeComplete || streamStamp {
			r.stamp(ev.time)
			for _, l := range ev.lifecycle {
				v := lineage.DatasetVertex(l.Dataset)
				v.Props = lineage.MakeProps(lineage.LifecycleProps(l, ev.time)...)
				lineage.MergeVertexInto(m.vertices, v)
			}
		}
	}
}

// Graph returns the graph of the records added so far. The result is
// fresh: later Adds do not change it.
func (m *Model) Graph() *Graph {
	g := &Graph{
		Vertices:   make(map[string]lineage.Vertex, len(m.vertices)),
		Edges:      make(map[string]lineage.Edge, len(m.jobEdges)),
		Invalid:    m.invalid,
		Duplicates: m.dups,
		Events:     m.events,
	}
	for id, v := range m.vertices {
		lineage.MergeVertexInto(g.Vertices, v)
		_ = id
	}
	for id, e := range m.jobEdges {
		g.Edges[id] = e
	}
	for _, e := range m.aliasEdges {
		lineage.MergeInto(g.Edges, e)
	}
	for _, r := range m.runs {
		switch {
		case m.noRuns:
		case m.failedRuns:
			if !m.any && (r.terminal == lineage.TypeFail || r.terminal == lineage.TypeAbort) {
				m.addRun(g, r)
			}
		default:
			m.addRun(g, r)
		}
	}
	for _, r := range m.runs {
		if !r.stamped {
			continue
		}
		if !m.any && r.terminal != lineage.TypeComplete && !r.streaming {
			continue
		}
		pairs := make([]lineage.DatasetPair, 0, len(r.pairs))
		for p := range r.pairs {
			pairs = append(pairs, p)
		}
		m.addEdges(g.Edges, g.Vertices, r.job, setList(r.inputs), setList(r.outputs), r.explicit, pairs, r.first, r.last, r.id)
		for o := range r.outputs {
			v := lineage.DatasetVertex(o)
			v.Props = lineage.MakeProps(lineage.WriteProps(nil, r.id, r.last)...)
			lineage.MergeVertexInto(g.Vertices, v)
		}
		fs := make([]fieldPair, 0, len(r.fields))
		ps := make([]lineage.Props, 0, len(r.fields))
		for f, p := range r.fields {
			fs, ps = append(fs, f), append(ps, p)
		}
		m.addFieldEdges(g.Edges, g.Vertices, fs, ps, r.first, r.last, r.id)
	}
	return g
}

func setList(s map[lineage.Dataset]struct{}) []lineage.Dataset {
	out := make([]lineage.Dataset, 0, len(s))
	for d := range s {
		out = append(out, d)
	}
	return out
}

// addEdges adds the edges of one committed run (or JobEvent) of job j:
// INPUT_TO, OUTPUTS, and DERIVES from every input to every output, or,
// explicit, from the pairs its explicit-lineage facets named.
func (m *Model) addEdges(edges map[string]lineage.Edge, vertices map[string]lineage.Vertex, j lineage.Job, inputs, outputs []lineage.Dataset, explicit bool, pairs []lineage.DatasetPair, first, last int64, runID string) {
	jv := lineage.JobVertex(j)
	add := func(label string, out, in lineage.Vertex) {
		e := lineage.NewEdge(label, out.ID, in.ID, first, last, runID)
		if old, ok := edges[e.ID]; ok {
			old.Merge(e)
			e = old
		}
		edges[e.ID] = e
		lineage.MergeVertexInto(vertices, out)
		lineage.MergeVertexInto(vertices, in)
	}
	for _, i := range inputs {
		add(lineage.EdgeInputTo, lineage.DatasetVertex(i), jv)
	}
	for _, o := range outputs {
		add(lineage.EdgeOutputs, jv, lineage.DatasetVertex(o))
	}
	if explicit {
		if len(pairs) > 0 {
			lineage.MergeVertexInto(vertices, jv)
		}
		for _, p := range pairs {
			if p.In != p.Out {
				add(lineage.EdgeDerives, lineage.DatasetVertex(p.In), lineage.DatasetVertex(p.Out))
			}
		}
		return
	}
	for _, i := range inputs {
		for _, o := range outputs {
			if i != o {
				add(lineage.EdgeDerives, lineage.DatasetVertex(i), lineage.DatasetVertex(o))
			}
		}
	}
}

// addFieldEdges adds the column lineage of one committed run (or
// JobEvent): both DatasetField vertices with FIELD_OF to their Dataset,
// and input field -[COLUMN_DERIVES]-> output field.
func (m *Model) addFieldEdges(edges map[string]lineage.Edge, vertices map[string]lineage.Vertex, fs []fieldPair, ps []lineage.Props, first, last int64, runID string) {
	add := func(label, out, in string, props lineage.Props) {
		e := lineage.NewEdge(label, out, in, first, last, runID)
		e.Props = props
		lineage.MergeInto(edges, e)
	}
	field := func(d lineage.Dataset, f string) string {
		v := lineage.Vertex{ID: lineage.DatasetFieldID(d, f), Label: lineage.LabelDatasetField, Namespace: d.Namespace, Name: d.Name,
			Props: lineage.MakeProps(lineage.StrConst(lineage.PropField, f))}
		dv := lineage.DatasetVertex(d)
		lineage.MergeVertexInto(vertices, v)
		lineage.MergeVertexInto(vertices, dv)
		add(lineage.EdgeFieldOf, v.ID, dv.ID, "")
		return v.ID
	}
	for i, f := range fs {
		add(lineage.EdgeColumnDerives, field(f.in, f.inField), field(f.out, f.outFld), ps[i])
	}
}

// event is what the model needs of a valid record.
type event struct {
	kind            lineage.EventKind
	typ             lineage.EventType
	time            int64 // Unix ms
	runID           string
	job             lineage.Job
	dataset         lineage.Dataset // KindDataset
	inputs, outputs []lineage.Dataset
	aliases         []alias // symlinks of the datasets named
	lifecycle       []lineage.Lifecycle
	fields          []fieldPair // the outputs' columnLineage facets
	facets          []facetOf   // facet properties of its datasets and job
	streaming       bool        // its job's jobType facet says processingType STREAMING
	// explicit: its job's LineageJobFacet or an output's
	// LineageDatasetFacet counts; pairs: the dataset pairs they name.
	explicit bool
	pairs    []lineage.DatasetPair
	// upstream, downstream: the jobDependencies run facet's jobs
	upstream, downstream []lineage.Job

	// the parent run facet (RunEvents), read leniently
	hasParent   bool
	parentRunID string
	parentJob   lineage.Job

	// run facets, read leniently (a facet of another shape is ignored)
	errorMessage           string
	hasError               bool
	nomStart, nomEnd       int64
	hasNomStart, hasNomEnd bool
	// the processing_engine and externalQuery values (at most 1 KiB) by
	// Run vertex property key
	runStrs map[string]string
}

// Valid reports whether data is a valid record, and if not, why.
func Valid(data []byte) error {
	_, err := parse(data)
	return err
}

type object map[string]json.RawMessage

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func asObject(raw json.RawMessage, path string) (object, error) {
	if raw == nil || isNull(raw) {
		return nil, fmt.Errorf("%s: missing", path)
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("%s: not an object", path)
	}
	return o, nil
}

func (o object) str(key, path string) (string, error) {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return "", fmt.Errorf("%s.%s: missing", path, key)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s.%s: not a string", path, key)
	}
	return s, nil
}

func (o object) named(key, path string) (ns, name string, err error) {
	sub, err := asObject(o[key], path+"."+key)
	if err != nil {
		return "", "", err
	}
	if ns, err = sub.str("namespace", path+"."+key); err != nil {
		return "", "", err
	}
	if name, err = sub.str("name", path+"."+key); err != nil {
		return "", "", err
	}
	if ns == "" || name == "" {
		return "", "", fmt.Errorf("%s.%s: empty namespace or name", path, key)
	}
	return ns, name, nil
}

func (o object) datasetsAliases(key string, fields *[]fieldPair, facets *[]facetOf, t int64) ([]lineage.Dataset, []alias, []lineage.Lifecycle, error) {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return nil, nil, nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: not an array", key)
	}
	out := make([]lineage.Dataset, 0, len(items))
	var als []alias
	var lcs []lineage.Lifecycle
	for i, it := range items {
		wrap := object{"d": it}
		ns, name, err := wrap.named("d", fmt.Sprintf("%s[%d]", key, i))
		if err != nil {
			return nil, nil, nil, err
		}
		d := lineage.Dataset{Namespace: ns, Name: name}
		if key == "outputs" {
			if st := lifecycleState(it); st != "" {
				lcs = append(lcs, lineage.Lifecycle{Dataset: d, State: st})
				if st == lineage.LifecycleDrop {
					continue // a DROP is not a write
				}
			}
			*fields = append(*fields, columnLineage(d, it)...)
		}
		out = append(out, d)
		als = append(als, symlinks(d, it)...)
		*facets = appendFacets(*facets, d, false, it, t)
	}
	return out, als, lcs, nil
}

var eventTypes = map[string]lineage.EventType{
	"START": lineage.TypeStart, "RUNNING": lineage.TypeRunning, "COMPLETE": lineage.TypeComplete,
	"ABORT": lineage.TypeAbort, "FAIL": lineage.TypeFail, "OTHER": lineage.TypeOther,
}

func parse(data []byte) (*event, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("oversized: %d bytes", len(data))
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("not JSON")
	}
	top, err := asObject(data, "$")
	if err != nil {
		return nil, err
	}
	ev := &event{}
	ts, err := top.str("eventTime", "$")
	if err != nil {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		// Marquez reads a date-time without a zone as UTC.
		var err2 error
		if t, err2 = time.Parse("2006-01-02T15:04:05.999999999", ts); err2 != nil {
			return nil, fmt.Errorf("eventTime %q: %w", ts, err)
		}
	}
	ev.time = t.UnixMilli()
	present := func(key string) bool { raw, ok := top[key]; return ok && !isNull(raw) }
	var url string
	if raw, ok := top["schemaURL"]; ok {
		_ = json.Unmarshal(raw, &url)
	}
	schemaKind := ""
	if i := strings.LastIndex(url, "/"); i >= 0 {
		schemaKind = url[i+1:]
	}
	switch {
	case !present("run") && present("eventType") && schemaKind == "DatasetEvent":
		// Marquez reads the kind from schemaURL (an eventType too).
		ev.kind = lineage.KindDataset
		ns, name, err := top.named("dataset", "$")
		if err != nil {
			return nil, err
		}
		ev.dataset = lineage.Dataset{Namespace: ns, Name: name}
		ev.aliases = symlinks(ev.dataset, top["dataset"])
		ev.facets = appendFacets(nil, ev.dataset, false, top["dataset"], ev.time)
		return ev, nil
	case !present("run") && present("eventType") && schemaKind == "JobEvent":
		ev.kind = lineage.KindJob
	case present("run") || present("eventType"):
		ev.kind = lineage.KindRun
		runObj, err := asObject(top["run"], "run")
		if err != nil {
			return nil, err
		}
		if ev.runID, err = runObj.str("runId", "run"); err != nil {
			return nil, err
		}
		if ev.runID == "" {
			return nil, fmt.Errorf("run.runId: empty")
		}
		ev.runFacets(runObj)
		var rf map[string]json.RawMessage
		if json.Unmarshal(runObj["facets"], &rf) == nil {
			if raw := rf["jobDependencies"]; len(raw) > 0 && raw[0] == '{' {
				ev.upstream, ev.downstream = lineage.JobDependencies(raw)
			}
		}
		ev.parentRunID, ev.parentJob, ev.hasParent = parentRun(runObj)
		if raw, ok := top["eventType"]; ok && !isNull(raw) {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Errorf("eventType: not a string")
			}
			typ, ok := eventTypes[s]
			if !ok {
				return nil, fmt.Errorf("eventType %q: not in the enum", s)
			}
			ev.typ = typ
		}
	case present("dataset"):
		ev.kind = lineage.KindDataset
		ns, name, err := top.named("dataset", "$")
		if err != nil {
			return nil, err
		}
		ev.dataset = lineage.Dataset{Namespace: ns, Name: name}
		ev.aliases = symlinks(ev.dataset, top["dataset"])
		ev.facets = appendFacets(nil, ev.dataset, false, top["dataset"], ev.time)
		return ev, nil
	case present("job"):
		ev.kind = lineage.KindJob
	default:
		return nil, fmt.Errorf("neither a RunEvent, a DatasetEvent nor a JobEvent")
	}
	ns, name, err := top.named("job", "$")
	if err != nil {
		return nil, err
	}
	ev.job = lineage.Job{Namespace: ns, Name: name}
	ev.facets = appendFacets(ev.facets, lineage.Dataset(ev.job), true, top["job"], ev.time)
	ev.streaming = streamingJob(top["job"])
	var inAl, outAl []alias
	if ev.inputs, inAl, _, err = top.datasetsAliases("inputs", nil, &ev.facets, ev.time); err != nil {
		return nil, err
	}
	if ev.outputs, outAl, ev.lifecycle, err = top.datasetsAliases("outputs", &ev.fields, &ev.facets, ev.time); err != nil {
		return nil, err
	}
	ev.aliases = append(inAl, outAl...)
	ev.explicitLineage(top)
	return ev, nil
}

// explicitLineage reads the explicit-lineage facets of the job and of the
// outputs that are not DROPped.
func (ev *event) explicitLineage(top object) {
	facet := func(raw json.RawMessage) json.RawMessage {
		var o, f map[string]json.RawMessage
		if json.Unmarshal(raw, &o) != nil || json.Unmarshal(o["facets"], &f) != nil {
			return nil
		}
		if l := f["lineage"]; len(l) > 0 && l[0] == '{' {
			return l
		}
		return nil
	}
	var ok bool
	if raw := facet(top["job"]); raw != nil {
		ev.pairs, ok = lineage.JobLineagePairs(ev.pairs, raw)
		ev.explicit = ev.explicit || ok
	}
	var items []json.RawMessage
	_ = json.Unmarshal(top["outputs"], &items)
	for _, it := range items {
		if lifecycleState(it) == lineage.LifecycleDrop {
			continue
		}
		raw := facet(it)
		if raw == nil {
			continue
		}
		var d struct{ Namespace, Name string }
		_ = json.Unmarshal(it, &d)
		ev.pairs, ok = lineage.DatasetLineagePairs(ev.pairs, lineage.Dataset{Namespace: d.Namespace, Name: d.Name}, raw)
		ev.explicit = ev.explicit || ok
	}
}
