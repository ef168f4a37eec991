package processor

import (
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
)

type runStatus uint8

const (
	runOpen      runStatus = 1 // no terminal event yet: pins the checkpoint
	runCommitted runStatus = 2 // first terminal event was COMPLETE (or policy any)
	runClosed    runStatus = 3 // first terminal event was FAIL/ABORT: never gives edges
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
	dirty       bool
	// handoff: loaded from a parent shard's handoff (handoff.go). Such a
	// run never pins this shard's checkpoint (its earlier events are on
	// the parent, not here: the handoff is its durable source) and its
	// emissions carry the pin of the record that makes them.
	handoff bool
}

func (s *Shard) refs(ds []lineage.Dataset) []dsRef {
	out := make([]dsRef, len(ds))
	for i, d := range ds {
		out[i] = dsRef{d: d, id: s.datasetID(d)}
	}
	return out
}

func contains(rs []dsRef, id string) bool {
	for i := range rs {
		if rs[i].id == id {
			return true
		}
	}
	return false
}

// addAll appends the datasets of ds not yet in *rs.
func (s *Shard) addAll(rs *[]dsRef, ds []lineage.Dataset) {
	for _, d := range ds {
		id := s.datasetID(d)
		if !contains(*rs, id) {
			*rs = append(*rs, dsRef{d: d, id: id})
		}
	}
}

func (s *Shard) markDirty(r *run) {
	if !r.dirty {
		r.dirty = true
		s.dirtyRuns = append(s.dirtyRuns, r)
	}
}

// runEvent folds the current RunEvent into its run and emits the edges it
// makes true.
func (s *Shard) runEvent(bucket, arrival int64) {
	ev := &s.ev
	r := s.runs[ev.RunID]
	if r == nil {
		r = &run{id: ev.RunID, status: runOpen, job: ev.Job, jobID: s.jobID(ev.Job), pin: s.prevFull}
		s.runs[ev.RunID] = r
		s.pins.Add(r.pin)
	}
	r.lastArrival = arrival
	s.markDirty(r)
	if r.status == runClosed {
		return
	}
	pin := r.pin
	if r.handoff {
		pin = s.prevFull
	}
	oldIn, oldOut := len(r.inputs), len(r.outputs)
	s.addAll(&r.inputs, ev.Inputs)
	s.addAll(&r.outputs, ev.Outputs)

	t := ev.Time.UnixMilli()
	stamps := ev.Type == lineage.TypeComplete || s.cfg.Policy == PolicyAny
	if r.status == runOpen {
		if s.cfg.Policy == PolicyStrict && (ev.Type == lineage.TypeFail || ev.Type == lineage.TypeAbort) {
			r.status = runClosed
			r.inputs, r.outputs = nil, nil
			s.releaseRun(r)
			return
		}
		if !stamps {
			return
		}
		r.status = runCommitted
		s.releaseRun(r)
	}
	changed := false
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
	e := emission{bucket: bucket, pin: pin, job: r.job, jobID: r.jobID, first: r.minC, last: r.maxC, runID: r.id}
	if changed {
		s.emit(&e, r.inputs, r.outputs, 0, 0)
	} else {
		s.emit(&e, r.inputs, r.outputs, oldIn, oldOut)
	}
}

// releaseRun releases the pin of an open run that ends or expires (a run
// handed off by a parent shard holds none).
func (s *Shard) releaseRun(r *run) {
	if !r.handoff {
		s.pins.Release(r.pin)
	}
}

// emission is one stamping of a set of edges into one window.
type emission struct {
	bucket      int64
	pin         string
	job         lineage.Job
	jobID       string
	first, last int64
	runID       string
}

