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
	w.touch(bucket, s.prevFull)
	for _, a := range ev.Aliases {
		av := lineage.AliasVertex(a)
		id := s.ids.dataset(a.Of)
		w.tab.AddVertex(bucket, av)
		w.tab.AddVertex(bucket, lineage.Vertex{ID: id, Label: lineage.LabelDataset, Namespace: a.Of.Namespace, Name: a.Of.Name})
		w.tab.AddEdge(bucket, lineage.EdgeAliasOf, av.ID, id, t, t, ev.RunID)
	}
}

// lifecycle records the outputs' lifecycle state changes of a committing
// event (a COMPLETE RunEvent; every RunEvent under policy any) on their
// Dataset vertices: lifecycleState (last writer wins) and, for a DROP,
// droppedAt. A dropped output is not an output (the decoder left it out
// of Outputs): no OUTPUTS, DERIVES or WROTE for it.
func (s *Shard) lifecycle(bucket int64) {
	ev := &s.ev
	if len(ev.Lifecycle) == 0 || ev.Kind != lineage.KindRun ||
		ev.Type != lineage.TypeComplete && s.cfg.Policy != PolicyAny {
		return
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
