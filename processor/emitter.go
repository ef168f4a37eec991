package processor

import (
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
)

// shardEmitter is where semantics.Rules writes a shard's events: the
// window table, each contribution pinned here (the rules keep no pin).
// It knows the event's record (the shard's prevFull) and run (cur).
type shardEmitter struct {
	s   *Shard
	w   *windowTable
	cur *run // the current RunEvent's run; nil for other kinds
}

// Touch pins bucket for a contribution: a record's own contributions
// replay from that record (prevFull); a run's emissions from the run's
// pin unless it holds none (runTable.emitPin).
func (e *shardEmitter) Touch(bucket int64, o semantics.Origin) {
	pin := e.s.prevFull
	if o == semantics.FromRun && e.cur != nil {
		pin = e.s.runs.emitPin(e.cur, pin)
	}
	e.w.touch(bucket, pin)
}

func (e *shardEmitter) AddVertex(bucket int64, v lineage.Vertex) { e.w.tab.AddVertex(bucket, v) }

func (e *shardEmitter) AddVertexProps(bucket int64, v lineage.Vertex, ps []lineage.Prop) {
	e.w.tab.AddVertexProps(bucket, v, ps)
}

func (e *shardEmitter) AddEdge(bucket int64, label, out, in string, first, last int64, runID string) {
	e.w.tab.AddEdge(bucket, label, out, in, first, last, runID)
}

func (e *shardEmitter) AddEdgeProps(bucket int64, label, out, in string, first, last int64, runID string, ps lineage.Props) {
	e.w.tab.AddEdgeProps(bucket, label, out, in, first, last, runID, ps)
}

func (e *shardEmitter) EdgeLane(bucket int64, label, out, in string) int64 {
	return e.w.edgeLane(bucket, label, out, in)
}

func (e *shardEmitter) EdgePropsLane(bucket int64, label, out, in string, ps lineage.Props) int64 {
	return e.w.edgePropsLane(bucket, label, out, in, ps)
}

func (e *shardEmitter) PropLane(bucket int64, id string, p lineage.Prop) int64 {
	if e.w.refreshMs == 0 {
		return bucket
	}
	return e.w.propLane(bucket, id, p)
}

func (e *shardEmitter) MaySpill() { e.w.spillIfFull() }

// Transition moves the current run's pin with its status: an open run
// that ends releases its pin; a streaming run's pin follows its latest
// record.
func (e *shardEmitter) Transition(_ *semantics.Run, from, to semantics.Status) {
	if from == semantics.StatusOpen {
		e.s.runs.release(e.cur)
	}
	if to == semantics.StatusStreaming {
		e.cur.pin = e.s.prevFull
	}
}

func (e *shardEmitter) Count(c semantics.Counter, n int64) {
	b := &e.s.st.Budget
	switch c {
	case semantics.CountRunDatasetsDropped:
		b.RunDatasetsDropped.Add(n)
	case semantics.CountRunFieldsDropped:
		b.RunFieldsDropped.Add(n)
	case semantics.CountEdgesDropped:
		b.EdgesDropped.Add(n)
	case semantics.CountEmissionsTruncated:
		b.EmissionsTruncated.Add(n)
	case semantics.CountFacetPropsCapped:
		b.FacetPropsCapped.Add(n)
	}
}
