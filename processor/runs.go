package processor

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/enc"
	"github.com/lineageflow/lineageflow/lineage"
)

type runStatus uint8

const (
	runOpen      runStatus = 1 // no terminal event yet: pins the checkpoint
	runCommitted runStatus = 2 // first terminal event was COMPLETE (or policy any)
	runClosed    runStatus = 3 // first terminal event was FAIL/ABORT: never gives edges
	// runStreaming: a streaming job's run (an event said
	// jobType.processingType STREAMING) with no terminal event yet:
	// committed, every event stamps it, it holds no pin and its pin field
	// follows its latest event (DESIGN.md, Lineage semantics 4).
	runStreaming runStatus = 4
)

// dsRef is a dataset with its vertex id.
type dsRef struct {
	d  lineage.Dataset
	id string
}

// run is the accumulation of one run (DESIGN.md, Lineage semantics 3-6).
type run struct {
	id          string
	status      runStatus
	job         lineage.Job
	jobID       string
	hasC        bool
	minC, maxC  int64  // min and max COMPLETE eventTime (Unix ms)
	pin         string // last sequence number fully processed before the run's first record
	lastArrival int64
	inputs      []dsRef
	outputs     []dsRef
	// inIdx, outIdx index the ids of inputs and outputs once a run has
	// more than runIdxMin of them, so that adding a dataset costs the same
	// whatever the run's size (runIndex).
	inIdx, outIdx map[string]struct{}
	// cols are the run's column lineage pairs (columnLineage facets of its
	// events), colIdx their set (built on first use).
	cols   []colRef
	colIdx map[colKey]struct{}
	dirty  bool
	// handoff: loaded from a parent shard's handoff (handoff.go). Such a
	// run never pins this shard's checkpoint (its earlier events are on
	// the parent, not here: the handoff is its durable source) and its
	// emissions carry the pin of the record that makes them.
	handoff bool
	// reload: loaded from the run store (runstore.go): its next emission
	// carries everything it holds, since the windows that held its earlier
	// emissions may be lost with the previous owner's disk.
	reload bool
	// rv is what the run's Run vertex needs (runvertex.go).
	rv runVertexState
}

// runIdxMin: below it a run's datasets are scanned, above they are indexed.
const runIdxMin = 16

// runIndex returns the index of rs in *idx, built (or rebuilt, when some
// code replaced the slice) once rs is longer than runIdxMin; nil below.
func runIndex(rs []dsRef, idx *map[string]struct{}) map[string]struct{} {
	if len(rs) <= runIdxMin {
		*idx = nil
		return nil
	}
	if len(*idx) != len(rs) {
		m := make(map[string]struct{}, len(rs)*2)
		for i := range rs {
			m[rs[i].id] = struct{}{}
		}
		*idx = m
	}
	return *idx
}

func contains(rs []dsRef, id string) bool {
	for i := range rs {
		if rs[i].id == id {
			return true
		}
	}
	return false
}

// runTable is a shard's run state: the runs by id, those changed and
// those forgotten since the last barrier, their GC, and their
// s/<shard>/r/ keys in the barrier batch. Open runs (but handed-off ones)
// hold a pin each.
type runTable struct {
	shard string
	pins  *checkpoint.Pins
	ids   *vertexIDs
	st    *Stats

	// maxDatasets bounds a run's inputs+outputs, maxRuns the runs held
	// (PipelineConfig.MaxRunDatasets, MaxRuns; 0: no bound).
	maxDatasets, maxRuns int

	m       map[string]*run
	dirty   []*run
	dropped []string
	lastGC  int64

	// unpinned: a run store is configured (runstore.go); runs never pin
	// the checkpoint. evicted holds the runs evicted (maxRuns) since the
	// last barrier with changes not yet written to the store, and fetch
	// reads one run the prefetch did not load (nil: none stored).
	unpinned bool
	evicted  map[string]*run
	fetch    func(id string) *run
	// absent: runs the current batch's prefetch asked for and the store
	// did not hold (new runs: no second read).
	absent map[string]struct{}

	keyBuf []byte
	valBuf []byte
}

func newRunTable(shard string, pins *checkpoint.Pins, ids *vertexIDs, st *Stats) *runTable {
	return &runTable{shard: shard, pins: pins, ids: ids, st: st, m: map[string]*run{}}
}

