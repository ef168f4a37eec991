package sink

import (
	"context"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"

	"github.com/lineageflow/lineageflow/lineage"
)

// Shadow is the writer of shadow mode (`run -sink shadow`): it computes
// what [Neptune] would send for each batch (each vertex once per batch,
// vertices and edges partitioned over the writers by the same hash, cut
// into requests of at most BatchRecords records and about
// MaxRequestBytes) and counts it, but writes nothing and acknowledges at
// once. The vertex cache and the cross-shard merge are not simulated, so
// its Records are what Neptune would send without them (an upper bound).
// Safe for concurrent use.
type Shadow struct {
	writers, batchRecords, maxBytes int

	batches, requests, records atomic.Uint64
}

// NewShadow returns a shadow writer sized like a Neptune sink of cfg
// (only Writers, BatchRecords and MaxRequestBytes are read; zero: the
// defaults).
func NewShadow(cfg Config) *Shadow {
	cfg = cfg.WithDefaults()
	return &Shadow{writers: cfg.Writers, batchRecords: cfg.BatchRecords, maxBytes: cfg.MaxRequestBytes}
}

// WriteBatch counts the requests b would take and acknowledges it.
func (s *Shadow) WriteBatch(ctx context.Context, b Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	vparts := make([][]lineage.Vertex, s.writers)
	seen := make(map[string]struct{}, len(b.Vertices))
	for _, v := range b.Vertices {
		if _, dup := seen[v.ID]; dup {
			continue
		}
		seen[v.ID] = struct{}{}
		w := s.writerOf(v.ID)
		vparts[w] = append(vparts[w], v)
	}
	eparts := make([][]lineage.Edge, s.writers)
	for _, e := range b.Edges {
		w := s.writerOf(e.OutV)
		eparts[w] = append(eparts[w], e)
	}
	var reqs, recs uint64
	for w := range s.writers {
		for _, c := range chunkVertices(vparts[w], s.batchRecords, s.maxBytes) {
			reqs++
			recs += uint64(len(c))
		}
		for _, c := range chunkEdges(eparts[w], s.batchRecords, s.maxBytes) {
			reqs++
			recs += uint64(len(c))
		}
	}
	s.batches.Add(1)
	s.requests.Add(reqs)
	s.records.Add(recs)
	return nil
}

func (s *Shadow) writerOf(id string) int { return int(xxhash.Sum64String(id) % uint64(s.writers)) }

// Stats returns what would have been sent: Batches, Requests, Records
// (no failures, retries, cache hits or merges).
func (s *Shadow) Stats() Stats {
	return Stats{Batches: s.batches.Load(), Requests: s.requests.Load(), Records: s.records.Load(), Retries: map[Code]uint64{}}
}

// Close does nothing.
func (s *Shadow) Close(context.Context) error { return nil }
