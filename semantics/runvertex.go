package semantics

import "github.com/lineageflow/lineageflow/lineage"

// runVertex writes what RunEvent ev says of its run r (DESIGN.md, "Graph
// model"): the Run vertex, Run -[RUN_OF]-> Job, Run -[READ]-> each input
// and Run -[WROTE]-> each output. None of these is lineage: a FAILed run
// gets them too, and never INPUT_TO, OUTPUTS or DERIVES.
//
// -runs all: every event emits, with its own properties and stamps.
// -runs failed: only closed runs (strict policy: first terminal event FAIL
// or ABORT, a streaming run's too) emit, from the closing event on, each
// time the run's folded properties, and RUN_OF, READ and WROTE for every
// dataset of the run stamped with the run's span (earliest, latest
// eventTime).
func (x *Rules) runVertex(ev *lineage.Event, r *Run, bucket int64, em Emitter) {
	t := ev.Time.UnixMilli()
	st := &r.RV
	if !st.HasStart || t > st.TMax {
		st.TMax = t
	}
	if !st.HasStart || t < st.StartMin {
		st.HasStart, st.StartMin = true, t
	}
	if ev.Type.Terminal() && (!st.HasEnd || t > st.EndMax) {
		st.HasEnd, st.EndMax = true, t
	}
	switch x.cfg.Runs {
	case RunsNone:
		return
	case RunsFailed:
		x.failedRunVertex(ev, r, bucket, em)
		return
	}
	rv := lineage.RunVertex(r.ID, RunEventProps(r.ID, r.Job, ev, st.StartMin, st.EndMax, st.HasEnd)...)
	emitRun(em, r, bucket, rv, t, t, x.ids.Refs(ev.Inputs), x.ids.Refs(ev.Outputs))
}

// failedRunVertex is runVertex for -runs failed.
func (x *Rules) failedRunVertex(ev *lineage.Event, r *Run, bucket int64, em Emitter) {
	st := &r.RV
	x.propBuf = appendRunEventProps(x.propBuf[:0], r.ID, r.Job, ev, st.StartMin, st.EndMax, st.HasEnd)
	st.Props.Add(x.propBuf...)
	closing := (r.Status == StatusOpen || r.Status == StatusStreaming) && x.cfg.Policy == PolicyStrict &&
		(ev.Type == lineage.TypeFail || ev.Type == lineage.TypeAbort)
	if r.Status != StatusClosed && !closing {
		return
	}
	if closing {
		st.Reads = append(append(st.Reads[:0], r.Inputs...), x.ids.Refs(ev.Inputs)...)
		st.Writes = append(append(st.Writes[:0], r.Outputs...), x.ids.Refs(ev.Outputs)...)
	} else {
		st.Reads = append(st.Reads, x.ids.Refs(ev.Inputs)...)
		st.Writes = append(st.Writes, x.ids.Refs(ev.Outputs)...)
	}
	st.Reads, st.Writes = uniqRefs(st.Reads), uniqRefs(st.Writes)
	rv := lineage.RunVertex(r.ID)
	rv.Props = st.Props.Props()
	emitRun(em, r, bucket, rv, st.StartMin, st.TMax, st.Reads, st.Writes)
	// Run -[CHILD_OF]-> the parent run its events name (the latest by
	// eventTime so far), whose vertex holds at least its runId.
	if p, ok := st.Props.Get(lineage.PropParentRunID); ok {
		pv := lineage.RunVertex(p.Str, lineage.StrConst(lineage.PropRunID, p.Str))
		em.AddVertex(bucket, pv)
		em.AddEdge(bucket, lineage.EdgeChildOf, rv.ID, pv.ID, st.StartMin, st.TMax, r.ID)
	}
}

func uniqRefs(rs []DatasetRef) []DatasetRef {
	out := rs[:0]
	if len(rs) <= 16 {
		for _, x := range rs {
			if !contains(out, x.ID) {
				out = append(out, x)
			}
		}
		return out
	}
	seen := make(map[string]struct{}, len(rs))
	for _, x := range rs {
		if _, ok := seen[x.ID]; !ok {
			seen[x.ID] = struct{}{}
			out = append(out, x)
		}
	}
	return out
}

// emitRun writes rv, its job, RUN_OF, READ (ins) and WROTE (outs) stamped
// (first, last) into bucket.
func emitRun(em Emitter, r *Run, bucket int64, rv lineage.Vertex, first, last int64, ins, outs []DatasetRef) {
	em.Touch(bucket, FromRun)
	em.AddVertex(bucket, rv)
	em.AddVertex(bucket, lineage.Vertex{ID: r.JobID, Label: lineage.LabelJob, Namespace: r.Job.Namespace, Name: r.Job.Name})
	em.AddEdge(bucket, lineage.EdgeRunOf, rv.ID, r.JobID, first, last, r.ID)
	for _, set := range [2]struct {
		label string
		ds    []DatasetRef
	}{{lineage.EdgeRead, ins}, {lineage.EdgeWrote, outs}} {
		for _, d := range set.ds {
			em.AddVertex(bucket, lineage.Vertex{ID: d.ID, Label: lineage.LabelDataset, Namespace: d.D.Namespace, Name: d.D.Name})
			em.AddEdge(bucket, set.label, rv.ID, d.ID, first, last, r.ID)
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
