package metrics

import (
	"strconv"
	"strings"
	"sync"

	"github.com/lineageflow/lineageflow/sink"
)

// UniqueRetentionMs is how long (in window time) the ids written in a
// window are remembered for lineage_sink_unique_writes_total: a batch of a
// window older than the newest window seen minus this is counted as new.
const UniqueRetentionMs = 10 * 60 * 1000

// uniqueWrites counts distinct idempotency keys (vertex and edge ids) per
// window over the acknowledged batches of every shard of the worker: a
// batch sent again (retry, replay after a restart, another shard sealing
// the same window) adds only the ids its window has not had yet. This is
// the write rate a canary and production compare (DESIGN.md, "Safe
// rollout"): it depends on what the graph must hold, not on how often it
// was asked.
type uniqueWrites struct {
	mu      sync.Mutex
	windows map[int64]*windowIDs
	newest  int64
	// Totals, read at scrape time.
	vertices, edges uint64
}

type windowIDs struct{ v, e map[string]struct{} }

// batchWindow returns the window start (ms) of a batch key as the
// processor sets it ("<shard>/<window start ms>/<outbox seq>"); 0 for
// other keys.
func batchWindow(key string) int64 {
	parts := strings.Split(key, "/")
	if len(parts) < 3 {
		return 0
	}
	w, err := strconv.ParseInt(parts[len(parts)-2], 10, 64)
	if err != nil {
		return 0
	}
	return w
}

func (u *uniqueWrites) add(b sink.Batch) {
	w := batchWindow(b.Key)
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.windows == nil {
		u.windows = map[int64]*windowIDs{}
	}
	if w > u.newest {
		u.newest = w
		for k := range u.windows {
			if k < u.newest-UniqueRetentionMs {
				delete(u.windows, k)
			}
		}
	}
	ids := u.windows[w]
	if ids == nil {
		ids = &windowIDs{v: map[string]struct{}{}, e: map[string]struct{}{}}
		u.windows[w] = ids
	}
	for i := range b.Vertices {
		if _, ok := ids.v[b.Vertices[i].ID]; !ok {
			ids.v[b.Vertices[i].ID] = struct{}{}
			u.vertices++
		}
	}
	for i := range b.Edges {
		if _, ok := ids.e[b.Edges[i].ID]; !ok {
			ids.e[b.Edges[i].ID] = struct{}{}
			u.edges++
		}
	}
}

func (u *uniqueWrites) totals() (vertices, edges uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.vertices, u.edges
}
