package lineage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// refDecode is the reference decoder: the straightforward way to write the
// decoder on top of encoding/json (objects as map[string]json.RawMessage,
// so duplicate keys resolve last-wins and keys match exactly). The fast
// Decoder must agree with it on every input; see
// FuzzDecodeAgreesWithEncodingJSON. It shares with the fast decoder the
// error constructors (the wording) and facetPropsOf (which vertex facet
// gives which property; the facet objects themselves are held to
// refInterpretFacet by TestInterpretFacet); the other facets it reads with
// the encoding/json references of decode_facets_ref_test.go.
func refDecode(data []byte, maxBytes int) (Event, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if len(data) > maxBytes {
		return Event{}, &DecodeError{Reason: ReasonOversized, Msg: fmt.Sprintf("record is %d bytes, over the %d-byte limit", len(data), maxBytes)}
	}
	if !json.Valid(data) {
		return Event{}, &DecodeError{Reason: ReasonNotJSON, Msg: "not valid JSON"}
	}
	var m refObj
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return Event{}, &DecodeError{Reason: ReasonUnknownFormat,
			Msg: fmt.Sprintf("top-level JSON value is %s, not an object", article(bytes.TrimLeft(data, " \t\r\n")[0]))}
	}
	if m.has("v") {
		return refCompact(m)
	}
	return refOpenLineage(m)
}

