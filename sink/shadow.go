package sink

import (
	"context"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"

	"github.com/lineageflow/lineageflow/lineage"
)

// Shadow is the writer of shadow mode (`run -sink shadow`): it computes
// what [Neptune] would send for each batch (each vertex once per batch,
// with its properties merged as Neptune merges them; vertices the vertex
// cache knows with the same properties left out, as Neptune leaves them
// out; vertices and edges partitioned over the writers by the same hash,
// cut into requests of at most BatchRecords records and about
// MaxRequestBytes) and counts it, but writes nothing and acknowledges at
// once (so every vertex counted enters its own vertex cache, as an
// acknowledged one enters Neptune's). The cross-batch merge of concurrent
// requests (coalesce.go) depends on timing and is not simulated: with
// batches written one at a time Neptune merges nothing and the counts are
// equal; with concurrent batches the shadow's Records exceed Neptune's by
// Neptune's Coalesced. Safe for concurrent use.
type Shadow struct {
	writers, batchRecords, maxBytes int
	cache                           *vertexCache // nil: cache off

	batches, requests, records, cacheHits atomic.Uint64
}

// NewShadow returns a shadow writer sized like a Neptune sink of cfg
// (only Writers, BatchRecords and MaxRequestBytes are read; zero: the
// defaults).
func NewShadow(cfg Config) *Shadow {
	cfg = cfg.WithDefaults()
	s := &Shadow{writers: cfg.Writers, batchRecords: cfg.BatchRecords, maxBytes: cfg.MaxRequestBytes}
	if cfg.VertexCacheSize > 0 {
		s.cache = newVertexCache(cfg.VertexCacheSize)
	}
	return s
}

// WriteBatch counts the requests b would take and acknowledges it.
func (s *Shadow) WriteBatch(ctx context.Context, b Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	vparts := make([][]lineage.Vertex, s.writers)
	merged := make(map[string]lineage.Vertex, len(b.Vertices))
	order := make([]string, 0, len(b.Vertices))
	for _, v := range b.Vertices {
		if _, dup := merged[v.ID]; !dup {
			order = append(order, v.ID)
		}
		lineage.MergeVertexInto(merged, v)
	}
	var hits uint64
	for _, id := range order {
		v := merged[id]
		if s.cache != nil && s.cache.contains(v.ID, v.Props) {
			hits++
			continue
		}
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
	if s.cache != nil {
		for _, p := range vparts {
			for _, v := range p {
				s.cache.add(v.ID, v.Props)
			}
		}
	}
	s.batches.Add(1)
	s.requests.Add(reqs)
	s.records.Add(recs)
	s.cacheHits.Add(hits)
	return nil
}

func (s *Shadow) writerOf(id string) int { return int(xxhash.Sum64String(id) % uint64(s.writers)) }

// Stats returns what would have been sent: Batches, Requests, Records,
// CacheHits (no failures, retries or merges).
func (s *Shadow) Stats() Stats {
	return Stats{Batches: s.batches.Load(), Requests: s.requests.Load(), Records: s.records.Load(),
		CacheHits: s.cacheHits.Load(), Retries: map[Code]uint64{}}
}

// Close does nothing.
func (s *Shadow) Close(context.Context) error { return nil }
