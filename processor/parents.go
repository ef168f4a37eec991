package processor

import "github.com/lineageflow/lineageflow/lineage"

// parents emits the hierarchy the current RunEvent's parent run facet
// gives: its Job -[CHILD_OF]-> the parent's Job (both Job vertices), so a
// job that names no dataset still shows under its parent; and, with -runs
// all, its Run -[CHILD_OF]-> the parent's Run (-runs failed: see
// failedRunVertex) (the parent's Run vertex
// with its runId only: every run has a Run vertex in that mode, and the
// parent's own events fill in the rest). Both are stamped with the
// eventTime and the (child) run id. They are structure, not lineage:
// every valid RunEvent gives them, whatever its run's outcome. A parent
// naming the event's own job (or run) gives no edge. With the refresh
// lane, a Job CHILD_OF the shard saw already goes to the refresh window.
func (s *Shard) parents(bucket int64) {
	ev := &s.ev
	p := ev.Parent
	if ev.Kind != lineage.KindRun || p == nil {
		return
	}
	jobEdge := p.Job != ev.Job
	runEdge := s.cfg.Runs == RunsAll && p.RunID != ev.RunID
	if !jobEdge && !runEdge {
		return
	}
	t := ev.Time.UnixMilli()
	w := s.windows
	if runEdge {
		w.touch(bucket, s.prevFull)
	}
	if jobEdge {
		child, parent := s.ids.job(ev.Job), s.ids.job(p.Job)
		b := w.edgeLane(bucket, lineage.EdgeChildOf, child, parent)
		w.touch(b, s.prevFull)
		w.tab.AddVertex(b, lineage.Vertex{ID: child, Label: lineage.LabelJob, Namespace: ev.Job.Namespace, Name: ev.Job.Name})
		w.tab.AddVertex(b, lineage.Vertex{ID: parent, Label: lineage.LabelJob, Namespace: p.Job.Namespace, Name: p.Job.Name})
		w.tab.AddEdge(b, lineage.EdgeChildOf, child, parent, t, t, ev.RunID)
	}
	if runEdge {
		// The child's Run vertex is in the window already (runVertex).
		pv := lineage.RunVertex(p.RunID, lineage.StrConst(lineage.PropRunID, p.RunID))
		w.tab.AddVertex(bucket, pv)
		w.tab.AddEdge(bucket, lineage.EdgeChildOf, lineage.RunVertexID(ev.RunID), pv.ID, t, t, ev.RunID)
	}
}