func (t *runTable) len() int { return len(t.m) }

// open returns run id, starting it (pinned at pin, unless a run store
// is configured) if it is new. With a store, a run this shard does not hold
// is looked up there first (normally loaded already by the batch's
// prefetch).
func (t *runTable) open(id string, job lineage.Job, pin string) *run {
	r := t.m[id]
	if r != nil {
		return r
	}
	if t.unpinned {
		if r = t.evicted[id]; r != nil {
			delete(t.evicted, id)
		} else if _, ok := t.absent[id]; ok {
			delete(t.absent, id)
		} else {
			r = t.fetch(id)
		}
		if r != nil {
			t.m[id] = r
			return r
		}
		r = &run{id: id, status: runOpen, job: job, jobID: t.ids.job(job)}
		t.m[id] = r
		return r
	}
	r = &run{id: id, status: runOpen, job: job, jobID: t.ids.job(job), pin: pin}
	t.m[id] = r
	t.pins.Add(r.pin)
	return r
}

// emitPin is the pin of an emission of r made by the current record
// (prevFull): the run's own pin, unless it holds none (handed off by a
// parent, or a run store is configured).
func (t *runTable) emitPin(r *run, prevFull string) string {
	if r.handoff || t.unpinned {
		return prevFull
	}
	return r.pin
}

func (t *runTable) markDirty(r *run) {
	if !r.dirty {
		r.dirty = true
		t.dirty = append(t.dirty, r)
	}
}

// release releases the pin of an open run that ends or expires (a run
// handed off by a parent shard holds none).
func (t *runTable) release(r *run) {
	if !r.handoff && !t.unpinned {
		t.pins.Release(r.pin)
	}
}

// addAll appends the datasets of ds not yet in *rs (indexed by *idx),
// at most room of them, and returns how many new ones did not fit.
func (t *runTable) addAll(rs *[]dsRef, idx *map[string]struct{}, ds []lineage.Dataset, room int) (dropped int) {
	for _, d := range ds {
		id := t.ids.dataset(d)
		if m := runIndex(*rs, idx); m != nil {
			if _, ok := m[id]; ok {
				continue
			}
		} else if contains(*rs, id) {
			continue
		}
		if room <= 0 {
			dropped++
			continue
		}
		room--
		*rs = append(*rs, dsRef{d: d, id: id})
		if *idx != nil {
			(*idx)[id] = struct{}{}
		}
	}
	return dropped
}

// addEvent adds the current event's datasets (and its column lineage
// pairs cols) to r within the run budget; datasets beyond it are counted
// and left out. Field pairs have a budget of their own of the same size.
func (t *runTable) addEvent(r *run, ev *lineage.Event, cols []lineage.FieldEdge) {
	room := func() int {
		if t.maxDatasets <= 0 {
			return math.MaxInt
		}
		return t.maxDatasets - len(r.inputs) - len(r.outputs)
	}
	dropped := t.addAll(&r.inputs, &r.inIdx, ev.Inputs, room())
	dropped += t.addAll(&r.outputs, &r.outIdx, ev.Outputs, room())
	if dropped > 0 {
		t.st.Budget.RunDatasetsDropped.Add(int64(dropped))
	}
	colRoom := math.MaxInt
	if t.maxDatasets > 0 {
		colRoom = t.maxDatasets - len(r.cols)
	}
	if n := t.addCols(r, cols, colRoom, ev.Time.UnixMilli()); n > 0 {
		t.st.Budget.RunFieldsDropped.Add(int64(n))
	}
}

// evict keeps the run table within maxRuns: past it, the runs with the
// oldest last event (a sixteenth of the budget at once) are forgotten as
// the run timeout would forget them, but keep; open ones are counted.
func (t *runTable) evict(keep *run) {
	if t.maxRuns <= 0 || len(t.m) <= t.maxRuns {
		return
	}
	all := make([]*run, 0, len(t.m))
	for _, r := range t.m {
		if r != keep {
			all = append(all, r)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].lastArrival < all[j].lastArrival })
	n := len(t.m) - t.maxRuns + max(t.maxRuns/16, 1)
	for _, r := range all[:min(n, len(all))] {
		if t.unpinned {
			// Nothing lost: the store holds the run (or will, at the
			// barrier: until then it is kept in evicted).
			if r.dirty {
				if t.evicted == nil {
					t.evicted = map[string]*run{}
				}
				t.evicted[r.id] = r
			}
		} else if r.status == runOpen {
			t.st.Budget.RunsEvicted.Add(1)
			t.release(r)
		}
		delete(t.m, r.id)
		r.dirty = true // never re-written
		t.dropped = append(t.dropped, r.id)
	}
}

