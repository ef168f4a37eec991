package semantics

import "github.com/lineageflow/lineageflow/lineage"

// aliases writes the symlinks of ev's datasets: for each, a DatasetAlias
// vertex and DatasetAlias -[ALIAS_OF]-> Dataset, stamped with the
// eventTime and the run id ("" for JobEvents and DatasetEvents). They are
// identity, not lineage: every valid event gives them, whatever its run's
// outcome.
func (x *Rules) aliases(ev *lineage.Event, bucket int64, em Emitter) {
	if len(ev.Aliases) == 0 {
		return
	}
	t := ev.Time.UnixMilli()
	for _, a := range ev.Aliases {
		av := lineage.AliasVertex(a)
		id := x.ids.Dataset(a.Of)
		b := em.EdgeLane(bucket, lineage.EdgeAliasOf, av.ID, id)
		em.Touch(b, FromRecord)
		em.AddVertex(b, av)
		em.AddVertex(b, lineage.Vertex{ID: id, Label: lineage.LabelDataset, Namespace: a.Of.Namespace, Name: a.Of.Name})
		em.AddEdge(b, lineage.EdgeAliasOf, av.ID, id, t, t, ev.RunID)
	}
}

// dependencies writes the jobDependencies run facet of a RunEvent (every
// outcome: structure, not lineage; DESIGN.md Lineage semantics 9):
// Job -[DEPENDS_ON]-> each upstream job, each downstream job
// -[DEPENDS_ON]-> Job, stamped with the eventTime and the run; none to
// itself.
func (x *Rules) dependencies(ev *lineage.Event, bucket int64, em Emitter) {
	if ev.Kind != lineage.KindRun {
		return
	}
	t := ev.Time.UnixMilli()
	edge := func(from, to lineage.Job) {
		if from == to {
			return
		}
		f, g := x.ids.Job(from), x.ids.Job(to)
		b := em.EdgeLane(bucket, lineage.EdgeDependsOn, f, g)
		em.Touch(b, FromRecord)
		em.AddVertex(b, lineage.Vertex{ID: f, Label: lineage.LabelJob, Namespace: from.Namespace, Name: from.Name})
		em.AddVertex(b, lineage.Vertex{ID: g, Label: lineage.LabelJob, Namespace: to.Namespace, Name: to.Name})
		em.AddEdge(b, lineage.EdgeDependsOn, f, g, t, t, ev.RunID)
	}
	for _, u := range ev.Upstream {
		edge(ev.Job, u)
	}
	for _, d := range ev.Downstream {
		edge(d, ev.Job)
	}
}

// parents writes the hierarchy a RunEvent's parent run facet gives: its
// Job -[CHILD_OF]-> the parent's Job (both Job vertices), so a job that
// names no dataset still shows under its parent, stamped with the
// eventTime and the (child) run id. It is structure, not lineage: every
// valid RunEvent gives it, whatever its run's outcome. A parent naming the
// event's own job gives no edge. The parent run is a property of the
// child's Run vertex (parentRunId, runVertex), not an edge.
func (x *Rules) parents(ev *lineage.Event, bucket int64, em Emitter) {
	p := ev.Parent
	if ev.Kind != lineage.KindRun || p == nil || p.Job == ev.Job {
		return
	}
	t := ev.Time.UnixMilli()
	child, parent := x.ids.Job(ev.Job), x.ids.Job(p.Job)
	b := em.EdgeLane(bucket, lineage.EdgeChildOf, child, parent)
	em.Touch(b, FromRecord)
	em.AddVertex(b, lineage.Vertex{ID: child, Label: lineage.LabelJob, Namespace: ev.Job.Namespace, Name: ev.Job.Name})
	em.AddVertex(b, lineage.Vertex{ID: parent, Label: lineage.LabelJob, Namespace: p.Job.Namespace, Name: p.Job.Name})
	em.AddEdge(b, lineage.EdgeChildOf, child, parent, t, t, ev.RunID)
}

// facetProps writes the facet properties of ev's datasets and job on
// their vertices (last writer wins by eventTime): every valid event that
// carries such a facet, whatever its run's outcome. An event without one
// writes none (a facet property changes the vertex's properties, so the
// sink's vertex cache would miss it). Each property goes to the lane
// em.PropLane picks for it.
func (x *Rules) facetProps(ev *lineage.Event, bucket int64, em Emitter) {
	for i := range ev.Facets {
		f := &ev.Facets[i]
		if f.Capped > 0 {
			em.Count(CountFacetPropsCapped, int64(f.Capped))
		}
		if len(f.Props) == 0 {
			continue
		}
		v := lineage.Vertex{Label: f.Label, Namespace: f.Namespace, Name: f.Name}
		if f.Label == lineage.LabelJob {
			v.ID = x.ids.Job(lineage.Job{Namespace: f.Namespace, Name: f.Name})
		} else {
			v.ID = x.ids.Dataset(lineage.Dataset{Namespace: f.Namespace, Name: f.Name})
		}
		x.addProps(em, bucket, FromRecord, v, f.Props)
	}
}

// addProps writes properties ps of vertex v (a contribution of origin
// from), each into the window its
// lane picks (bucket, or the refresh lane).
func (x *Rules) addProps(em Emitter, bucket int64, from Origin, v lineage.Vertex, ps []lineage.Prop) {
	// Each property by its own content: another producer's facets
	// of the same dataset may carry other keys.
	// Without a property in another lane (the common case) ps goes as
	// it is; else fastProps holds those that stay in bucket.
	x.slowProps = x.slowProps[:0]
	fastPs, slow := ps, bucket
	for k, p := range ps {
		if b := em.PropLane(bucket, v.ID, p); b != bucket {
			if len(x.slowProps) == 0 {
				x.fastProps = append(x.fastProps[:0], ps[:k]...)
			}
			slow = b
			x.slowProps = append(x.slowProps, p)
		} else if len(x.slowProps) > 0 {
			x.fastProps = append(x.fastProps, p)
		}
	}
	if len(x.slowProps) > 0 {
		fastPs = x.fastProps
	}
	for _, l := range [2]struct {
		b  int64
		ps []lineage.Prop
	}{{bucket, fastPs}, {slow, x.slowProps}} {
		if len(l.ps) > 0 {
			em.Touch(l.b, from)
			em.AddVertexProps(l.b, v, l.ps)
		}
	}
}

// lifecycle records the outputs' lifecycle state changes of a committing
// event (a COMPLETE RunEvent; every RunEvent under policy any; an event of
// a streaming run before its first terminal event) on their Dataset
// vertices: lifecycleState (last writer wins) and, for a DROP, droppedAt.
// A dropped output is not an output (the decoder left it out of
// Outputs): no OUTPUTS, DERIVES or WROTE for it. r is ev's run after ev.
func (x *Rules) lifecycle(ev *lineage.Event, r *Run, bucket int64, em Emitter) {
	if len(ev.Lifecycle) == 0 || ev.Kind != lineage.KindRun {
		return
	}
	if ev.Type != lineage.TypeComplete && x.cfg.Policy != PolicyAny {
		// An event of a streaming run commits too.
		if r == nil || r.Status != StatusStreaming {
			return
		}
	}
	t := ev.Time.UnixMilli()
	em.Touch(bucket, FromRecord)
	for _, l := range ev.Lifecycle {
		v := lineage.DatasetVertex(l.Dataset)
		v.ID = x.ids.Dataset(l.Dataset)
		v.Props = lineage.MakeProps(lineage.LifecycleProps(l, t)...)
		em.AddVertex(bucket, v)
	}
}
