package gen

import (
	"container/heap"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Config says what stream to produce. The zero value of every field but
// Seed and Events means its default (see [Config.WithDefaults]); for the
// shares, a negative value means none.
type Config struct {
	Seed int64
	// Events is the approximate number of records to produce (> 0;
	// default 1000). The stream stops starting new application runs when
	// it gets close and then lets the open ones finish.
	Events int
	// Pipelines is the number of independent pipelines (root jobs);
	// default 8.
	Pipelines int
	// DuplicateShare is the share of records that are producer retries:
	// a byte-identical resend of an earlier valid record of the same
	// partition key, later in the stream. Default 0.20.
	DuplicateShare float64
	// FailShare is the share of runs ending FAIL or ABORT; default 0.1.
	// A further FailShare/4 of child runs send no terminal event at all.
	FailShare float64
	// MalformedShare is the share of unusual records; default 0.01. They
	// are produced in [MalformedKinds] order, round robin, then one valid
	// wide event ([Record].Wide), so any stream with at least
	// len(MalformedKinds)+1 unusual records has every kind and a wide event.
	MalformedShare float64
	// OutOfOrder is the share of events whose eventTime is earlier than
	// that of the previous event of the stream (clock skew: mostly up to
	// 2 s, one in ten 10-60 s, beyond a 10 s window); default 0.1.
	OutOfOrder float64
	// Compact is the share of valid records in the compact format. Not
	// supported yet: must be 0 (docs/compact-event.schema.json does not
	// exist yet).
	Compact float64
	// Start is the eventTime of the first event; default
	// 2026-01-01T00:00:00Z.
	Start time.Time
	// EventGap is the mean eventTime gap between consecutive records
	// (exponentially distributed); default 20ms.
	EventGap time.Duration
	// DatasetsPerStage is the number of datasets in each layer (raw,
	// staging, marts) of a pipeline; default 4.
	DatasetsPerStage int
}

// Record is one Kinesis record.
type Record struct {
	// PartitionKey is the key the OpenLineage Kinesis transport uses:
	// "run:<ns>/<name>" of the root job (the parent job if present),
	// "job:<ns>/<name>" for JobEvents, "dataset:<ns>/<name>" for
	// DatasetEvents. Malformed records get a plausible "run:" key.
	PartitionKey string
	// Data is the payload: OpenLineage 2-0-2 JSON for valid records. It
	// never holds '\n' or '\r', so records can be stored one per line.
	Data []byte
	// Malformed is "" for valid records, else one of [MalformedKinds].
	Malformed string
	// Wide marks a valid COMPLETE event of WideBytes + 1..4 KiB, most of it
	// a wide schema facet on its output (datasets in s3://datalake-wide).
	Wide bool
	// Duplicate marks a producer retry of an earlier record (same
	// PartitionKey, same Data).
	Duplicate bool
}

// Malformed record kinds.
const (
	MalformedNotJSON          = "not_json"           // not JSON at all (HTML error page, gzip bytes, Python repr...)
	MalformedMissingRunID     = "missing_run_id"     // RunEvent without run.runId, or with ""
	MalformedWrongType        = "wrong_type"         // runId/eventTime/job.name a number, inputs an object, outputs strings
	MalformedUnknownEventType = "unknown_event_type" // eventType outside the spec's enum
	MalformedTruncated        = "truncated"          // a valid event cut short
	MalformedBadTime          = "bad_time"           // eventTime not RFC 3339
)

// MalformedKinds lists every malformed kind, in the order [Stream]
// produces them.
var MalformedKinds = []string{
	MalformedNotJSON, MalformedMissingRunID, MalformedWrongType, MalformedUnknownEventType,
	MalformedTruncated, MalformedBadTime,
}

// WideBytes is the least size of a wide event: 256 KiB, the decoder's old
// limit, which refused such events (a Spark run with a wide schema facet).
// Valid now: the limit is the Kinesis record size, 1 MiB.
const WideBytes = 256 << 10

const (
	jobEventShare     = 0.02
	datasetEventShare = 0.015
)

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	if c.Events <= 0 {
		c.Events = 1000
	}
	if c.Pipelines <= 0 {
		c.Pipelines = 8
	}
	c.DuplicateShare = share(c.DuplicateShare, 0.20)
	c.FailShare = share(c.FailShare, 0.1)
	c.MalformedShare = share(c.MalformedShare, 0.01)
	c.OutOfOrder = share(c.OutOfOrder, 0.1)
	c.Compact = share(c.Compact, 0)
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if c.EventGap <= 0 {
		c.EventGap = 20 * time.Millisecond
	}
	if c.DatasetsPerStage <= 0 {
		c.DatasetsPerStage = 4
	}
	return c
}