// refTimeForm is the form of RFC 3339 date-times the decoder accepts;
// time.Parse checks the ranges.
var refTimeForm = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$`)

func refParseTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if !refTimeForm.MatchString(s) || err != nil || t.UTC().Year() < 0 || t.UTC().Year() > 9999 {
		return time.Time{}, false
	}
	// time.Parse takes offsets such as +24:00 and +00:60.
	if n := len(s); s[n-1] != 'Z' && (s[n-5:n-3] > "23" || s[n-2:] > "59") {
		return time.Time{}, false
	}
	return t.UTC(), true
}

type refObj map[string]json.RawMessage

// has reports whether key is present and not null.
func (m refObj) has(key string) bool {
	raw, ok := m[key]
	return ok && string(raw) != "null"
}

// typ returns the first byte of the value of key, 0 when absent or null.
func (m refObj) typ(key string) byte {
	if !m.has(key) {
		return 0
	}
	return m[key][0]
}

func (m refObj) obj(key string) refObj {
	var o refObj
	if m.typ(key) == '{' {
		if err := json.Unmarshal(m[key], &o); err != nil {
			panic(err)
		}
	}
	return o
}

func (m refObj) rawString(key string) string {
	var s string
	if err := json.Unmarshal(m[key], &s); err != nil {
		panic(err)
	}
	return s
}

func (m refObj) need(key, path string) (string, error) {
	switch c := m.typ(key); c {
	case 0:
		return "", errMissing(path)
	case '"':
		s := m.rawString(key)
		if s == "" {
			return "", errEmpty(path)
		}
		return s, nil
	default:
		return "", errType(path, "a string", c)
	}
}

func (m refObj) opt(key, path string) (string, error) {
	switch c := m.typ(key); c {
	case 0:
		return "", nil
	case '"':
		return m.rawString(key), nil
	default:
		return "", errType(path, "a string", c)
	}
}

func (m refObj) eventType(key string) (EventType, error) {
	s, err := m.opt(key, key)
	if err != nil || !m.has(key) {
		return "", err
	}
	for _, t := range []EventType{"START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"} {
		if s == string(t) {
			return t, nil
		}
	}
	return "", errEventType(key, s)
}

func (m refObj) time(key string) (time.Time, error) {
	s, err := m.need(key, key)
	if err != nil {
		return time.Time{}, err
	}
	t, ok := refParseTime(s)
	if !ok {
		return time.Time{}, errTime(key, s)
	}
	return t, nil
}

// named decodes the required object at key with namespace field nsKey and
// name.
func (m refObj) named(key, path, nsKey string) (Dataset, error) {
	switch c := m.typ(key); c {
	case 0:
		return Dataset{}, errMissing(path)
	case '{':
	default:
		return Dataset{}, errType(path, "an object", c)
	}
	o := m.obj(key)
	ns, err := o.need(nsKey, path+"."+nsKey)
	if err != nil {
		return Dataset{}, err
	}
	name, err := o.need("name", path+".name")
	if err != nil {
		return Dataset{}, err
	}
	return Dataset{Namespace: ns, Name: name}, nil
}

// list decodes the optional dataset array at key; cols collects the
// columnLineage facets.
// refAliases returns the aliases of the elements of the dataset array at
// key (OpenLineage format): the symlinks facet of each.
func (m refObj) refAliases(key string) []Alias {
	var out []Alias
	if m.typ(key) != '[' {
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(m[key], &elems); err != nil {
		panic(err)
	}
	for _, raw := range elems {
		e := refObj{"e": raw}
		if key == "outputs" && e.obj("e").typ("facets") == '{' {
			f := e.obj("e").obj("facets")
			if f.typ("lifecycleStateChange") == '{' && refLifecycleOf(f["lifecycleStateChange"]) == LifecycleDrop {
				continue
			}
		}
		out = append(out, e.refAliasesOf()...)
	}
	return out
}

// refAliasesOf returns the aliases of the dataset object at "e".
// refFacetRaws returns the facets of object key read as properties.
func (m refObj) refFacetRaws(key string) *facetRaws {
	var f facetRaws
	if m.typ(key) != '{' || m.obj(key).typ("facets") != '{' {
		return &f
	}
	fs := m.obj(key).obj("facets")
	for _, name := range []string{"schema", "dataSource", "documentation", "ownership", "version", "sql", "jobType", "sourceCodeLocation"} {
		if fs.typ(name) == '{' {
			f.set(name, fs[name])
		}
	}
	return &f
}

// refFacets appends the facet properties of the elements of the dataset
// array at key (a DROPped output has none).
func (m refObj) refFacets(dst []FacetProps, key string, t int64) []FacetProps {
	if m.typ(key) != '[' {
		return dst
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(m[key], &elems); err != nil {
		panic(err)
	}
	for _, raw := range elems {
		e := refObj{"e": raw}
		if key == "outputs" && e.obj("e").typ("facets") == '{' {
			f := e.obj("e").obj("facets")
			if f.typ("lifecycleStateChange") == '{' && refLifecycleOf(f["lifecycleStateChange"]) == LifecycleDrop {
				continue
			}
		}
		ds, err := e.named("e", "e", "namespace")
		if err != nil {
			panic(err)
		}
		dst = facetPropsOf(dst, nil, LabelDataset, ds.Namespace, ds.Name, e.refFacetRaws("e"), t)
	}
	return dst
}

func (m refObj) refAliasesOf() []Alias {
	ds, err := m.named("e", "e", "namespace")
	if err != nil || m.obj("e").typ("facets") != '{' {
		return nil
	}
	f := m.obj("e").obj("facets")
	if f.typ("symlinks") != '{' {
		return nil
	}
	return refAliasesOf(nil, ds, f["symlinks"])
}

func (m refObj) list(key, nsKey string, cols bool, lc *[]Lifecycle) ([]Dataset, []ColumnLineage, error) {
	switch c := m.typ(key); c {
	case 0:
		return nil, nil, nil
	case '[':
	default:
		return nil, nil, errType(key, "an array", c)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(m[key], &elems); err != nil {
		panic(err)
	}
	var out []Dataset
	var cl []ColumnLineage
	for i, raw := range elems {
		path := key + "[" + strconv.Itoa(i) + "]"
		wrap := refObj{"e": raw}
		ds, err := wrap.named("e", path, nsKey)
		if err != nil {
			if wrap.typ("e") == 0 { // a null element is not an absent one
				err = errType(path, "an object", 'n')
			}
			return nil, nil, err
		}
		if cols {
			e := wrap.obj("e")
			switch c := e.typ("facets"); c {
			case 0, '{':
			default:
				return nil, nil, errType(path+".facets", "an object", c)
			}
			f := e.obj("facets")
			var col []ColumnLineage
			switch c := f.typ("columnLineage"); c {
			case 0:
			case '{':
				col = []ColumnLineage{{Output: ds, Raw: []byte(f["columnLineage"])}}
			default:
				return nil, nil, errType(path+".facets.columnLineage", "an object", c)
			}
			if nsKey == "namespace" && f.typ("lifecycleStateChange") == '{' {
				if st := refLifecycleOf(f["lifecycleStateChange"]); st != "" {
					*lc = append(*lc, Lifecycle{Dataset: ds, State: st})
					if st == LifecycleDrop {
						continue
					}
				}
			}
			cl = append(cl, col...)
		}
		out = append(out, ds)
	}
	return out, cl, nil
}

func refOpenLineage(m refObj) (Event, error) {
	var ev Event
	var url string
	if m.typ("schemaURL") == '"' {
		url = m.rawString("schemaURL")
	}
	refKind := func() EventKind {
		if i := strings.LastIndex(url, "/"); i >= 0 {
			switch url[i+1:] {
			case "JobEvent":
				return KindJob
			case "DatasetEvent":
				return KindDataset
			}
		}
		return 0
	}
	switch {
	case !m.has("run") && m.has("eventType") && refKind() != 0:
		ev.Kind, ev.Lenient = refKind(), LenientKindFromSchemaURL
	case m.has("run") || m.has("eventType"):
		ev.Kind = KindRun
	case m.has("dataset"):
		ev.Kind = KindDataset
	case m.has("job"):
		ev.Kind = KindJob
	default:
		return Event{}, errUnknownFormat()
	}
	var err error
	if ev.Kind == KindRun {
		if ev.Type, err = m.eventType("eventType"); err != nil {
			return Event{}, err
		}
	}
	if ev.Time, err = m.time("eventTime"); err != nil {
		// Zone-less date-times are read as UTC (and reported).
		s, _ := m.need("eventTime", "eventTime")
		t, ok := refParseTime(s + "Z")
		if !ok || m.typ("eventTime") != '"' {
			return Event{}, err
		}
		ev.Time, ev.Lenient = t, ev.Lenient|LenientZonelessTime
	}
	if ev.Kind == KindRun {
		switch c := m.typ("run"); c {
		case 0:
			return Event{}, errMissing("run")
		case '{':
		default:
			return Event{}, errType("run", "an object", c)
		}
		run := m.obj("run")
		if ev.RunID, err = run.need("runId", "run.runId"); err != nil {
			return Event{}, err
		}
		switch c := run.typ("facets"); c {
		case 0, '{':
		default:
			return Event{}, errType("run.facets", "an object", c)
		}
		facets := run.obj("facets")
		var errRaw, nomRaw []byte
		if facets.typ("errorMessage") == '{' {
			errRaw = facets["errorMessage"]
		}
		if facets.typ("nominalTime") == '{' {
			nomRaw = facets["nominalTime"]
		}
		ev.Run = refRunFacetsOf(errRaw, nomRaw)
		var engRaw, extRaw []byte
		if facets.typ("processing_engine") == '{' {
			engRaw = facets["processing_engine"]
		}
		if facets.typ("externalQuery") == '{' {
			extRaw = facets["externalQuery"]
		}
		if refRunExtraFacetsOf(&ev.Run, engRaw, extRaw) {
			ev.Lenient |= LenientCappedRunFacet
		}
		switch c := facets.typ("parent"); c {
		case 0:
		case '{':
			// Read leniently: an invalid parent facet is ignored.
			p := facets.obj("parent")
			// The transport's key: root.job, else job, each when valid.
			for _, o := range []refObj{p.obj("root"), p} {
				if o.typ("job") == '{' {
					if kj, err := o.named("job", "", "namespace"); err == nil {
						ev.KeyJob = Job(kj)
						break
					}
				}
			}
			id, err := p.obj("run").need("runId", "run.facets.parent.run.runId")
			job, err2 := p.named("job", "run.facets.parent.job", "namespace")
			if p.typ("run") == '{' && err == nil && err2 == nil {
				ev.Parent = &ParentRun{RunID: id, Job: Job(job)}
			} else {
				ev.Lenient |= LenientInvalidParent
			}
		default:
			ev.Lenient |= LenientInvalidParent
		}
	}
	if ev.Kind == KindDataset {
		ds, err := m.named("dataset", "dataset", "namespace")
		if err != nil {
			return Event{}, err
		}
		ev.Datasets = []Dataset{ds}
		ev.Aliases = refObj{"e": m["dataset"]}.refAliasesOf()
		ev.Facets = facetPropsOf(nil, nil, LabelDataset, ds.Namespace, ds.Name, m.refFacetRaws("dataset"), ev.Time.UnixMilli())
	} else {
		job, err := m.named("job", "job", "namespace")
		if err != nil {
			return Event{}, err
		}
		ev.Job = Job(job)
		if ev.Inputs, _, err = m.list("inputs", "namespace", false, &ev.Lifecycle); err != nil {
			return Event{}, err
		}
		if ev.Outputs, ev.Columns, err = m.list("outputs", "namespace", true, &ev.Lifecycle); err != nil {
			return Event{}, err
		}
		ev.Aliases = append(m.refAliases("inputs"), m.refAliases("outputs")...)
		t := ev.Time.UnixMilli()
		ev.Facets = m.refFacets(m.refFacets(nil, "inputs", t), "outputs", t)
		ev.Facets = facetPropsOf(ev.Facets, nil, LabelJob, job.Namespace, job.Name, m.refFacetRaws("job"), t)
	}
	if ev.Producer, err = m.opt("producer", "producer"); err != nil {
		return Event{}, err
	}
	if ev.SchemaURL, err = m.opt("schemaURL", "schemaURL"); err != nil {
		return Event{}, err
	}
	return ev, nil
}

func refCompact(m refObj) (Event, error) {
	switch c := m.typ("v"); c {
	case '"', '{', '[', 't', 'f':
		return Event{}, errType("v", "a number", c)
	}
	var v float64
	if err := json.Unmarshal(m["v"], &v); err != nil || v != 1 {
		return Event{}, &DecodeError{Reason: ReasonInvalidValue, Field: "v",
			Msg: "unsupported compact format version " + quoteValue(string(m["v"])) + ", want 1"}
	}
	var ev Event
	var err error
	if ev.Type, err = m.eventType("type"); err != nil {
		return Event{}, err
	}
	if ev.Time, err = m.time("time"); err != nil {
		return Event{}, err
	}
	ev.Kind = KindJob
	if m.has("run") || m.has("type") {
		ev.Kind = KindRun
		if ev.RunID, err = m.need("run", "run"); err != nil {
			return Event{}, err
		}
	}
	job, err := m.named("job", "job", "ns")
	if err != nil {
		return Event{}, err
	}
	ev.Job = Job(job)
	if ev.Inputs, _, err = m.list("in", "ns", false, &ev.Lifecycle); err != nil {
		return Event{}, err
	}
	if ev.Outputs, _, err = m.list("out", "ns", false, &ev.Lifecycle); err != nil {
		return Event{}, err
	}
	if ev.Kind == KindRun {
		switch c := m.typ("parent"); c {
		case 0:
		case '{':
			p := m.obj("parent")
			id, err := p.need("run", "parent.run")
			if err != nil {
				return Event{}, err
			}
			job, err := p.named("job", "parent.job", "ns")
			if err != nil {
				return Event{}, err
			}
			ev.Parent = &ParentRun{RunID: id, Job: Job(job)}
		default:
			return Event{}, errType("parent", "an object", c)
		}
	}
	if ev.Producer, err = m.opt("producer", "producer"); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// eventDiff describes how a and b differ, or returns "" when they are the
// same event (nil and empty slices are the same).
func eventDiff(a, b *Event) string {
	switch {
	case a.Kind != b.Kind:
		return fmt.Sprintf("Kind %v != %v", a.Kind, b.Kind)
	case a.Type != b.Type:
		return fmt.Sprintf("Type %q != %q", a.Type, b.Type)
	case !a.Time.Equal(b.Time) || a.Time.Location() != b.Time.Location():
		return fmt.Sprintf("Time %v != %v", a.Time, b.Time)
	case a.RunID != b.RunID:
		return fmt.Sprintf("RunID %q != %q", a.RunID, b.RunID)
	case a.Job != b.Job:
		return fmt.Sprintf("Job %+q != %+q", a.Job, b.Job)
	case (a.Parent == nil) != (b.Parent == nil) || a.Parent != nil && *a.Parent != *b.Parent:
		return fmt.Sprintf("Parent %+q != %+q", a.Parent, b.Parent)
	case a.KeyJob != b.KeyJob:
		return fmt.Sprintf("KeyJob %+q != %+q", a.KeyJob, b.KeyJob)
	case a.Producer != b.Producer:
		return fmt.Sprintf("Producer %q != %q", a.Producer, b.Producer)
	case a.SchemaURL != b.SchemaURL:
		return fmt.Sprintf("SchemaURL %q != %q", a.SchemaURL, b.SchemaURL)
	}
	for _, l := range []struct {
		name string
		a, b []Dataset
	}{{"Inputs", a.Inputs, b.Inputs}, {"Outputs", a.Outputs, b.Outputs}, {"Datasets", a.Datasets, b.Datasets}} {
		if len(l.a) != len(l.b) {
			return fmt.Sprintf("%s %+q != %+q", l.name, l.a, l.b)
		}
		for i := range l.a {
			if l.a[i] != l.b[i] {
				return fmt.Sprintf("%s[%d] %+q != %+q", l.name, i, l.a[i], l.b[i])
			}
		}
	}
	if len(a.Aliases) != len(b.Aliases) {
		return fmt.Sprintf("len(Aliases) %d != %d", len(a.Aliases), len(b.Aliases))
	}
	for i := range a.Aliases {
		if a.Aliases[i] != b.Aliases[i] {
			return fmt.Sprintf("Aliases[%d] %+q != %+q", i, a.Aliases[i], b.Aliases[i])
		}
	}
	if len(a.Lifecycle) != len(b.Lifecycle) {
		return fmt.Sprintf("len(Lifecycle) %d != %d", len(a.Lifecycle), len(b.Lifecycle))
	}
	for i := range a.Lifecycle {
		if a.Lifecycle[i] != b.Lifecycle[i] {
			return fmt.Sprintf("Lifecycle[%d] %+q != %+q", i, a.Lifecycle[i], b.Lifecycle[i])
		}
	}
	if a.Lenient != b.Lenient {
		return fmt.Sprintf("Lenient %v != %v", a.Lenient, b.Lenient)
	}
	if a.Run != b.Run {
		return fmt.Sprintf("Run %+v != %+v", a.Run, b.Run)
	}
	if len(a.Facets) != len(b.Facets) {
		return fmt.Sprintf("len(Facets) %d != %d: %+v != %+v", len(a.Facets), len(b.Facets), a.Facets, b.Facets)
	}
	for i := range a.Facets {
		x, y := a.Facets[i], b.Facets[i]
		if x.Label != y.Label || x.Namespace != y.Namespace || x.Name != y.Name || x.Capped != y.Capped || fmt.Sprint(x.Props) != fmt.Sprint(y.Props) {
			return fmt.Sprintf("Facets[%d] %+v != %+v", i, x, y)
		}
	}
	if len(a.Columns) != len(b.Columns) {
		return fmt.Sprintf("len(Columns) %d != %d", len(a.Columns), len(b.Columns))
	}
	for i := range a.Columns {
		if a.Columns[i].Output != b.Columns[i].Output || !bytes.Equal(a.Columns[i].Raw, b.Columns[i].Raw) {
			return fmt.Sprintf("Columns[%d] %+q %q != %+q %q", i, a.Columns[i].Output, a.Columns[i].Raw, b.Columns[i].Output, b.Columns[i].Raw)
		}
	}
	return ""
}
