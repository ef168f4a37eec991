package processor

import (
	"github.com/lineageflow/lineageflow/internal/enc"
	"github.com/lineageflow/lineageflow/lineage"
)

// runVertexState is what a run's Run vertex needs beyond the run table's
// lineage state: the earliest eventTime of its events and the latest of
// its terminal events (Unix ms), for durationMs. It is kept for closed
// (FAILed, ABORTed) runs too. With -runs failed it also holds what is
// written only once the run fails: the latest eventTime, the properties
// folded over its events and the datasets it read and wrote.
type runVertexState struct {
	hasStart, hasEnd bool
	startMin, endMax int64
	tMax             int64
	// props: folded in place at every event (lineage.PropList), encoded
	// only when written (barrier) or emitted (a closed run).
	props         lineage.PropList
	reads, writes []dsRef
}

// appendRunVertex appends st to a run value (after the lineage fields; a
// value written before runs had vertices has none: see readRunVertex).
func appendRunVertex(dst []byte, st *runVertexState) []byte {
	dst = enc.AppendBool(dst, st.hasStart)
	dst = enc.AppendVarint(dst, st.startMin)
	dst = enc.AppendBool(dst, st.hasEnd)
	dst = enc.AppendVarint(dst, st.endMax)
	dst = enc.AppendVarint(dst, st.tMax)
	dst = st.props.AppendEncoded(dst) // = enc.AppendString(dst, string(props encoding))
	for _, set := range [][]dsRef{st.reads, st.writes} {
		dst = enc.AppendVarint(dst, int64(len(set)))
		for _, d := range set {
			dst = enc.AppendString(dst, d.d.Namespace)
			dst = enc.AppendString(dst, d.d.Name)
		}
	}
	return dst
}

// readRunVertex reads what appendRunVertex wrote, if anything is left.
func readRunVertex(rd *enc.Reader, st *runVertexState, ids *vertexIDs) {
	if !rd.OK() || rd.Len() == 0 {
		return
	}
	st.hasStart = rd.Byte() == 1
	st.startMin = rd.Varint()
	st.hasEnd = rd.Byte() == 1
	st.endMax = rd.Varint()
	st.tMax = rd.Varint()
	p, err := lineage.DecodeProps(rd.String())
	if err != nil {
		failReader(rd)
		return
	}
	st.props = lineage.PropListOf(p)
	for k := 0; k < 2 && rd.OK(); k++ {
		n := rd.Varint()
		if n < 0 || n > int64(rd.Len()) {
			failReader(rd)
			return
		}
		set := make([]dsRef, 0, n)
		for i := int64(0); i < n; i++ {
			d := lineage.Dataset{Namespace: rd.String(), Name: rd.String()}
			set = append(set, dsRef{d: d, id: ids.dataset(d)})
		}
		if k == 0 {
			st.reads = set
		} else {
			st.writes = set
		}
	}
}

// failReader makes rd fail (it reads past its end).
func failReader(rd *enc.Reader) {
	for rd.OK() {
		rd.Byte()
	}
}

// runVertex emits what the current RunEvent says of its run (DESIGN.md,
// "Graph model"): the Run vertex, Run -[RUN_OF]-> Job, Run -[READ]-> each
// input and Run -[WROTE]-> each output. None of these is lineage: a FAILed
// run gets them too, and never INPUT_TO, OUTPUTS or DERIVES.
//
// -runs all: every event emits, with its own properties and stamps.
// -runs failed: only closed runs (strict policy: first terminal event FAIL
// or ABORT, a streaming run's too) emit, from the closing event on, each time the run's folded
// properties, and RUN_OF, READ and WROTE for every dataset of the run
// stamped with the run's span (earliest, latest eventTime).
func (s *Shard) runVertex(r *run, bucket int64) {
	ev := &s.ev
	t := ev.Time.UnixMilli()
	st := &r.rv
	if !st.hasStart || t > st.tMax {
		st.tMax = t
	}
	if !st.hasStart || t < st.startMin {
		st.hasStart, st.startMin = true, t
	}
	if ev.Type.Terminal() && (!st.hasEnd || t > st.endMax) {
		st.hasEnd, st.endMax = true, t
	}
	switch s.cfg.Runs {
	case RunsNone:
		return
	case RunsFailed:
		s.failedRunVertex(r, bucket)
		return
	}
	pin := s.runs.emitPin(r, s.prevFull)
	rv := lineage.RunVertex(r.id, RunEventProps(r.id, r.job, ev, st.startMin, st.endMax, st.hasEnd)...)
	s.emitRun(r, bucket, pin, rv, t, t, ev.Inputs, ev.Outputs)
}

// failedRunVertex is runVertex for -runs failed.
func (s *Shard) failedRunVertex(r *run, bucket int64) {
	ev := &s.ev
	st := &r.rv
	s.propBuf = appendRunEventProps(s.propBuf[:0], r.id, r.job, ev, st.startMin, st.endMax, st.hasEnd)
	st.props.Add(s.propBuf...)
	closing := (r.status == runOpen || r.status == runStreaming) && s.cfg.Policy == PolicyStrict && (ev.Type == lineage.TypeFail || ev.Type == lineage.TypeAbort)
	if r.status != runClosed && !closing {
		return
	}
	if closing {
		st.reads = append(append(st.reads[:0], r.inputs...), s.ids.refs(ev.Inputs)...)
		st.writes = append(append(st.writes[:0], r.outputs...), s.ids.refs(ev.Outputs)...)
	} else {
		st.reads = append(st.reads, s.ids.refs(ev.Inputs)...)
		st.writes = append(st.writes, s.ids.refs(ev.Outputs)...)
	}
	st.reads, st.writes = uniqRefs(st.reads), uniqRefs(st.writes)
	pin := s.runs.emitPin(r, s.prevFull)
	rv := lineage.RunVertex(r.id)
	rv.Props = st.props.Props()
	s.emitRunRefs(r, bucket, pin, rv, st.startMin, st.tMax, st.reads, st.writes)
	// Run -[CHILD_OF]-> the parent run its events name (the latest by
	// eventTime so far), whose vertex holds at least its runId.
	if p, ok := st.props.Get(lineage.PropParentRunID); ok {
		pv := lineage.RunVertex(p.Str, lineage.StrConst(lineage.PropRunID, p.Str))
		s.windows.tab.AddVertex(bucket, pv)
		s.windows.tab.AddEdge(bucket, lineage.EdgeChildOf, rv.ID, pv.ID, st.startMin, st.tMax, r.id)
	}
}

