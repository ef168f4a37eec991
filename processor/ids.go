package processor

import "github.com/lineageflow/lineageflow/lineage"

// vertexIDs memoizes the vertex ids of datasets and jobs (hashing names is
// a measurable share of a record's cost), for the shard and its run table.
type vertexIDs struct {
	datasets map[lineage.Dataset]string
	jobs     map[lineage.Job]string
}

func newVertexIDs() *vertexIDs {
	return &vertexIDs{datasets: map[lineage.Dataset]string{}, jobs: map[lineage.Job]string{}}
}

func (m *vertexIDs) dataset(d lineage.Dataset) string {
	return memoID(m.datasets, d, lineage.DatasetID)
}

func (m *vertexIDs) job(j lineage.Job) string { return memoID(m.jobs, j, lineage.JobID) }

// refs returns the datasets of ds with their vertex ids.
func (m *vertexIDs) refs(ds []lineage.Dataset) []dsRef {
	out := make([]dsRef, len(ds))
	for i, d := range ds {
		out[i] = dsRef{d: d, id: m.dataset(d)}
	}
	return out
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
