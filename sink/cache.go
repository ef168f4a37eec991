package sink

import (
	"container/list"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/lineageflow/lineageflow/lineage"
)

// vertexCache remembers the ids of vertices the graph acknowledged, with
// a hash of the properties acknowledged with them, so later batches need
// not send their mergeV again when they carry the same properties (a
// vertex whose facets did not change is not rewritten). It is an LRU bounded to
// size ids. Only acknowledged writes are added; an edge that finds an
// endpoint missing removes the batch's ids (see [Neptune.WriteBatch]).
// Safe for concurrent use.
type vertexCache struct {
	size int
	mu   struct {
		sync.Mutex
		order *list.List               // front = most recent
		ids   map[string]*list.Element // id -> element holding a cacheEntry
	}
}

func newVertexCache(size int) *vertexCache {
	c := &vertexCache{size: size}
	c.mu.order = list.New()
	c.mu.ids = make(map[string]*list.Element, min(size, 1<<16))
	return c
}

type cacheEntry struct {
	id    string
	props uint64 // xxhash of the acknowledged lineage.Props (0: none)
}

func propsHash(p lineage.Props) uint64 {
	if p == "" {
		return 0
	}
	return xxhash.Sum64String(string(p))
}

// contains reports whether vertex id was acknowledged with properties p.
func (c *vertexCache) contains(id string, p lineage.Props) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.mu.ids[id]
	if ok {
		c.mu.order.MoveToFront(e)
		return e.Value.(*cacheEntry).props == propsHash(p)
	}
	return false
}

// add records that vertex id was acknowledged with properties p.
func (c *vertexCache) add(id string, p lineage.Props) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.ids[id]; ok {
		c.mu.order.MoveToFront(e)
		e.Value.(*cacheEntry).props = propsHash(p)
		return
	}
	c.mu.ids[id] = c.mu.order.PushFront(&cacheEntry{id: id, props: propsHash(p)})
	if c.mu.order.Len() > c.size {
		old := c.mu.order.Back()
		c.mu.order.Remove(old)
		delete(c.mu.ids, old.Value.(*cacheEntry).id)
	}
}

func (c *vertexCache) remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.ids[id]; ok {
		c.mu.order.Remove(e)
		delete(c.mu.ids, id)
	}
}

func (c *vertexCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.order.Len()
}
