package semantics

import "github.com/lineageflow/lineageflow/lineage"

// IDs memoizes the vertex ids of datasets and jobs (hashing names is a
// measurable share of a record's cost), for the rules and for whoever
// decodes stored runs. Not safe for concurrent use.
type IDs struct {
	datasets map[lineage.Dataset]string
	jobs     map[lineage.Job]string
}

// NewIDs returns an empty memo.
func NewIDs() *IDs {
	return &IDs{datasets: map[lineage.Dataset]string{}, jobs: map[lineage.Job]string{}}
}

// Dataset returns lineage.DatasetID(d).
func (m *IDs) Dataset(d lineage.Dataset) string {
	return memoID(m.datasets, d, lineage.DatasetID)
}

// Job returns lineage.JobID(j).
func (m *IDs) Job(j lineage.Job) string { return memoID(m.jobs, j, lineage.JobID) }

// Ref returns d with its vertex id.
func (m *IDs) Ref(d lineage.Dataset) DatasetRef { return DatasetRef{D: d, ID: m.Dataset(d)} }

// Refs returns the datasets of ds with their vertex ids.
func (m *IDs) Refs(ds []lineage.Dataset) []DatasetRef {
	out := make([]DatasetRef, len(ds))
	for i, d := range ds {
		out[i] = DatasetRef{D: d, ID: m.Dataset(d)}
	}
	return out
}

// Col returns field pair e with its vertex ids and its properties stamped
// t (lineage.FieldEdge.Props).
func (m *IDs) Col(e lineage.FieldEdge, t int64) ColRef {
	return ColRef{E: e, InDS: m.Dataset(e.In), OutDS: m.Dataset(e.Out),
		InF: lineage.DatasetFieldID(e.In, e.InField), OutF: lineage.DatasetFieldID(e.Out, e.OutField), Props: e.Props(t)}
}

// memoID returns the vertex id of k from memo, computing and remembering it
// on a miss; the memo is emptied beyond 1M names so it stays bounded.
func memoID[K comparable](memo map[K]string, k K, id func(K) string) string {
	if v, ok := memo[k]; ok {
		return v
	}
	if len(memo) > 1<<20 {
		clear(memo)
	}
	v := id(k)
	memo[k] = v
	return v
}

// DatasetRef is a dataset with its vertex id.
type DatasetRef struct {
	D  lineage.Dataset
	ID string
}

// PairRef is one explicit-lineage pair (lineage.DatasetPair) with its
// vertex ids.
type PairRef struct {
	In, Out DatasetRef
}

// Pair returns p with its vertex ids.
func (m *IDs) Pair(p lineage.DatasetPair) PairRef {
	return PairRef{In: m.Ref(p.In), Out: m.Ref(p.Out)}
}

// ColRef is one input field -> output field pair of a run (or JobEvent)
// with the vertex ids it needs.
type ColRef struct {
	E           lineage.FieldEdge
	InDS, OutDS string // dataset vertex ids
	InF, OutF   string // DatasetField vertex ids
	// Props are the COLUMN_DERIVES properties, stamped with the eventTime
	// of the run's first event naming the pair (lineage.FieldEdge.Props).
	Props lineage.Props
}