// runEvent folds the current RunEvent into its run and emits the edges it
// makes true.
func (s *Shard) runEvent(bucket, arrival int64) {
	ev := &s.ev
	r := s.runs.open(ev.RunID, ev.Job, s.prevFull)
	r.lastArrival = arrival
	if r.status == runStreaming {
		// Holds no pin: what it emits replays from its own record.
		r.pin = s.prevFull
	}
	s.runs.markDirty(r)
	s.runVertex(r, bucket)
	s.runs.evict(r)
	if r.status == runClosed {
		return
	}
	oldIn, oldOut, oldCols := len(r.inputs), len(r.outputs), len(r.cols)
	s.runs.addEvent(r, ev, s.eventCols())

	t := ev.Time.UnixMilli()
	stamps := ev.Type == lineage.TypeComplete || s.cfg.Policy == PolicyAny || r.status == runStreaming
	changed := false
	if r.status == runOpen || r.status == runStreaming {
		wasOpen := r.status == runOpen
		if s.cfg.Policy == PolicyStrict && (ev.Type == lineage.TypeFail || ev.Type == lineage.TypeAbort) {
			// A streaming run's committed edges stay: it only stops.
			r.status = runClosed
			r.inputs, r.outputs, r.inIdx, r.outIdx, r.cols, r.colIdx = nil, nil, nil, nil, nil, nil
			if wasOpen {
				s.runs.release(r)
			}
			return
		}
		switch {
		case ev.Type == lineage.TypeComplete || s.cfg.Policy == PolicyAny:
			r.status = runCommitted
		case r.status == runStreaming:
		case ev.StreamingJob():
			// Streaming from this event on: stamped with every event
			// so far (none was terminal), pinned by none.
			r.status = runStreaming
			r.minC, r.maxC, r.hasC, changed = min(r.rv.startMin, t), max(r.rv.tMax, t), true, true
		default:
			return
		}
		if wasOpen {
			s.runs.release(r)
		}
		if r.status == runStreaming {
			r.pin = s.prevFull
		}
	}
	if stamps {
		if !r.hasC {
			r.minC, r.maxC, r.hasC, changed = t, t, true, true
		} else {
			if t < r.minC {
				r.minC, changed = t, true
			}
			if t > r.maxC {
				r.maxC, changed = t, true
			}
		}
	}
	pin := s.runs.emitPin(r, s.prevFull)
	e := emission{bucket: bucket, pin: pin, job: r.job, jobID: r.jobID, first: r.minC, last: r.maxC, runID: r.id}
	if changed || r.reload {
		r.reload = false
		s.windows.emit(&e, r.inputs, r.outputs, 0, 0, r.cols, 0)
	} else {
		s.windows.emit(&e, r.inputs, r.outputs, oldIn, oldOut, r.cols, oldCols)
	}
}

// expire forgets runs with no event for timeout (Unix ms of arrival time,
// up to maxArrival); open ones are counted as expired.
func (t *runTable) expire(maxArrival, timeout int64) {
	if maxArrival-t.lastGC < timeout/64 && t.lastGC != 0 {
		return
	}
	t.lastGC = maxArrival
	for id, r := range t.m {
		if maxArrival-r.lastArrival <= timeout {
			continue
		}
		if r.status == runOpen {
			// Never any edge: the run is only forgotten. A handed-off run
			// expires on every child its events do not reach (normal
			// after a split): counted apart from runs that never ended.
			if r.handoff {
				t.st.HandoffRunsExpired.Add(1)
			} else {
				t.st.RunsExpired.Add(1)
			}
			t.release(r)
		}
		delete(t.m, id)
		r.dirty = true // never re-written
		t.dropped = append(t.dropped, id)
	}
}

