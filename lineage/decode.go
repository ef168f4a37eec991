package lineage

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultMaxBytes is the largest record the decoder accepts (records above
// are ReasonOversized): 1 MiB, the Kinesis record size limit, so that no
// record Kinesis delivers is refused for its size (a Spark event with a
// wide schema or column-lineage facet reaches hundreds of KB).
const DefaultMaxBytes = 1 << 20

// internMax bounds the Decoder's table of recently seen names.
const internMax = 4096

// Decoder decodes lineage records: OpenLineage 2-0-2 RunEvent, JobEvent and
// DatasetEvent JSON, and the compact format of docs/compact-event.md.
//
// It is a single-pass scanner over the record's bytes: the fields it needs
// are decoded where they stand, everything else (facets, unknown fields) is
// only checked for JSON syntax and skipped. It accepts and refuses exactly
// what a decoder built on encoding/json would (the differential fuzz test
// FuzzDecodeAgreesWithEncodingJSON holds it to that), including:
//
//   - the whole record must be valid JSON (ReasonNotJSON otherwise), even
//     the parts that are skipped;
//   - a key that appears twice in an object: the last one wins;
//   - a null value is the same as an absent field;
//   - strings are unescaped as encoding/json does: invalid UTF-8 and
//     unpaired surrogates become U+FFFD.
//
// When a record has several problems, the error names the first in a fixed
// field order (the order of the fields in the Event), whatever their order
// in the record.
//
// The zero Decoder is ready to use. A Decoder keeps scratch space and a
// small table of recently seen namespaces and names (so repeated names cost
// no allocation) between calls; it is not safe for concurrent use: use one
// per goroutine (per shard).
type Decoder struct {
	// MaxBytes is the largest record accepted; 0 means [DefaultMaxBytes].
	MaxBytes int

	s        scanner
	t        topState
	in, out  []Dataset // OpenLineage inputs, outputs
	cin      []Dataset // compact in
	cout     []Dataset // compact out
	cols     []colRef
	lin      []colRef // lineage facets of outputs
	ain      []Alias  // symlinks of inputs
	aout     []Alias  // symlinks of outputs
	lc       []Lifecycle
	fin      []dsFacets // facets of inputs read as properties
	fout     []dsFacets // of outputs
	memo     facetMemo  // facet interpretations by raw bytes
	names    map[string]string
	noIntern bool
	// badUTF8: a name, namespace or run id of the record is not valid
	// UTF-8 (see [Decoder.InvalidUTF8]); lastBad: the last string
	// converted was not.
	badUTF8, lastBad bool
}

// InvalidUTF8 reports whether the record the last Decode call decoded
// names a dataset, job or run by a string that is not valid UTF-8 (raw
// bytes, or an escaped unpaired surrogate). Decoding replaces each bad
// byte with U+FFFD as encoding/json does, so two different names would
// become one: [Guard] refuses such a record instead.
func (d *Decoder) InvalidUTF8() bool { return d.badUTF8 }

type colRef struct {
	out Dataset
	raw []byte // into the record
}

// dsFacets are a dataset's facets read as vertex properties.
type dsFacets struct {
	ds Dataset
	fr facetRaws
}

// Decode decodes one record into a new Event.
func Decode(data []byte) (Event, error) {
	d := Decoder{noIntern: true}
	var ev Event
	if err := d.Decode(data, &ev); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// Decode decodes one record (OpenLineage JSON or compact JSON) into ev,
// reusing the backing arrays of ev's slices (Inputs, Outputs, Datasets,
// Columns): a caller that keeps those slices past the next call must copy
// them. Strings, Parent and Columns[i].Raw are always new (or shared
// immutable strings) and may be kept. On error ev is left in an unspecified
// state.
//
// Errors are always *[DecodeError] with a [Reason] and the field's JSON path.
func (d *Decoder) Decode(data []byte, ev *Event) error {
	max := d.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if len(data) > max {
		return &DecodeError{Reason: ReasonOversized, Msg: fmt.Sprintf("record is %d bytes, over the %d-byte limit", len(data), max)}
	}
	s := &d.s
	s.reset(data)
	d.t = topState{}
	d.badUTF8 = false
	d.in, d.out, d.cin, d.cout, d.cols, d.ain, d.aout, d.lc = d.in[:0], d.out[:0], d.cin[:0], d.cout[:0], d.cols[:0], d.ain[:0], d.aout[:0], d.lc[:0]
	d.lin = d.lin[:0]
	d.fin, d.fout = d.fin[:0], d.fout[:0]

	c := s.peek()
	if c != '{' {
		s.skip(1)
		s.end()
		if s.err != nil {
			return s.err
		}
		return &DecodeError{Reason: ReasonUnknownFormat, Msg: fmt.Sprintf("top-level JSON value is %s, not an object", article(c))}
	}
	d.top()
	s.end()
	if s.err != nil {
		return s.err
	}
	if d.t.v.c != 0 {
		return d.finishCompact(ev)
	}
	return d.finishOpenLineage(ev)
}

// Slots hold what the scan found for one field; c is the first byte of the
// value (its JSON type), 0 when the field is absent or null.

type strSlot struct {
	c byte
	s string
}

// named is an object with a namespace (or compact "ns") and a name: a job,
// a dataset, and for outputs the columnLineage facet.
type named struct {
	c                   byte
	namespace, ns, name strSlot
	facets              byte   // outputs only
	col                 byte   // facets.columnLineage
	colRaw              []byte // facets.columnLineage, into the record
	symRaw              []byte // facets.symlinks when an object, into the record
	lcRaw               []byte // facets.lifecycleStateChange when an object, into the record
	linRaw              []byte // facets.lineage when an object, into the record
	fr                  facetRaws
}

// ref is a run reference: an object with a runId (OpenLineage) or a string
// (compact).
type ref struct {
	c     byte
	str   string
	runID strSlot
}

type parentSlot struct {
	c    byte
	run  ref
	job  named
	root named // root.job (OpenLineage format)
}

type runSlot struct {
	ref
	facets byte
	parent parentSlot // facets.parent
	errRaw []byte     // facets.errorMessage when an object, into the record
	nomRaw []byte     // facets.nominalTime when an object, into the record
	depRaw []byte     // facets.jobDependencies when an object, into the record
	engRaw []byte     // facets.processing_engine when an object, into the record
	extRaw []byte     // facets.externalQuery when an object, into the record
}

type listSlot struct {
	c   byte
	err *DecodeError // first invalid element
}

type topState struct {
	v struct {
		c   byte
		raw []byte
	}
	eventType, eventTime, typ, time, producer, schemaURL strSlot
	run                                                  runSlot
	job, dataset                                         named
	parent                                               parentSlot // compact
	inputs, outputs, in, out                             listSlot
}

// top scans the top-level object. Every field either format knows is
// recorded; which ones matter is decided at the end, when the format is
// known.
func (d *Decoder) top() {
	s, t := &d.s, &d.t
	const depth = 2 // of the members' values
	for ok := s.objBegin(); ok; ok = s.objNext() {
		switch string(s.key()) {
		case "eventType":
			d.str(&t.eventType, depth, true)
		case "eventTime":
			d.str(&t.eventTime, depth, false)
		case "run":
			d.run(&t.run, depth)
		case "job":
			d.named(&t.job, depth, false)
		case "inputs":
			d.list(&t.inputs, &d.in, "inputs", depth, false, false)
		case "outputs":
			d.list(&t.outputs, &d.out, "outputs", depth, false, true)
		case "dataset":
			d.named(&t.dataset, depth, false)
		case "producer":
			d.str(&t.producer, depth, true)
		case "schemaURL":
			d.str(&t.schemaURL, depth, true)
		case "v":
			switch c := s.peek(); c {
			case 'n':
				s.null()
				t.v.c, t.v.raw = 0, nil
			case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
				t.v.c, t.v.raw = c, s.num()
			default:
				t.v.c, t.v.raw = c, nil
				s.skip(depth)
			}
		case "type":
			d.str(&t.typ, depth, true)
		case "time":
			d.str(&t.time, depth, false)
		case "in":
			d.list(&t.in, &d.cin, "in", depth, true, false)
		case "out":
			d.list(&t.out, &d.cout, "out", depth, true, false)
		case "parent":
			d.parent(&t.parent, depth)
		default:
			s.skip(depth)
		}
	}
}

// str scans a value that should be a string.
func (d *Decoder) str(v *strSlot, depth int, intern bool) {
	s := &d.s
	d.lastBad = false
	switch c := s.peek(); c {
	case '"':
		raw, fl := s.str()
		v.c, v.s = c, d.string(raw, fl, intern)
	case 'n':
		s.null()
		*v = strSlot{}
	default:
		*v = strSlot{c: c}
		s.skip(depth)
	}
}

// string converts raw string contents to a Go string.
func (d *Decoder) string(raw []byte, fl uint8, intern bool) string {
	d.lastBad = fl != 0 && invalidText(raw, fl)
	raw = d.s.unescape(raw, fl)
	if !intern || d.noIntern || len(raw) > 256 {
		return string(raw)
	}
	if v, ok := d.names[string(raw)]; ok {
		return v
	}
	if d.names == nil || len(d.names) >= internMax {
		d.names = make(map[string]string, internMax)
	}
	v := string(raw)
	d.names[v] = v
	return v
}

// named scans a value that should be an object with a namespace and a
// name; cols asks for its facets.columnLineage.
func (d *Decoder) named(n *named, depth int, cols bool) {
	s := &d.s
	c := s.peek()
	switch c {
	case '{':
	case 'n':
		s.null()
		*n = named{}
		return
	default:
		*n = named{c: c}
		s.skip(depth)
		return
	}
	*n = named{c: c}
	for ok := s.objBegin(); ok; ok = s.objNext() {
		switch string(s.key()) {
		case "namespace":
			d.str(&n.namespace, depth+1, true)
			d.badUTF8 = d.badUTF8 || d.lastBad
		case "ns":
			d.str(&n.ns, depth+1, true)
			d.badUTF8 = d.badUTF8 || d.lastBad
		case "name":
			d.str(&n.name, depth+1, true)
			d.badUTF8 = d.badUTF8 || d.lastBad
		case "facets":
			d.facets(n, depth+1)
		default:
			s.skip(depth + 1)
		}
	}
}

// facets scans a dataset's facets for columnLineage and symlinks.
func (d *Decoder) facets(n *named, depth int) {
	s := &d.s
	c := s.peek()
	n.facets, n.col, n.colRaw, n.symRaw, n.lcRaw, n.linRaw, n.fr = c, 0, nil, nil, nil, nil, facetRaws{}
	switch c {
	case '{':
	case 'n':
		s.null()
		n.facets = 0
		return
	default:
		s.skip(depth)
		return
	}
	for ok := s.objBegin(); ok; ok = s.objNext() {
		switch k := s.key(); string(k) {
		case "columnLineage":
		case "symlinks":
			n.symRaw = d.objSpan(depth + 1)
			continue
		case "lifecycleStateChange":
			n.lcRaw = d.objSpan(depth + 1)
			continue
		case "lineage":
			n.linRaw = d.objSpan(depth + 1)
			continue
		case "schema", "dataSource", "documentation", "ownership", "version", "sql", "jobType", "sourceCodeLocation", "tags":
			n.fr.set(string(k), d.objSpan(depth+1))
			continue
		default:
			s.skip(depth + 1)
			continue
		}
		switch c := s.peek(); c {
		case 'n':
			s.null()
			n.col, n.colRaw = 0, nil
		case '{':
			n.col, n.colRaw = c, s.span(depth+1)
		default:
			n.col, n.colRaw = c, nil
			s.skip(depth + 1)
		}
	}
}

// list scans a value that should be an array of datasets into dst,
// validating each element as it goes.
func (d *Decoder) list(v *listSlot, dst *[]Dataset, name string, depth int, compact, cols bool) {
	s := &d.s
	c := s.peek()
	*v = listSlot{c: c}
	*dst = (*dst)[:0]
	if cols {
		d.cols = d.cols[:0]
		d.lin = d.lin[:0]
		d.aout = d.aout[:0]
		d.lc = d.lc[:0]
		d.fout = d.fout[:0]
	} else if !compact {
		d.ain = d.ain[:0]
		d.fin = d.fin[:0]
	}
	switch c {
	case '[':
	case 'n':
		s.null()
		v.c = 0
		return
	default:
		s.skip(depth)
		return
	}
	i := 0
	for ok := s.arrBegin(); ok; ok = s.arrNext() {
		if v.err != nil {
			s.skip(depth + 1)
			continue
		}
		var n named
		d.named(&n, depth+1, cols)
		if s.err != nil {
			return
		}
		ds, err := n.dataset(compact, cols)
		if err != nil {
			v.err = prefixed(err, name+"["+strconv.Itoa(i)+"]")
			continue
		}
		if cols && !compact && n.lcRaw != nil {
			if st := lifecycleOf(n.lcRaw); st != "" {
				d.lc = append(d.lc, Lifecycle{Dataset: ds, State: st})
				if st == LifecycleDrop {
					// A DROP is not a write: the dataset is no output.
					i++
					continue
				}
			}
		}
		*dst = append(*dst, ds)
		if !compact && n.fr.any() {
			if cols {
				d.fout = append(d.fout, dsFacets{ds, n.fr})
			} else {
				d.fin = append(d.fin, dsFacets{ds, n.fr})
			}
		}
		if n.symRaw != nil && !compact {
			if cols {
				d.aout = aliasesOf(d.aout, ds, n.symRaw)
			} else {
				d.ain = aliasesOf(d.ain, ds, n.symRaw)
			}
		}
		if cols && !compact && n.linRaw != nil { // an input's lineage facet is not read
			d.lin = append(d.lin, colRef{out: ds, raw: n.linRaw})
		}
		if cols && n.col != 0 { // an input's columnLineage facet is not read
			d.cols = append(d.cols, colRef{out: ds, raw: n.colRaw})
		}
		i++
	}
}

// run scans the top-level "run": an object (OpenLineage) or a string
// (compact).
func (d *Decoder) run(r *runSlot, depth int) {
	s := &d.s
	c := s.peek()
	*r = runSlot{}
	switch c {
	case '{':
	case 'n':
		s.null()
		return
	case '"':
		raw, fl := s.str()
		r.c, r.str = c, d.string(raw, fl, false)
		d.badUTF8 = d.badUTF8 || d.lastBad
		return
	default:
		r.c = c
		s.skip(depth)
		return
	}
	r.c = c
	for ok := s.objBegin(); ok; ok = s.objNext() {
		switch string(s.key()) {
		case "runId":
			d.str(&r.runID, depth+1, false)
			d.badUTF8 = d.badUTF8 || d.lastBad
		case "facets":
			r.facets, r.parent, r.errRaw, r.nomRaw, r.depRaw, r.engRaw, r.extRaw = s.peek(), parentSlot{}, nil, nil, nil, nil, nil
			switch r.facets {
			case '{':
				for ok := s.objBegin(); ok; ok = s.objNext() {
					switch string(s.key()) {
					case "parent":
						d.parent(&r.parent, depth+2)
					case "errorMessage":
						r.errRaw = d.objSpan(depth + 2)
					case "nominalTime":
						r.nomRaw = d.objSpan(depth + 2)
					case "jobDependencies":
						r.depRaw = d.objSpan(depth + 2)
					case "processing_engine":
						r.engRaw = d.objSpan(depth + 2)
					case "externalQuery":
						r.extRaw = d.objSpan(depth + 2)
					default:
						s.skip(depth + 2)
					}
				}
			case 'n':
				s.null()
				r.facets = 0
			default:
				s.skip(depth + 1)
			}
		default:
			s.skip(depth + 1)
		}
	}
}

// objSpan returns the raw bytes of a value that is an object (nil for
// anything else, which is skipped).
func (d *Decoder) objSpan(depth int) []byte {
	s := &d.s
	if s.peek() == '{' {
		return s.span(depth)
	}
	s.skip(depth)
	return nil
}

// parent scans a parent run: the OpenLineage parent facet
// {"run":{"runId"},"job":{"namespace","name"}} or the compact
// {"run":"..","job":{"ns","name"}}.
func (d *Decoder) parent(p *parentSlot, depth int) {
	s := &d.s
	c := s.peek()
	*p = parentSlot{c: c}
	switch c {
	case '{':
	case 'n':
		s.null()
		p.c = 0
		return
	default:
		s.skip(depth)
		return
	}
	for ok := s.objBegin(); ok; ok = s.objNext() {
		switch string(s.key()) {
		case "run":
			d.ref(&p.run, depth+1)
		case "job":
			d.named(&p.job, depth+1, false)
		case "root":
			d.rootJob(&p.root, depth+1)
		default:
			s.skip(depth + 1)
		}
	}
}

// rootJob scans the parent facet's root {"run":{..},"job":{..}} for its job.
func (d *Decoder) rootJob(n *named, depth int) {
	s := &d.s
	*n = named{}
	if s.peek() != '{' {
		s.skip(depth)
		return
	}
	for ok := s.objBegin(); ok; ok = s.objNext() {
		if string(s.key()) == "job" {
			d.named(n, depth+1, false)
		} else {
			s.skip(depth + 1)
		}
	}
}

// ref scans a run reference: {"runId":..} or a string.
func (d *Decoder) ref(r *ref, depth int) {
	s := &d.s
	c := s.peek()
	*r = ref{c: c}
	switch c {
	case '{':
		for ok := s.objBegin(); ok; ok = s.objNext() {
			if string(s.key()) == "runId" {
				d.str(&r.runID, depth+1, false)
				d.badUTF8 = d.badUTF8 || d.lastBad
			} else {
				s.skip(depth + 1)
			}
		}
	case '"':
		raw, fl := s.str()
		r.str = d.string(raw, fl, false)
		d.badUTF8 = d.badUTF8 || d.lastBad
	case 'n':
		s.null()
		r.c = 0
	default:
		s.skip(depth)
	}
}

// finishOpenLineage validates an OpenLineage event and fills ev.
func (d *Decoder) finishOpenLineage(ev *Event) error {
	t := &d.t
	var kind EventKind
	var lenient Leniency
	switch {
	case t.run.c == 0 && t.eventType.c != 0 && t.schemaURL.c == '"' && schemaKind(t.schemaURL.s) != 0:
		// Marquez reads the kind from schemaURL: a JobEvent or a
		// DatasetEvent that also carries an eventType.
		kind, lenient = schemaKind(t.schemaURL.s), LenientKindFromSchemaURL
	case t.run.c != 0 || t.eventType.c != 0:
		kind = KindRun
	case t.dataset.c != 0:
		kind = KindDataset
	case t.job.c != 0:
		kind = KindJob
	default:
		return errUnknownFormat()
	}
	var (
		typ    EventType
		runID  string
		job    Job
		keyJob Job
		parent *ParentRun
		err    *DecodeError
	)
	if kind == KindRun {
		if typ, err = eventType(&t.eventType, "eventType"); err != nil {
			return err
		}
	}
	when, zoneless, err := eventTimeLenient(&t.eventTime, "eventTime")
	if err != nil {
		return err
	}
	if zoneless {
		lenient |= LenientZonelessTime
	}
	if kind == KindRun {
		var badParent bool
		if runID, parent, badParent, err = t.run.validate(); err != nil {
			return err
		}
		if badParent {
			lenient |= LenientInvalidParent
		}
		keyJob, _ = t.run.parent.keyJob()
	}
	var dataset Dataset
	if kind == KindDataset {
		if dataset, err = t.dataset.object("dataset", false); err != nil {
			return err
		}
	} else {
		var ds Dataset
		if ds, err = t.job.object("job", false); err != nil {
			return err
		}
		job = Job(ds)
		if err = t.inputs.validate("inputs"); err != nil {
			return err
		}
		if err = t.outputs.validate("outputs"); err != nil {
			return err
		}
	}
	producer, err := t.producer.opt("producer")
	if err != nil {
		return err
	}
	schemaURL, err := t.schemaURL.opt("schemaURL")
	if err != nil {
		return err
	}

	*ev = Event{
		Kind: kind, Type: typ, Time: when, RunID: runID, Job: job, Parent: parent, KeyJob: keyJob,
		Inputs: ev.Inputs[:0], Outputs: ev.Outputs[:0], Datasets: ev.Datasets[:0], Columns: ev.Columns[:0], Aliases: ev.Aliases[:0],
		Lifecycle: ev.Lifecycle[:0], Facets: ev.Facets[:0], Pairs: ev.Pairs[:0], Producer: producer, SchemaURL: schemaURL, Lenient: lenient,
	}
	ms := when.UnixMilli()
	if kind == KindRun {
		ev.Run = runFacetsOf(t.run.errRaw, t.run.nomRaw)
		if runExtraFacetsOf(&ev.Run, t.run.engRaw, t.run.extRaw) {
			ev.Lenient |= LenientCappedRunFacet
		}
		if t.run.depRaw != nil {
			ev.Upstream, ev.Downstream = JobDependencies(t.run.depRaw)
		}
	}
	if kind == KindDataset {
		ev.Datasets = append(ev.Datasets, dataset)
		if t.dataset.symRaw != nil {
			ev.Aliases = aliasesOf(ev.Aliases, dataset, t.dataset.symRaw)
		}
		ev.Facets = facetPropsOf(ev.Facets, &d.memo, LabelDataset, dataset.Namespace, dataset.Name, &t.dataset.fr, ms)
		return nil
	}
	for _, set := range [2][]dsFacets{d.fin, d.fout} {
		for i := range set {
			ev.Facets = facetPropsOf(ev.Facets, &d.memo, LabelDataset, set[i].ds.Namespace, set[i].ds.Name, &set[i].fr, ms)
		}
	}
	ev.Facets = facetPropsOf(ev.Facets, &d.memo, LabelJob, job.Namespace, job.Name, &t.job.fr, ms)
	ev.Aliases = append(append(ev.Aliases, d.ain...), d.aout...)
	ev.Lifecycle = append(ev.Lifecycle, d.lc...)
	ev.Inputs = append(ev.Inputs, d.in...)
	ev.Outputs = append(ev.Outputs, d.out...)
	for _, c := range d.cols {
		ev.Columns = append(ev.Columns, ColumnLineage{Output: c.out, Raw: append([]byte(nil), c.raw...)})
	}
	if t.job.linRaw != nil {
		var ok bool
		ev.Pairs, ok = JobLineagePairs(ev.Pairs, t.job.linRaw)
		ev.Explicit = ev.Explicit || ok
	}
	for _, c := range d.lin {
		var ok bool
		ev.Pairs, ok = DatasetLineagePairs(ev.Pairs, c.out, c.raw)
		ev.Explicit = ev.Explicit || ok
	}
	return nil
}

// validate checks an OpenLineage run object and reads its parent facet
// leniently: an invalid one is ignored (badParent).
func (r *runSlot) validate() (runID string, p *ParentRun, badParent bool, err *DecodeError) {
	switch r.c {
	case 0:
		return "", nil, false, errMissing("run")
	case '{':
	default:
		return "", nil, false, errType("run", "an object", r.c)
	}
	if runID, err = r.runID.need("run.runId"); err != nil {
		return "", nil, false, err
	}
	switch r.facets {
	case 0, '{':
	default:
		return "", nil, false, errType("run.facets", "an object", r.facets)
	}
	if p, err = r.parent.validate(false); err != nil {
		return runID, nil, true, nil
	}
	return runID, p, false, nil
}

// validate checks a parent run (OpenLineage facet or compact), present or
// not. Paths in errors are relative to the parent's container.
func (p *parentSlot) validate(compact bool) (*ParentRun, *DecodeError) {
	switch p.c {
	case 0:
		return nil, nil
	case '{':
	default:
		return nil, errType("parent", "an object", p.c)
	}
	var runID string
	switch {
	case p.run.c == 0:
		return nil, errMissing("parent.run")
	case compact && p.run.c == '"':
		if p.run.str == "" {
			return nil, errEmpty("parent.run")
		}
		runID = p.run.str
	case compact:
		return nil, errType("parent.run", "a string", p.run.c)
	case p.run.c != '{':
		return nil, errType("parent.run", "an object", p.run.c)
	default:
		var err *DecodeError
		if runID, err = p.run.runID.need("parent.run.runId"); err != nil {
			return nil, err
		}
	}
	job, err := p.job.object("parent.job", compact)
	if err != nil {
		return nil, err
	}
	return &ParentRun{RunID: runID, Job: Job(job)}, nil
}

// keyJob returns the job the OpenLineage Kinesis transport keys a RunEvent
// by, if the parent facet (OpenLineage format) names one: its root's job
// when valid, else its job when valid, whether or not the facet is a valid
// parent run (the transport reads the two jobs alone).
func (p *parentSlot) keyJob() (Job, bool) {
	if p.c != '{' {
		return Job{}, false
	}
	for _, n := range []*named{&p.root, &p.job} {
		if n.c == '{' {
			if j, err := n.object("", false); err == nil {
				return Job(j), true
			}
		}
	}
	return Job{}, false
}

// object checks a required namespace+name object at path.
func (n *named) object(path string, compact bool) (Dataset, *DecodeError) {
	switch n.c {
	case 0:
		return Dataset{}, errMissing(path)
	case '{':
	default:
		return Dataset{}, errType(path, "an object", n.c)
	}
	ds, err := n.dataset(compact, false)
	if err != nil {
		return Dataset{}, prefixed(err, path)
	}
	return ds, nil
}

// dataset checks an element of inputs/outputs (or in/out); cols checks the
// columnLineage facet too. Paths are relative to the element.
func (n *named) dataset(compact, cols bool) (Dataset, *DecodeError) {
	if n.c != '{' {
		return Dataset{}, errType("", "an object", n.c)
	}
	nsField, ns := "namespace", &n.namespace
	if compact {
		nsField, ns = "ns", &n.ns
	}
	namespace, err := ns.need(nsField)
	if err != nil {
		return Dataset{}, err
	}
	name, err := n.name.need("name")
	if err != nil {
		return Dataset{}, err
	}
	if cols {
		if n.facets != 0 && n.facets != '{' {
			return Dataset{}, errType("facets", "an object", n.facets)
		}
		if n.col != 0 && n.col != '{' {
			return Dataset{}, errType("facets.columnLineage", "an object", n.col)
		}
	}
	return Dataset{Namespace: namespace, Name: name}, nil
}

func (v *listSlot) validate(path string) *DecodeError {
	switch v.c {
	case 0, '[':
		return v.err
	}
	return errType(path, "an array", v.c)
}

// need checks a required, non-empty string.
func (v *strSlot) need(path string) (string, *DecodeError) {
	switch v.c {
	case 0:
		return "", errMissing(path)
	case '"':
		if v.s == "" {
			return "", errEmpty(path)
		}
		return v.s, nil
	}
	return "", errType(path, "a string", v.c)
}

// opt checks an optional string.
func (v *strSlot) opt(path string) (string, *DecodeError) {
	switch v.c {
	case 0, '"':
		return v.s, nil
	}
	return "", errType(path, "a string", v.c)
}

func eventType(v *strSlot, path string) (EventType, *DecodeError) {
	s, err := v.opt(path)
	if err != nil || v.c == 0 {
		return TypeUnspecified, err
	}
	if t, ok := parseEventType(s); ok {
		return t, nil
	}
	return "", errEventType(path, s)
}

func parseEventType(s string) (EventType, bool) {
	switch t := EventType(s); t {
	case TypeStart, TypeRunning, TypeComplete, TypeAbort, TypeFail, TypeOther:
		return t, true
	}
	return "", false
}

func eventTime(v *strSlot, path string) (time.Time, *DecodeError) {
	s, err := v.need(path)
	if err != nil {
		return time.Time{}, err
	}
	t, ok := parseTime(s)
	if !ok {
		return time.Time{}, errTime(path, s)
	}
	return t, nil
}

// eventTimeLenient is eventTime, but a date-time without a zone offset
// (YYYY-MM-DDTHH:MM:SS[.fraction]) is read as UTC, as Marquez does, and
// reported (zoneless).
func eventTimeLenient(v *strSlot, path string) (t time.Time, zoneless bool, err *DecodeError) {
	s, err := v.need(path)
	if err != nil {
		return time.Time{}, false, err
	}
	if t, ok := parseTime(s); ok {
		return t, false, nil
	}
	if t, ok := parseTime(s + "Z"); ok {
		return t, true, nil
	}
	return time.Time{}, false, errTime(path, s)
}

// schemaKind is the event kind a schemaURL names by its fragment
// ("...#/$defs/JobEvent", "...#/$defs/DatasetEvent"), 0 for any other
// (RunEvent included: that is the default reading).
func schemaKind(url string) EventKind {
	switch {
	case strings.HasSuffix(url, "/JobEvent"):
		return KindJob
	case strings.HasSuffix(url, "/DatasetEvent"):
		return KindDataset
	}
	return 0
}

// parseTime parses an RFC 3339 date-time as producers write it,
// YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), with an upper-case T and
// Z, 1 to 9 digits of fraction and no leap second, and returns it in UTC.
// The UTC time must fall in years 0000-9999 (so that it can be written back
// in the same form). It does not allocate.
func parseTime(s string) (time.Time, bool) {
	if len(s) < len("2006-01-02T15:04:05Z") || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) ||
		month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	rest, nsec := s[19:], 0
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 || n > 10 {
			return time.Time{}, false
		}
		nsec, _ = digits(rest[1:n])
		for i := n; i < 10; i++ {
			nsec *= 10
		}
		rest = rest[n:]
	}
	offset := 0
	switch {
	case rest == "Z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:3])
		om, ok2 := digits(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return time.Time{}, false
		}
		offset = oh*3600 + om*60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if offset != 0 {
		t = t.Add(-time.Duration(offset) * time.Second)
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, false
	}
	return t, true
}

// digits parses a run of ASCII digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// Error constructors, shared by the compact format and the tests' reference
// decoder so that both word errors the same way.

func errMissing(path string) *DecodeError {
	return &DecodeError{Reason: ReasonMissingField, Field: path, Msg: "required field is missing"}
}

func errEmpty(path string) *DecodeError {
	return &DecodeError{Reason: ReasonMissingField, Field: path, Msg: "required field is empty"}
}

func errType(path, want string, got byte) *DecodeError {
	return &DecodeError{Reason: ReasonWrongType, Field: path, Msg: "must be " + want + ", not " + article(got)}
}

func errEventType(path, s string) *DecodeError {
	return &DecodeError{Reason: ReasonUnknownEventType, Field: path,
		Msg: quoteValue(s) + " is not one of START, RUNNING, COMPLETE, ABORT, FAIL, OTHER"}
}

func errTime(path, s string) *DecodeError {
	return &DecodeError{Reason: ReasonInvalidValue, Field: path,
		Msg: quoteValue(s) + " is not an RFC 3339 date-time such as 2026-01-02T15:04:05.123Z"}
}

func errUnknownFormat() *DecodeError {
	return &DecodeError{Reason: ReasonUnknownFormat,
		Msg: `neither an OpenLineage event (no "run", "eventType", "job" or "dataset") nor a compact event (no "v")`}
}

// prefixed puts prefix in front of err's field path.
func prefixed(err *DecodeError, prefix string) *DecodeError {
	switch {
	case err.Field == "":
		err.Field = prefix
	case err.Field[0] == '[':
		err.Field = prefix + err.Field
	default:
		err.Field = prefix + "." + err.Field
	}
	return err
}

// quoteValue quotes a user's value for an error message, cut to a
// readable length.
func quoteValue(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

// article names the JSON type whose first byte is c, with its article.
func article(c byte) string {
	switch c {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n', 0:
		return "null"
	}
	return "a number"
}
