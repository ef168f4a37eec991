package semantics

import "github.com/lineageflow/lineageflow/lineage"

// Rules folds events into runs and writes what they mean. One per shard
// (it holds scratch buffers): not safe for concurrent use.
type Rules struct {
	cfg Config
	ids *IDs
	// colBuf is the current event's column lineage (eventCols), colMemo
	// that of recent facets.
	colBuf  []lineage.FieldEdge
	colMemo colMemo
	// fastProps, slowProps: scratch of facetProps (a facet's properties
	// by lane). propBuf, idBuf: scratch of runVertex.
	fastProps, slowProps []lineage.Prop
	propBuf              []lineage.Prop
	idBuf                []string
}

// NewRules returns the rules of cfg, naming vertices through ids.
func NewRules(cfg Config, ids *IDs) *Rules {
	return &Rules{cfg: cfg, ids: ids}
}

// Config returns the rules' configuration.
func (x *Rules) Config() Config { return x.cfg }

// Event writes what the valid, non-duplicate event ev means into window
// bucket (and the other windows em's lanes pick). r is ev's run for a
// RunEvent (the caller's copy, new or held, which Event updates) and nil
// for other kinds.
func (x *Rules) Event(ev *lineage.Event, r *Run, bucket int64, em Emitter) {
	switch ev.Kind {
	case lineage.KindDataset:
		if len(ev.Datasets) > 0 {
			em.Touch(bucket, FromRecord)
		}
		for _, d := range ev.Datasets {
			em.AddVertex(bucket, lineage.Vertex{ID: x.ids.Dataset(d), Label: lineage.LabelDataset, Namespace: d.Namespace, Name: d.Name})
		}
	case lineage.KindJob:
		x.jobEvent(ev, bucket, em)
	case lineage.KindRun:
		x.runEvent(ev, r, bucket, em)
		x.jobHealth(ev, r, bucket, em)
	}
	x.aliases(ev, bucket, em)
	x.parents(ev, bucket, em)
	x.dependencies(ev, bucket, em)
	x.facetProps(ev, bucket, em)
	x.lifecycle(ev, r, bucket, em)
}

// jobEvent: a JobEvent is design-time lineage, stamped with its own
// eventTime.
func (x *Rules) jobEvent(ev *lineage.Event, bucket int64, em Emitter) {
	t := ev.Time.UnixMilli()
	e := emission{bucket: bucket, from: FromRecord, job: ev.Job, jobID: x.ids.Job(ev.Job), first: t, last: t}
	ins := x.ids.Refs(ev.Inputs)
	outs := x.ids.Refs(ev.Outputs)
	var cols []ColRef
	for _, c := range x.eventCols(ev) {
		cols = append(cols, x.ids.Col(c, t))
	}
	var pairs []PairRef
	if ev.Explicit {
		pairs = make([]PairRef, 0, len(ev.Pairs))
		for _, p := range ev.Pairs {
			pairs = append(pairs, x.ids.Pair(p))
		}
	}
	x.emit(em, &e, ins, outs, 0, 0, cols, 0, lineageOf{ev.Explicit, pairs, 0})
}

// lineageOf is how an emission derives its outputs: the product of its
// inputs and outputs, or (explicit) the pairs[newPair:] named by
// explicit-lineage facets.
type lineageOf struct {
	explicit bool
	pairs    []PairRef
	newPair  int
}

// jobHealth writes the health properties RunEvent ev gives its run's job
// (DESIGN.md, Lineage semantics 14), whatever the run's outcome.
func (x *Rules) jobHealth(ev *lineage.Event, r *Run, bucket int64, em Emitter) {
	x.propBuf = lineage.HealthProps(x.propBuf[:0], ev.Type, ev.RunID, ev.Time.UnixMilli())
	if len(x.propBuf) == 0 {
		return
	}
	x.addProps(em, bucket, FromRecord, lineage.Vertex{ID: r.JobID, Label: lineage.LabelJob, Namespace: r.Job.Namespace, Name: r.Job.Name}, x.propBuf)
}

