package processor

import "github.com/lineageflow/lineageflow/lineage"

// aliases emits the symlinks of the current event's datasets: for each, a
// DatasetAlias vertex and DatasetAlias -[ALIAS_OF]-> Dataset, stamped with
// the eventTime and the run id ("" for JobEvents and DatasetEvents). They
// are identity, not lineage: every valid event gives them, whatever its
// run's outcome.
func (s *Shard) aliases(bucket int64) {
	ev := &s.ev
	if len(ev.Aliases) == 0 {
		return
	}
	t := ev.Time.UnixMilli()
	w := s.windows
	for _, a := range ev.Aliases {
		av := lineage.AliasVertex(a)
		id := s.ids.dataset(a.Of)
		b := w.edgeLane(bucket, lineage.EdgeAliasOf, av.ID, id)
		w.touch(b, s.prevFull)
		w.tab.AddVertex(b, av)
		w.tab.AddVertex(b, lineage.Vertex{ID: id, Label: lineage.LabelDataset, Namespace: a.Of.Namespace, Name: a.Of.Name})
		w.tab.AddEdge(b, lineage.EdgeAliasOf, av.ID, id, t, t, ev.RunID)
	}
}

// lifecycle records the outputs' lifecycle state changes of a committing
// event (a COMPLETE RunEvent; every RunEvent under policy any; an event of
// a streaming run before its first terminal event) on their
// Dataset vertices: lifecycleState (last writer wins) and, for a DROP,
// droppedAt. A dropped output is not an output (the decoder left it out
// of Outputs): no OUTPUTS, DERIVES or WROTE for it.
func (s *Shard) lifecycle(bucket int64) {
	ev := &s.ev
	if len(ev.Lifecycle) == 0 || ev.Kind != lineage.KindRun {
		return
	}
	if ev.Type != lineage.TypeComplete && s.cfg.Policy != PolicyAny {
		// An event of a streaming run commits too (runEvent ran first).
		if r := s.runs.m[ev.RunID]; r == nil || r.status != runStreaming {
			return
		}
	}
	t := ev.Time.UnixMilli()
	w := s.windows
	w.touch(bucket, s.prevFull)
	for _, l := range ev.Lifecycle {
		v := lineage.DatasetVertex(l.Dataset)
		v.ID = s.ids.dataset(l.Dataset)
		v.Props = lineage.MakeProps(lineage.LifecycleProps(l, t)...)
		w.tab.AddVertex(bucket, v)
	}
}

// facetProps writes the facet properties of the current event's datasets
// and job on their vertices (last writer wins by eventTime): every valid
// event that carries such a facet, whatever its run's outcome. An event
// without one writes none (a facet property changes the vertex's
// properties, so the sink's vertex cache would miss it). With the refresh
// lane, a property whose value the shard saw last for the vertex (only
// its stamp newer) goes to the refresh window.
func (s *Shard) facetProps(bucket int64) {
	ev := &s.ev
	if len(ev.Facets) == 0 {
		return
	}
	w := s.windows
	for i := range ev.Facets {
		f := &ev.Facets[i]
		if f.Capped > 0 {
			s.st.Budget.FacetPropsCapped.Add(int64(f.Capped))
		}
		if len(f.Props) == 0 {
			continue
		}
		v := lineage.Vertex{Label: f.Label, Namespace: f.Namespace, Name: f.Name}
		if f.Label == lineage.LabelJob {
			v.ID = s.ids.job(lineage.Job{Namespace: f.Namespace, Name: f.Name})
		} else {
			v.ID = s.ids.dataset(lineage.Dataset{Namespace: f.Namespace, Name: f.Name})
		}
		if w.refreshMs == 0 {
			w.touch(bucket, s.prevFull)
			w.tab.AddVertexProps(bucket, v, f.Props)
			continue
		}
		// Each property by its own content: another producer's facets
		// of the same dataset may carry other keys.
		s.fastProps, s.slowProps = s.fastProps[:0], s.slowProps[:0]
		for _, p := range f.Props {
			if w.propLane(bucket, v.ID, p) == bucket {
				s.fastProps = append(s.fastProps, p)
			} else {
				s.slowProps = append(s.slowProps, p)
			}
		}
		for _, l := range [2]struct {
			b  int64
			ps []lineage.Prop
		}{{bucket, s.fastProps}, {w.refreshBucket(bucket), s.slowProps}} {
			if len(l.ps) > 0 {
				w.touch(l.b, s.prevFull)
				w.tab.AddVertexProps(l.b, v, l.ps)
			}
		}
	}
}