func uniqRefs(rs []dsRef) []dsRef {
	out := rs[:0]
	if len(rs) <= 16 {
		for _, x := range rs {
			if !contains(out, x.id) {
				out = append(out, x)
			}
		}
		return out
	}
	seen := make(map[string]struct{}, len(rs))
	for _, x := range rs {
		if _, ok := seen[x.id]; !ok {
			seen[x.id] = struct{}{}
			out = append(out, x)
		}
	}
	return out
}

// emitRun adds rv, its job, RUN_OF, READ (ins) and WROTE (outs) stamped
// (first, last) to the window.
func (s *Shard) emitRun(r *run, bucket int64, pin string, rv lineage.Vertex, first, last int64, ins, outs []lineage.Dataset) {
	s.emitRunRefs(r, bucket, pin, rv, first, last, s.ids.refs(ins), s.ids.refs(outs))
}

func (s *Shard) emitRunRefs(r *run, bucket int64, pin string, rv lineage.Vertex, first, last int64, ins, outs []dsRef) {
	w := s.windows
	w.touch(bucket, pin)
	tab := w.tab
	tab.AddVertex(bucket, rv)
	tab.AddVertex(bucket, lineage.Vertex{ID: r.jobID, Label: lineage.LabelJob, Namespace: r.job.Namespace, Name: r.job.Name})
	tab.AddEdge(bucket, lineage.EdgeRunOf, rv.ID, r.jobID, first, last, r.id)
	for _, set := range []struct {
		label string
		ds    []dsRef
	}{{lineage.EdgeRead, ins}, {lineage.EdgeWrote, outs}} {
		for _, d := range set.ds {
			tab.AddVertex(bucket, lineage.Vertex{ID: d.id, Label: lineage.LabelDataset, Namespace: d.d.Namespace, Name: d.d.Name})
			tab.AddEdge(bucket, set.label, rv.ID, d.id, first, last, r.id)
		}
	}
}

// RunEventProps are the Run vertex properties one RunEvent ev of run runID
// (job j) gives, knowing the run's earliest eventTime startMin and, if
// hasEnd, its latest terminal eventTime endMax so far. The reference model
// computes the same from the whole stream.
func RunEventProps(runID string, j lineage.Job, ev *lineage.Event, startMin, endMax int64, hasEnd bool) []lineage.Prop {
	return appendRunEventProps(make([]lineage.Prop, 0, 11), runID, j, ev, startMin, endMax, hasEnd)
}

// appendRunEventProps appends RunEventProps(runID, j, ev, startMin,
// endMax, hasEnd) to ps.
func appendRunEventProps(ps []lineage.Prop, runID string, j lineage.Job, ev *lineage.Event, startMin, endMax int64, hasEnd bool) []lineage.Prop {
	t := ev.Time.UnixMilli()
	ps = append(ps,
		lineage.StrConst(lineage.PropRunID, runID),
		lineage.StrConst(lineage.PropJobNamespace, j.Namespace),
		lineage.StrConst(lineage.PropJobName, j.Name),
		lineage.NumMin(lineage.PropStartedAt, t),
		lineage.NumMax(lineage.PropUpdatedAt, t),
	)
	if p, ok := lineage.RunStateProp(ev.Type, t); ok {
		ps = append(ps, p)
	}
	if ev.Type.Terminal() {
		ps = append(ps, lineage.NumMax(lineage.PropEndedAt, t))
	}
	if hasEnd && endMax >= startMin {
		ps = append(ps, lineage.NumMax(lineage.PropDurationMs, endMax-startMin))
	}
	if ev.Run.HasError {
		ps = append(ps, lineage.StrLWW(lineage.PropErrorMessage, ev.Run.ErrorMessage, t))
	}
	if ev.Run.HasNominalStart {
		ps = append(ps, lineage.NumLWW(lineage.PropNominalStartTime, ev.Run.NominalStart, t))
	}
	if ev.Run.HasNominalEnd {
		ps = append(ps, lineage.NumLWW(lineage.PropNominalEndTime, ev.Run.NominalEnd, t))
	}
	if ev.Parent != nil && ev.Parent.RunID != runID {
		ps = append(ps, lineage.StrLWW(lineage.PropParentRunID, ev.Parent.RunID, t))
	}
	return ps
}

// countRunRecords counts the run records (Run vertices, RUN_OF, READ,
// WROTE) of an outbox batch: they are a write per run at least, apart
// from the lineage's write reduction.
func (st *Stats) countRunRecords(b *lineage.Batch) {
	var n int64
	for i := range b.Vertices {
		if b.Vertices[i].Label == lineage.LabelRun {
			n++
		}
	}
	for i := range b.Edges {
		switch b.Edges[i].Label {
		case lineage.EdgeRunOf, lineage.EdgeRead, lineage.EdgeWrote:
			n++
		}
	}
	st.RunRecordsEmitted.Add(n)
}