// runEvent folds RunEvent ev into its run r and emits the edges it makes
// true.
func (x *Rules) runEvent(ev *lineage.Event, r *Run, bucket int64, em Emitter) {
	x.runVertex(ev, r, bucket, em)
	if r.Status == StatusClosed {
		return
	}
	oldIn, oldOut, oldCols, oldPairs := len(r.Inputs), len(r.Outputs), len(r.Cols), len(r.Pairs)
	x.addEvent(r, ev, x.eventCols(ev), em)

	t := ev.Time.UnixMilli()
	strict := x.cfg.Policy == PolicyStrict
	stamps := ev.Type == lineage.TypeComplete || x.cfg.Policy == PolicyAny || r.Status == StatusStreaming
	changed := false
	if from := r.Status; from == StatusOpen || from == StatusStreaming {
		if strict && (ev.Type == lineage.TypeFail || ev.Type == lineage.TypeAbort) {
			// A streaming run's committed edges stay: it only stops.
			r.Status = StatusClosed
			r.Inputs, r.Outputs, r.inIdx, r.outIdx, r.Cols, r.colIdx, r.Pairs = nil, nil, nil, nil, nil, nil, nil
			em.Transition(r, from, StatusClosed)
			return
		}
		switch {
		case ev.Type == lineage.TypeComplete || x.cfg.Policy == PolicyAny:
			r.Status = StatusCommitted
		case from == StatusStreaming:
		case ev.StreamingJob():
			// Streaming from this event on: stamped with every event
			// so far (none was terminal).
			r.Status = StatusStreaming
			r.MinC, r.MaxC, r.HasC, changed = min(r.RV.StartMin, t), max(r.RV.TMax, t), true, true
		default:
			return
		}
		if r.Status != from {
			em.Transition(r, from, r.Status)
		}
	}
	if stamps {
		if !r.HasC {
			r.MinC, r.MaxC, r.HasC, changed = t, t, true, true
		} else {
			if t < r.MinC {
				r.MinC, changed = t, true
			}
			if t > r.MaxC {
				r.MaxC, changed = t, true
			}
		}
	}
	e := emission{bucket: bucket, from: FromRun, job: r.Job, jobID: r.JobID, first: r.MinC, last: r.MaxC, runID: r.ID}
	if changed || r.Reemit {
		r.Reemit = false
		x.emit(em, &e, r.Inputs, r.Outputs, 0, 0, r.Cols, 0, lineageOf{r.Explicit, r.Pairs, 0})
	} else {
		x.emit(em, &e, r.Inputs, r.Outputs, oldIn, oldOut, r.Cols, oldCols, lineageOf{r.Explicit, r.Pairs, oldPairs})
	}
}

// addEvent adds ev's datasets (and its column lineage pairs cols) to r
// within the run budget; datasets beyond it are counted and left out.
// Field pairs have a budget of their own of the same size.
func (x *Rules) addEvent(r *Run, ev *lineage.Event, cols []lineage.FieldEdge, em Emitter) {
	dropped := addAll(x.ids, &r.Inputs, &r.inIdx, ev.Inputs, x.cfg.runRoom(len(r.Inputs)+len(r.Outputs)))
	dropped += addAll(x.ids, &r.Outputs, &r.outIdx, ev.Outputs, x.cfg.runRoom(len(r.Inputs)+len(r.Outputs)))
	if dropped > 0 {
		em.Count(CountRunDatasetsDropped, int64(dropped))
	}
	if n := x.addCols(r, cols, x.cfg.runRoom(len(r.Cols)), ev.Time.UnixMilli()); n > 0 {
		em.Count(CountRunFieldsDropped, int64(n))
	}
	// Explicit lineage counts while the run is open (before it commits
	// or turns streaming, its DERIVES not yet written) or once it is
	// explicit; a committed run's product stays.
	if ev.Explicit && (r.Status == StatusOpen || r.Explicit) {
		r.Explicit = true
		dropped := 0
		for _, p := range ev.Pairs {
			pr := x.ids.Pair(p)
			if hasPair(r.Pairs, pr) {
				continue
			}
			if x.cfg.runRoom(len(r.Pairs)) <= 0 {
				dropped++
				continue
			}
			r.Pairs = append(r.Pairs, pr)
		}
		if dropped > 0 {
			em.Count(CountRunDatasetsDropped, int64(dropped))
		}
	}
}