func share(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Validate reports whether c (after [Config.WithDefaults]) can be produced.
func (c Config) Validate() error {
	var errs []error
	for _, s := range []struct {
		name string
		v    float64
	}{{"DuplicateShare", c.DuplicateShare}, {"FailShare", c.FailShare}, {"MalformedShare", c.MalformedShare}, {"OutOfOrder", c.OutOfOrder}} {
		if s.v < 0 || s.v >= 1 || math.IsNaN(s.v) {
			errs = append(errs, fmt.Errorf("gen: %s %v not in [0, 1)", s.name, s.v))
		}
	}
	if c.DuplicateShare+c.MalformedShare > 0.8 {
		errs = append(errs, fmt.Errorf("gen: DuplicateShare+MalformedShare %v > 0.8", c.DuplicateShare+c.MalformedShare))
	}
	if c.Compact != 0 {
		errs = append(errs, errors.New("gen: Compact is not supported yet (no docs/compact-event.schema.json)"))
	}
	return errors.Join(errs...)
}

// Generate returns the records of [Stream] in a slice. It panics if c is
// invalid.
func Generate(c Config) []Record {
	var out []Record
	if err := Stream(c, func(r Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		panic(err)
	}
	return out
}

// Stream calls emit with each record of the stream c describes, in stream
// order, and stops at the first error emit returns (which it returns).
// Memory stays bounded by the number of pipelines and the retry lag, not by
// c.Events. Data is not reused after emit returns.
func Stream(c Config, emit func(Record) error) error {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return err
	}
	seed := uint64(c.Seed)
	g := &generator{c: c, r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), base: c.Start}
	g.w = buildWorld(g.r, c)
	return g.run(emit)
}

type generator struct {
	c    Config
	r    *rand.Rand
	w    *world
	pos  int // records emitted
	nMal int

	base, prev time.Time
	timed      bool // an eventTime has been handed out

	dups   dupHeap
	dupSeq int
}

// planned is one event of a run, rendered when its turn comes so that its
// eventTime follows stream order.
type planned struct {
	typ             string // eventType; "" leaves it out
	run             *runRef
	inputs, outputs []*dataset
	stats, errMsg   bool
}

type runRef struct {
	id     string
	ns     string
	name   string
	pl     *pipeline
	job    *jobDef // nil for the application (parent) run
	parent *runRef
}

func (g *generator) run(emit func(Record) error) error {
	c := g.c
	dupP := c.DuplicateShare / (1 - c.DuplicateShare)
	expand := 1 / (1 - c.DuplicateShare - c.MalformedShare - jobEventShare - datasetEventShare)
	queues := make([][]planned, len(g.w.pipelines))
	pending := 0
	starting := true
	out := func(rec Record) error {
		g.pos++
		return emit(rec)
	}
	for {
		if starting {
			for i, pl := range g.w.pipelines {
				if len(queues[i]) > 0 {
					continue
				}
				if float64(g.pos)+float64(pending)*expand >= float64(c.Events) {
					starting = false
					break
				}
				queues[i] = g.appScript(pl)
				pending += len(queues[i])
			}
		}
		if len(g.dups) > 0 && g.dups[0].due <= g.pos {
			d := heap.Pop(&g.dups).(*pendingDup)
			if err := out(d.rec); err != nil {
				return err
			}
			continue
		}
		if pending == 0 {
			break
		}
		var rec Record
		u := g.r.Float64()
		switch {
		case u < c.MalformedShare:
			rec = g.malformed()
		case u < c.MalformedShare+jobEventShare:
			rec = g.jobEvent()
		case u < c.MalformedShare+jobEventShare+datasetEventShare:
			rec = g.datasetEvent()
		default:
			i := g.pickQueue(queues)
			p := queues[i][0]
			queues[i] = queues[i][1:]
			pending--
			rec = g.runEvent(p)
		}
		if err := out(rec); err != nil {
			return err
		}
		if rec.Malformed == "" && g.r.Float64() < dupP {
			lag := 1 + g.r.IntN(40)
			if g.r.IntN(10) == 0 {
				lag = 40 + g.r.IntN(400)
			}
			dup := rec
			dup.Data = append([]byte(nil), rec.Data...)
			dup.Duplicate = true
			g.dupSeq++
			heap.Push(&g.dups, &pendingDup{due: g.pos + lag, seq: g.dupSeq, rec: dup})
		}
	}
	for len(g.dups) > 0 {
		if err := out(heap.Pop(&g.dups).(*pendingDup).rec); err != nil {
			return err
		}
	}
	return nil
}

// pickQueue picks a pipeline with pending events, by pipeline weight.
func (g *generator) pickQueue(queues [][]planned) int {
	total := 0
	for i, q := range queues {
		if len(q) > 0 {
			total += g.w.pipelines[i].weight
		}
	}
	n := g.r.IntN(total)
	for i, q := range queues {
		if len(q) == 0 {
			continue
		}
		n -= g.w.pipelines[i].weight
		if n < 0 {
			return i
		}
	}
	panic("unreachable")
}

