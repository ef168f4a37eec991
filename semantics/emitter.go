package semantics

import "github.com/lineageflow/lineageflow/lineage"

// Origin says what a window contribution replays from, so the caller can
// pin it: the current record, or the current run (whose earlier records
// the contribution folds).
type Origin uint8

const (
	// FromRecord: replays from the current record alone.
	FromRecord Origin = iota
	// FromRun: an emission of the current run's accumulated state.
	FromRun
)

// Counter names a figure the rules count (budgets).
type Counter uint8

const (
	// CountRunDatasetsDropped: datasets not added to a run at MaxRunDatasets.
	CountRunDatasetsDropped Counter = iota
	// CountRunFieldsDropped: column pairs not added to a run at its budget.
	CountRunFieldsDropped
	// CountEdgesDropped: edges (DERIVES, column pairs) left out of an
	// emission at MaxEmissionEdges.
	CountEdgesDropped
	// CountEmissionsTruncated: emissions that left edges out.
	CountEmissionsTruncated
	// CountFacetPropsCapped: facet properties the decoder left out.
	CountFacetPropsCapped
)

// Emitter receives what an event means: the shard's open windows. Every
// write to a bucket follows a Touch of that bucket by the same event.
// Implementations must not retain the slices they are given.
type Emitter interface {
	// Touch opens window bucket (or keeps it open) for a contribution of
	// origin o of the current event.
	Touch(bucket int64, o Origin)
	AddVertex(bucket int64, v lineage.Vertex)
	AddVertexProps(bucket int64, v lineage.Vertex, ps []lineage.Prop)
	AddEdge(bucket int64, label, out, in string, first, last int64, runID string)
	AddEdgeProps(bucket int64, label, out, in string, first, last int64, runID string, ps lineage.Props)

	// EdgeLane, EdgePropsLane and PropLane return the bucket an edge
	// (with properties ps), or property p of vertex id, goes to: bucket,
	// or another window of the caller's choosing (the refresh lane).
	EdgeLane(bucket int64, label, out, in string) int64
	EdgePropsLane(bucket int64, label, out, in string, ps lineage.Props) int64
	PropLane(bucket int64, id string, p lineage.Prop) int64

	// MaySpill marks a point inside a long emission where the caller may
	// move its buffered writes elsewhere to bound memory.
	MaySpill()
	// Transition says the current run r changed status from -> to (it
	// has changed already when called).
	Transition(r *Run, from, to Status)
	// Count adds n to counter c.
	Count(c Counter, n int64)
}
