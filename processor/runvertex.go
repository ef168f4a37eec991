package processor

import (
	"github.com/lineageflow/lineageflow/internal/enc"
	"github.com/lineageflow/lineageflow/lineage"
)

// runVertexState is what a run's Run vertex needs beyond the run table's
// lineage state: the earliest eventTime of its events and the latest of
// its terminal events (Unix ms), for durationMs. It is kept for closed
// (FAILed, ABORTed) runs too.
type runVertexState struct {
	hasStart, hasEnd bool
	startMin, endMax int64
}

// appendRunVertex appends st to a run value (after the lineage fields; a
// value written before runs had vertices has none: see readRunVertex).
func appendRunVertex(dst []byte, st *runVertexState) []byte {
	dst = enc.AppendBool(dst, st.hasStart)
	dst = enc.AppendVarint(dst, st.startMin)
	dst = enc.AppendBool(dst, st.hasEnd)
	return enc.AppendVarint(dst, st.endMax)
}

// readRunVertex reads what appendRunVertex wrote, if anything is left.
func readRunVertex(rd *enc.Reader, st *runVertexState) {
	if !rd.OK() || rd.Len() == 0 {
		return
	}
	st.hasStart = rd.Byte() == 1
	st.startMin = rd.Varint()
	st.hasEnd = rd.Byte() == 1
	st.endMax = rd.Varint()
}

// runVertex emits what the current RunEvent says of its run, whatever the
// run's outcome (DESIGN.md, "Graph model"): the Run vertex with the
// event's properties, Run -[RUN_OF]-> Job, Run -[READ]-> each input and
// Run -[WROTE]-> each output, stamped with the event's eventTime. None of
// these is lineage: a FAILed run gets them too, and never INPUT_TO,
// OUTPUTS or DERIVES.
func (s *Shard) runVertex(r *run, bucket int64) {
	ev := &s.ev
	t := ev.Time.UnixMilli()
	st := &r.rv
	if !st.hasStart || t < st.startMin {
		st.hasStart, st.startMin = true, t
	}
	if ev.Type.Terminal() && (!st.hasEnd || t > st.endMax) {
		st.hasEnd, st.endMax = true, t
	}
	if s.cfg.Runs == RunsNone {
		return
	}
	pin := r.pin
	if r.handoff {
		pin = s.prevFull
	}
	rv := lineage.RunVertex(r.id, RunEventProps(r.id, r.job, ev, st.startMin, st.endMax, st.hasEnd)...)
	w := s.windows
	w.touch(bucket, pin)
	tab := w.tab
	tab.AddVertex(bucket, rv)
	tab.AddVertex(bucket, lineage.Vertex{ID: r.jobID, Label: lineage.LabelJob, Namespace: r.job.Namespace, Name: r.job.Name})
	tab.AddEdge(bucket, lineage.EdgeRunOf, rv.ID, r.jobID, t, t, r.id)
	for _, set := range []struct {
		label string
		ds    []lineage.Dataset
	}{{lineage.EdgeRead, ev.Inputs}, {lineage.EdgeWrote, ev.Outputs}} {
		for _, d := range set.ds {
			id := s.ids.dataset(d)
			tab.AddVertex(bucket, lineage.Vertex{ID: id, Label: lineage.LabelDataset, Namespace: d.Namespace, Name: d.Name})
			tab.AddEdge(bucket, set.label, rv.ID, id, t, t, r.id)
		}
	}
}

// RunEventProps are the Run vertex properties one RunEvent ev of run runID
// (job j) gives, knowing the run's earliest eventTime startMin and, if
// hasEnd, its latest terminal eventTime endMax so far. The reference model
// computes the same from the whole stream.
func RunEventProps(runID string, j lineage.Job, ev *lineage.Event, startMin, endMax int64, hasEnd bool) []lineage.Prop {
	t := ev.Time.UnixMilli()
	ps := make([]lineage.Prop, 0, 11)
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
