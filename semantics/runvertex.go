package semantics

import "github.com/lineageflow/lineageflow/lineage"

// runVertex writes what RunEvent ev says of its run r (DESIGN.md, "Graph
// model"): one Run vertex that carries its job (job: the Job vertex id),
// its parent run (parentRunId) and the datasets it read and wrote
// (inputs, outputs: capped id lists, counted in inputCount, outputCount),
// and no edge. None of it is lineage: a FAILed run gets it too, and never
// INPUT_TO, OUTPUTS or DERIVES. Several events of a run in one window are
// one write (the window merges the vertex).
//
// -runs all: every event emits the run's properties folded so far.
// -runs failed: only closed runs (strict policy: first terminal event FAIL
// or ABORT, a streaming run's too) emit, from the closing event on.
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
	if x.cfg.Runs == RunsNone {
		return
	}
	nr, nw := len(st.Reads), len(st.Writes)
	st.Reads = addRefs(x.ids, st.Reads, ev.Inputs)
	st.Writes = addRefs(x.ids, st.Writes, ev.Outputs)
	// The dataset lists when they grew (or, -runs all, the run's earlier
	// emissions may be lost: Reemit); an empty one is left out.
	var ins, outs []string
	if len(st.Reads) != nr || len(st.Writes) != nw || (r.Reemit && x.cfg.Runs == RunsAll) {
		x.idBuf = refIDs(x.idBuf[:0], st.Reads)
		n := len(x.idBuf)
		x.idBuf = refIDs(x.idBuf, st.Writes)
		if n > 0 {
			ins = x.idBuf[:n:n]
		}
		if len(x.idBuf) > n {
			outs = x.idBuf[n:]
		}
	}
	x.propBuf = appendRunEventProps(x.propBuf[:0], r.ID, r.Job, r.JobID, ev, st.StartMin, st.EndMax, st.HasEnd, ins, outs)
	if x.cfg.Runs == RunsAll {
		// Every event writes what it adds (the window and the graph
		// merge).
		em.Touch(bucket, FromRun)
		em.AddVertexProps(bucket, lineage.Vertex{ID: lineage.RunVertexID(r.ID), Label: lineage.LabelRun}, x.propBuf)
		return
	}
	// -runs failed: folded until the run fails, then written whole.
	st.Props.Add(x.propBuf...)
	closing := (r.Status == StatusOpen || r.Status == StatusStreaming) && x.cfg.Policy == PolicyStrict &&
		(ev.Type == lineage.TypeFail || ev.Type == lineage.TypeAbort)
	if r.Status != StatusClosed && !closing {
		return
	}
	em.Touch(bucket, FromRun)
	rv := lineage.RunVertex(r.ID)
	rv.Props = st.Props.Props()
	em.AddVertex(bucket, rv)
}

// addRefs appends to rs the datasets of ds not in it.
func addRefs(ids *IDs, rs []DatasetRef, ds []lineage.Dataset) []DatasetRef {
	for _, d := range ds {
		id := ids.Dataset(d)
		if !contains(rs, id) {
			rs = append(rs, DatasetRef{D: d, ID: id})
		}
	}
	return rs
}

// refIDs appends the ids of rs to out.
func refIDs(out []string, rs []DatasetRef) []string {
	for i := range rs {
		out = append(out, rs[i].ID)
	}
	return out
}

// RunEventProps are the Run vertex properties one RunEvent ev of run runID
// (job j, of vertex id jobID) gives, but the dataset lists, knowing the
// run's earliest eventTime startMin and, if hasEnd, its latest terminal
// eventTime endMax so far. The reference model computes the same from the
// whole stream.
func RunEventProps(runID string, j lineage.Job, jobID string, ev *lineage.Event, startMin, endMax int64, hasEnd bool) []lineage.Prop {
	return appendRunEventProps(make([]lineage.Prop, 0, 22), runID, j, jobID, ev, startMin, endMax, hasEnd, nil, nil)
}

// appendRunEventProps appends RunEventProps(runID, j, jobID, ev,
// startMin, endMax, hasEnd) to ps in key order (a set as it is: MakeProps
// does not sort it), with the dataset list properties of ins and outs
// (lineage.RunDatasetProps) unless nil.
func appendRunEventProps(ps []lineage.Prop, runID string, j lineage.Job, jobID string, ev *lineage.Event, startMin, endMax int64, hasEnd bool, ins, outs []string) []lineage.Prop {
	t := ev.Time.UnixMilli()
	// Keys in order: durationMs endedAt errorMessage externalQueryId
	// externalQuerySource inputCount inputs job jobName jobNamespace
	// nominalEndTime nominalStartTime openlineageAdapterVersion outputCount
	// outputs parentRunId processingEngine processingEngineVersion runId
	// startedAt state updatedAt.
	if hasEnd && endMax >= startMin {
		ps = append(ps, lineage.NumMax(lineage.PropDurationMs, endMax-startMin))
	}
	if ev.Type.Terminal() {
		ps = append(ps, lineage.NumMax(lineage.PropEndedAt, t))
	}
	if ev.Run.HasError {
		ps = append(ps, lineage.StrLWW(lineage.PropErrorMessage, ev.Run.ErrorMessage, t))
	}
	ps = appendOptLWW(ps, lineage.PropExternalQueryID, ev.Run.ExternalQueryID, t)
	ps = appendOptLWW(ps, lineage.PropExternalQuerySource, ev.Run.ExternalQuerySource, t)
	if ins != nil {
		l := lineage.RunDatasetProps(ins, lineage.PropInputs, lineage.PropInputCount)
		ps = append(ps, l[:]...)
	}
	ps = append(ps,
		lineage.StrConst(lineage.PropJob, jobID),
		lineage.StrConst(lineage.PropJobName, j.Name),
		lineage.StrConst(lineage.PropJobNamespace, j.Namespace),
	)
	if ev.Run.HasNominalEnd {
		ps = append(ps, lineage.NumLWW(lineage.PropNominalEndTime, ev.Run.NominalEnd, t))
	}
	if ev.Run.HasNominalStart {
		ps = append(ps, lineage.NumLWW(lineage.PropNominalStartTime, ev.Run.NominalStart, t))
	}
	ps = appendOptLWW(ps, lineage.PropOpenlineageAdapterVersion, ev.Run.AdapterVersion, t)
	if outs != nil {
		l := lineage.RunDatasetProps(outs, lineage.PropOutputs, lineage.PropOutputCount)
		ps = append(ps, l[:]...)
	}
	if ev.Parent != nil && ev.Parent.RunID != runID {
		ps = append(ps, lineage.StrLWW(lineage.PropParentRunID, ev.Parent.RunID, t))
	}
	ps = appendOptLWW(ps, lineage.PropProcessingEngine, ev.Run.EngineName, t)
	ps = appendOptLWW(ps, lineage.PropProcessingEngineVersion, ev.Run.EngineVersion, t)
	ps = append(ps,
		lineage.StrConst(lineage.PropRunID, runID),
		lineage.NumMin(lineage.PropStartedAt, t),
	)
	if p, ok := lineage.RunStateProp(ev.Type, t); ok {
		ps = append(ps, p)
	}
	return append(ps, lineage.NumMax(lineage.PropUpdatedAt, t))
}

// appendOptLWW appends key = v (last writer wins at t) when v is given.
func appendOptLWW(ps []lineage.Prop, key string, v lineage.OptStr, t int64) []lineage.Prop {
	if v.Ok {
		ps = append(ps, lineage.StrLWW(key, v.V, t))
	}
	return ps
}