// appScript plans one run of a pipeline's application: the parent run's
// START, its child SQL-execution runs interleaved, the parent's terminal.
func (g *generator) appScript(pl *pipeline) []planned {
	pl.runs++
	app := &runRef{id: g.uuid(), ns: pl.ns, name: pl.app, pl: pl}
	fail := g.c.FailShare
	var seqs [][]planned
	childFailed := false
	for _, jd := range pl.jobs {
		child := &runRef{id: g.uuid(), ns: jd.ns, name: jd.name, pl: pl, job: jd, parent: app}
		var seq []planned
		start := planned{typ: "START", run: child, inputs: jd.inputs}
		if g.r.IntN(10) == 0 {
			start.inputs = nil // inputs only known later
		}
		seq = append(seq, start)
		if g.r.IntN(2) == 0 {
			ev := planned{typ: "RUNNING", run: child, inputs: jd.inputs}
			if jd.extra != nil && g.r.IntN(2) == 0 {
				ev.inputs = append(append([]*dataset(nil), jd.inputs...), jd.extra)
			}
			switch n := g.r.IntN(100); {
			case n < 6:
				ev.typ = "OTHER"
			case n < 10:
				ev.typ = "" // the spec makes eventType optional
			}
			seq = append(seq, ev)
		}
		switch u := g.r.Float64(); {
		case u < fail:
			ev := planned{typ: "FAIL", run: child, inputs: jd.inputs, errMsg: true}
			if g.r.IntN(10) < 3 {
				ev.typ, ev.errMsg = "ABORT", false
			}
			if g.r.IntN(10) < 7 {
				ev.outputs = jd.outputs // partial write: ghost lineage bait
			}
			seq = append(seq, ev)
			childFailed = true
		case u < fail*1.25:
			// The driver vanished: no terminal event.
		default:
			ev := planned{typ: "COMPLETE", run: child, outputs: jd.outputs, stats: true}
			if start.inputs == nil || g.r.IntN(2) == 0 {
				ev.inputs = jd.inputs
			}
			seq = append(seq, ev)
			if g.r.IntN(10) < 3 {
				seq = append(seq, ev) // Spark's second COMPLETE, later eventTime
			}
		}
		seqs = append(seqs, seq)
	}
	script := []planned{{typ: "START", run: app}}
	// Interleave the child runs, at most two open at a time, keeping each
	// run's own order.
	for len(seqs) > 0 {
		k := 0
		if len(seqs) > 1 && g.r.IntN(2) == 0 {
			k = 1
		}
		script = append(script, seqs[k][0])
		seqs[k] = seqs[k][1:]
		if len(seqs[k]) == 0 {
			seqs = append(seqs[:k], seqs[k+1:]...)
		}
	}
	end := planned{typ: "COMPLETE", run: app}
	// A failed child makes a failing application likelier, keeping the
	// overall share of failed runs at FailShare.
	appFail := fail / 2
	if childFailed {
		appFail = min(1, 2*fail)
	}
	if g.r.Float64() < appFail {
		end.typ, end.errMsg = "FAIL", true
		if g.r.IntN(10) < 3 {
			end.typ, end.errMsg = "ABORT", false
		}
	}
	return append(script, end)
}

// nextTime hands out the eventTime of the next record.
func (g *generator) nextTime() time.Time {
	if !g.timed {
		g.timed = true
		g.prev = g.base
		return g.base
	}
	gap := time.Duration(g.r.ExpFloat64() * float64(g.c.EventGap)).Truncate(time.Microsecond)
	g.base = g.base.Add(gap)
	t := g.base
	if g.r.Float64() < g.c.OutOfOrder {
		ref := g.base
		if g.prev.Before(ref) {
			ref = g.prev
		}
		skew := time.Millisecond + time.Duration(g.r.Int64N(int64(2*time.Second)))
		if g.r.IntN(10) == 0 {
			skew = 10*time.Second + time.Duration(g.r.Int64N(int64(50*time.Second)))
		}
		t = ref.Add(-skew.Truncate(time.Microsecond))
	}
	g.prev = t
	return t
}

var plus2 = time.FixedZone("+02:00", 2*3600)

// formatTime writes t the ways producers do: mostly milliseconds in UTC
// with Z (Java client), some microseconds with +00:00 (Python client),
// some in a +02:00 offset.
func (g *generator) formatTime(t time.Time) string {
	switch n := g.r.IntN(10); {
	case n < 7:
		return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	case n < 9:
		return t.UTC().Format("2006-01-02T15:04:05.000000") + "+00:00"
	default:
		return t.In(plus2).Format("2006-01-02T15:04:05.000Z07:00")
	}
}

func (g *generator) uuid() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], g.r.Uint64())
	binary.BigEndian.PutUint64(b[8:], g.r.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("gen: marshal: %v", err))
	}
	return b
}

type pendingDup struct {
	due, seq int
	rec      Record
}

type dupHeap []*pendingDup

func (h dupHeap) Len() int { return len(h) }
func (h dupHeap) Less(i, j int) bool {
	if h[i].due != h[j].due {
		return h[i].due < h[j].due
	}
	return h[i].seq < h[j].seq
}
func (h dupHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dupHeap) Push(x any)   { *h = append(*h, x.(*pendingDup)) }
func (h *dupHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