// emit adds to the window the edges of (ins, outs) that involve an input
// at index >= newIn or an output at index >= newOut (0, 0: all of them):
// I -INPUT_TO-> J, J -OUTPUTS-> O, I -DERIVES-> O (I != O), and their
// endpoint vertices.
func (s *Shard) emit(e *emission, ins, outs []dsRef, newIn, newOut int) {
	if newIn >= len(ins) && newOut >= len(outs) {
		return
	}
	s.touchBucket(e.bucket, e.pin)
	t := s.tab
	jv := lineage.Vertex{ID: e.jobID, Label: lineage.LabelJob, Namespace: e.job.Namespace, Name: e.job.Name}
	t.AddVertex(e.bucket, jv)
	for i := range ins {
		in := &ins[i]
		if i >= newIn {
			t.AddVertex(e.bucket, lineage.Vertex{ID: in.id, Label: lineage.LabelDataset, Namespace: in.d.Namespace, Name: in.d.Name})
			t.AddEdge(e.bucket, lineage.EdgeInputTo, in.id, e.jobID, e.first, e.last, e.runID)
		}
	}
	for j := range outs {
		out := &outs[j]
		if j >= newOut {
			t.AddVertex(e.bucket, lineage.Vertex{ID: out.id, Label: lineage.LabelDataset, Namespace: out.d.Namespace, Name: out.d.Name})
			t.AddEdge(e.bucket, lineage.EdgeOutputs, e.jobID, out.id, e.first, e.last, e.runID)
		}
	}
	for i := range ins {
		for j := range outs {
			if (i >= newIn || j >= newOut) && ins[i].id != outs[j].id {
				t.AddEdge(e.bucket, lineage.EdgeDerives, ins[i].id, outs[j].id, e.first, e.last, e.runID)
			}
		}
	}
}

// expireRuns forgets runs with no event for RunTimeout (arrival time);
// open ones are counted as expired.
func (s *Shard) expireRuns() {
	timeout := s.cfg.RunTimeout.Milliseconds()
	if s.maxArrival-s.lastRunGC < timeout/64 && s.lastRunGC != 0 {
		return
	}
	s.lastRunGC = s.maxArrival
	for id, r := range s.runs {
		if s.maxArrival-r.lastArrival <= timeout {
			continue
		}
		if r.status == runOpen {
			// Never any edge: the run is only forgotten. A handed-off run
			// expires on every child its events do not reach (normal
			// after a split): counted apart from runs that never ended.
			if r.handoff {
				s.st.HandoffRunsExpired.Add(1)
			} else {
				s.st.RunsExpired.Add(1)
			}
			s.releaseRun(r)
		}
		delete(s.runs, id)
		r.dirty = true // never re-written
		s.dropRuns = append(s.dropRuns, id)
	}
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
	dst = checkpoint.AppendString(dst, r.job.Namespace)
	dst = checkpoint.AppendString(dst, r.job.Name)
	if r.hasC {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	dst = appendVarint(dst, r.minC)
	dst = appendVarint(dst, r.maxC)
	dst = checkpoint.AppendString(dst, r.pin)
	dst = appendVarint(dst, r.lastArrival)
	for _, set := range [][]dsRef{r.inputs, r.outputs} {
		dst = appendVarint(dst, int64(len(set)))
		for _, d := range set {
			dst = checkpoint.AppendString(dst, d.d.Namespace)
			dst = checkpoint.AppendString(dst, d.d.Name)
		}
	}
	return dst
}

func (s *Shard) decodeRun(id string, b []byte) (*run, error) {
	rd := checkpoint.NewReader(b)
	ver := rd.Byte()
	if ver != runV1 && ver != runV1Handoff {
		return nil, checkpoint.ErrCorrupt
	}
	r := &run{id: id, handoff: ver == runV1Handoff, status: runStatus(rd.Byte())}
	if r.status < runOpen || r.status > runClosed {
		return nil, checkpoint.ErrCorrupt
	}
	r.job = lineage.Job{Namespace: rd.String(), Name: rd.String()}
	r.jobID = s.jobID(r.job)
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
			set = append(set, dsRef{d: d, id: s.datasetID(d)})
		}
		if k == 0 {
			r.inputs = set
		} else {
			r.outputs = set
		}
	}
	if err := rd.Err(); err != nil {
		return nil, err
	}
	return r, nil
}
