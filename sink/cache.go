package sink

import (
	"container/list"
	"sync"
)

// vertexCache remembers the ids of vertices the graph acknowledged, so
// later batches need not send their mergeV again. It is an LRU bounded to
// size ids. Only acknowledged writes are added; an edge that finds an
// endpoint missing removes the batch's ids (see [Neptune.WriteBatch]).
// Safe for concurrent use.
type vertexCache struct {
	size int
	mu   struct {
		sync.Mutex
		order *list.List               // front = most recent
		ids   map[string]*list.Element // id -> element holding the id
	}
}

func newVertexCache(size int) *vertexCache {
	c := &vertexCache{size: size}
	c.mu.order = list.New()
	c.mu.ids = make(map[string]*list.Element, min(size, 1<<16))
	return c
}

func (c *vertexCache) contains(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.mu.ids[id]
	if ok {
		c.mu.order.MoveToFront(e)
	}
	return ok
}

func (c *vertexCache) add(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.ids[id]; ok {
		c.mu.order.MoveToFront(e)
		return
	}
	c.mu.ids[id] = c.mu.order.PushFront(id)
	if c.mu.order.Len() > c.size {
		old := c.mu.order.Back()
		c.mu.order.Remove(old)
		delete(c.mu.ids, old.Value.(string))
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