// writeTo adds to batch the deletion of the runs forgotten and the state
// of the runs changed since the last barrier.
func (t *runTable) writeTo(batch *pebble.Batch) {
	for _, id := range t.dropped {
		t.keyBuf = checkpoint.AppendRunKey(t.keyBuf[:0], t.shard, id)
		_ = batch.Delete(t.keyBuf, nil)
	}
	// In key order (see dedupSet.writeTo). A run id twice in dirty (a run
	// forgotten and started again) is written once: the one in t.m.
	slices.SortFunc(t.dirty, func(a, b *run) int { return strings.Compare(a.id, b.id) })
	for _, r := range t.dirty {
		r.dirty = false
		if t.m[r.id] != r {
			continue
		}
		// Encoded once for the value, and kept so in memory until the
		// run's next event (a run's list is larger than its encoding).
		r.rv.props.Compact()
		t.valBuf = appendRun(t.valBuf[:0], r)
		t.keyBuf = checkpoint.AppendRunKey(t.keyBuf[:0], t.shard, r.id)
		_ = batch.Set(t.keyBuf, t.valBuf, nil)
	}
}

// afterCommit forgets what the barrier made durable.
func (t *runTable) afterCommit() {
	t.dirty = t.dirty[:0]
	t.dropped = t.dropped[:0]
}

// load restores run id from its s/<shard>/r/ value (resume).
func (t *runTable) load(id string, v []byte) error {
	r, err := t.decode(id, v)
	if err != nil {
		return err
	}
	t.m[id] = r
	if r.status == runOpen && !r.handoff && !t.unpinned {
		t.pins.Add(r.pin)
	}
	return nil
}

// Run value versions: 1 a run of this shard, 2 a run handed off by a parent
// (same fields, never pinned).
const (
	runV1        = 1
	runV1Handoff = 2
)

func appendRun(dst []byte, r *run) []byte {
	ver := byte(runV1)
	if r.handoff {
		ver = runV1Handoff
	}
	dst = append(dst, ver, byte(r.status))
	dst = enc.AppendString(dst, r.job.Namespace)
	dst = enc.AppendString(dst, r.job.Name)
	dst = enc.AppendBool(dst, r.hasC)
	dst = enc.AppendVarint(dst, r.minC)
	dst = enc.AppendVarint(dst, r.maxC)
	dst = enc.AppendString(dst, r.pin)
	dst = enc.AppendVarint(dst, r.lastArrival)
	for _, set := range [][]dsRef{r.inputs, r.outputs} {
		dst = enc.AppendVarint(dst, int64(len(set)))
		for _, d := range set {
			dst = enc.AppendString(dst, d.d.Namespace)
			dst = enc.AppendString(dst, d.d.Name)
		}
	}
	dst = appendRunVertex(dst, &r.rv)
	return appendCols(dst, r.cols)
}

func (t *runTable) decode(id string, b []byte) (*run, error) {
	rd := enc.NewReader(b, checkpoint.ErrCorrupt)
	ver := rd.Byte()
	if ver != runV1 && ver != runV1Handoff {
		return nil, checkpoint.ErrCorrupt
	}
	r := &run{id: id, handoff: ver == runV1Handoff, status: runStatus(rd.Byte())}
	if r.status < runOpen || r.status > runStreaming {
		return nil, checkpoint.ErrCorrupt
	}
	r.job = lineage.Job{Namespace: rd.String(), Name: rd.String()}
	r.jobID = t.ids.job(r.job)
	r.hasC = rd.Byte() == 1
	r.minC, r.maxC = rd.Varint(), rd.Varint()
	r.pin = rd.String()
	r.lastArrival = rd.Varint()
	for k := 0; k < 2; k++ {
		n := rd.Varint()
		if n < 0 || n > int64(len(b)) {
			return nil, checkpoint.ErrCorrupt
		}
		set := make([]dsRef, 0, n)
		for i := int64(0); i < n; i++ {
			d := lineage.Dataset{Namespace: rd.String(), Name: rd.String()}
			set = append(set, dsRef{d: d, id: t.ids.dataset(d)})
		}
		if k == 0 {
			r.inputs = set
		} else {
			r.outputs = set
		}
	}
	readRunVertex(&rd, &r.rv, t.ids)
	r.cols = readCols(&rd, t.ids)
	if err := rd.Err(); err != nil {
		return nil, err
	}
	return r, nil
}