// emission is one stamping of a set of edges into one window.
type emission struct {
	bucket      int64
	from        Origin
	job         lineage.Job
	jobID       string
	first, last int64
	runID       string
}

// emit writes the edges of (ins, outs) that involve an input at index >=
// newIn or an output at index >= newOut (0, 0: all of them): I -INPUT_TO->
// J, J -OUTPUTS-> O, I -DERIVES-> O (I != O), and their endpoint
// vertices; then the column lineage of cols[newCol:] (emitCols). Past
// MaxEmissionEdges edges the remaining DERIVES edges and field pairs are
// left out and counted.
func (x *Rules) emit(em Emitter, e *emission, ins, outs []DatasetRef, newIn, newOut int, cols []ColRef, newCol int, lin lineageOf) {
	if newIn >= len(ins) && newOut >= len(outs) && newCol >= len(cols) && lin.newPair >= len(lin.pairs) {
		return
	}
	em.Touch(e.bucket, e.from)
	em.AddVertex(e.bucket, lineage.Vertex{ID: e.jobID, Label: lineage.LabelJob, Namespace: e.job.Namespace, Name: e.job.Name})
	maxEdges := x.cfg.MaxEmissionEdges
	edges, dropped := 0, int64(0)
	for i := range ins {
		in := &ins[i]
		if i >= newIn {
			em.AddVertex(e.bucket, lineage.Vertex{ID: in.ID, Label: lineage.LabelDataset, Namespace: in.D.Namespace, Name: in.D.Name})
			em.AddEdge(e.bucket, lineage.EdgeInputTo, in.ID, e.jobID, e.first, e.last, e.runID)
			edges++
			em.MaySpill()
		}
	}
	for j := range outs {
		out := &outs[j]
		if j >= newOut {
			v := lineage.Vertex{ID: out.ID, Label: lineage.LabelDataset, Namespace: out.D.Namespace, Name: out.D.Name}
			em.AddVertex(e.bucket, v)
			em.AddEdge(e.bucket, lineage.EdgeOutputs, e.jobID, out.ID, e.first, e.last, e.runID)
			if e.runID != "" {
				x.propBuf = lineage.WriteProps(x.propBuf[:0], e.runID, e.last)
				x.addProps(em, e.bucket, e.from, v, x.propBuf)
			}
			edges++
			em.MaySpill()
		}
	}
	for k := lin.newPair; lin.explicit && k < len(lin.pairs); k++ {
		p := &lin.pairs[k]
		if p.In.ID == p.Out.ID {
			continue
		}
		if maxEdges > 0 && edges >= maxEdges {
			dropped++
			continue
		}
		em.AddVertex(e.bucket, lineage.Vertex{ID: p.In.ID, Label: lineage.LabelDataset, Namespace: p.In.D.Namespace, Name: p.In.D.Name})
		em.AddVertex(e.bucket, lineage.Vertex{ID: p.Out.ID, Label: lineage.LabelDataset, Namespace: p.Out.D.Namespace, Name: p.Out.D.Name})
		em.AddEdge(e.bucket, lineage.EdgeDerives, p.In.ID, p.Out.ID, e.first, e.last, e.runID)
		edges++
		em.MaySpill()
	}
	for i := range ins {
		if lin.explicit {
			break
		}
		for j := range outs {
			if (i >= newIn || j >= newOut) && ins[i].ID != outs[j].ID {
				if maxEdges > 0 && edges >= maxEdges {
					dropped++
					continue
				}
				em.AddEdge(e.bucket, lineage.EdgeDerives, ins[i].ID, outs[j].ID, e.first, e.last, e.runID)
				edges++
				em.MaySpill()
			}
		}
	}
	dropped += x.emitCols(em, e, cols, newCol, edges)
	if dropped > 0 {
		em.Count(CountEdgesDropped, dropped)
		em.Count(CountEmissionsTruncated, 1)
	}
}
