package sink

import (
	"context"

	"github.com/cespare/xxhash/v2"

	"github.com/lineageflow/lineageflow/lineage"
)

// writerOf returns the index of the writer that owns vertex id.
func (n *Neptune) writerOf(id string) int {
	return int(xxhash.Sum64String(id) % uint64(len(n.writers)))
}

// writeVertices sends vs (each id once; with useCache, only the ids the
// vertex cache does not know) to their writers, in requests of at most
// BatchRecords records and about MaxRequestBytes, and waits for them. The
// ids of acknowledged requests are added to the cache.
func (n *Neptune) writeVertices(ctx context.Context, vs []lineage.Vertex, useCache bool) error {
	parts := make([][]lineage.Vertex, len(n.writers))
	merged := make(map[string]lineage.Vertex, len(vs))
	order := make([]string, 0, len(vs))
	for _, v := range vs {
		if _, dup := merged[v.ID]; !dup {
			order = append(order, v.ID)
		}
		lineage.MergeVertexInto(merged, v)
	}
	for _, id := range order {
		v := merged[id]
		if useCache && n.cache != nil && n.cache.contains(v.ID, v.Props) {
			n.stats.cacheHits.Add(1)
			continue
		}
		w := n.writerOf(v.ID)
		parts[w] = append(parts[w], v)
	}
	var reqs [][]*request
	for w, p := range parts {
		for _, chunk := range chunkVertices(p, n.cfg.BatchRecords, n.cfg.MaxRequestBytes) {
			for len(reqs) <= w {
				reqs = append(reqs, nil)
			}
			reqs[w] = append(reqs[w], &request{ctx: ctx, vertices: chunk})
		}
	}
	return n.dispatch(ctx, reqs, func(r *request) {
		if n.cache != nil {
			for _, v := range r.vertices {
				n.cache.add(v.ID, v.Props)
			}
		}
	})
}

// writeEdges sends es to the writers of their out-vertices, in requests
// of at most BatchRecords records and about MaxRequestBytes, and waits
// for them.
func (n *Neptune) writeEdges(ctx context.Context, es []lineage.Edge) error {
	parts := make([][]lineage.Edge, len(n.writers))
	for _, e := range es {
		w := n.writerOf(e.OutV)
		parts[w] = append(parts[w], e)
	}
	reqs := make([][]*request, len(n.writers))
	for w, p := range parts {
		for _, chunk := range chunkEdges(p, n.cfg.BatchRecords, n.cfg.MaxRequestBytes) {
			reqs[w] = append(reqs[w], &request{ctx: ctx, edges: chunk})
		}
	}
	return n.dispatch(ctx, reqs, nil)
}

// dispatch queues reqs[w] on writer w, in order, and waits for every
// reply. ok runs for each acknowledged request. It returns the first
// error; unless the sink is closing (then it returns [ErrClosed] at once),
// it waits for the replies of all the requests it queued (writers skip
// the requests of a cancelled ctx), so no part of a failed batch is still
// being written when WriteBatch returns.
func (n *Neptune) dispatch(ctx context.Context, reqs [][]*request, ok func(*request)) error {
	total := 0
	for _, rs := range reqs {
		total += len(rs)
	}
	if total == 0 {
		return nil
	}
	done := make(chan result, total)
	// One feeder per writer keeps each writer's parts in order while a
	// full queue of one writer does not hold back the others.
	sent := make(chan int, len(reqs))
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w, rs := range reqs {
		if len(rs) == 0 {
			sent <- 0
			continue
		}
		go func(w int, rs []*request) {
			k := 0
			for _, r := range rs {
				r.ctx = fctx
				r.done = done
				select {
				case n.writers[w].queue <- r:
					k++
				case <-fctx.Done():
					sent <- k
					return
				case <-n.quit:
					sent <- k
					return
				}
			}
			sent <- k
		}(w, rs)
	}
	queued := 0
	for range reqs {
		queued += <-sent
	}
	var first error
	if queued < total {
		first = ctx.Err()
		if first == nil {
			first = ErrClosed
		}
	}
	for i := 0; i < queued; i++ {
		var r result
		select {
		case r = <-done:
		case <-n.quit:
			return ErrClosed
		}
		if r.err != nil {
			if first == nil {
				first = r.err
				cancel() // writers skip the rest of this batch
			}
			continue
		}
		if ok != nil {
			ok(r.req)
		}
	}
	return first
}
