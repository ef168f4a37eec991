package sink

import (
	"container/list"
	"sort"
	"strconv"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/lineageflow/lineageflow/lineage"
)

// vertexCache remembers the ids of vertices the graph acknowledged, with
// the stamp and a hash of the value of each property acknowledged with
// them, so later batches need not send a mergeV that cannot change the
// graph: a vertex already there whose every property the graph holds with
// a newer stamp, or the same stamp and value (a vertex whose facets did not
// change is not rewritten; a bare vertex, an edge's endpoint, is never
// rewritten once written). Every property merge keeps the greater (stamp,
// value) ([lineage.Prop]), so what the graph acknowledged only grows and a
// write it covers is a no-op, whichever writer made it. It is an LRU
// bounded to size ids. Only acknowledged writes are added; an edge that
// finds an endpoint missing removes the batch's ids (see
// [Neptune.WriteBatch]). Safe for concurrent use.
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
	props []ackedProp // sorted by key
}

// ackedProp is what the graph acknowledged of one property: at least this
// stamp, and, if known, exactly this value at it.
type ackedProp struct {
	key   string
	stamp int64
	hash  uint64 // xxhash of the value
	known bool   // false: two values were acknowledged at stamp (the graph holds the greater)
}

// valueHash hashes a property's value (not its stamp or key).
func valueHash(p lineage.Prop) uint64 {
	if p.IsNum {
		return xxhash.Sum64String("n" + strconv.FormatInt(p.Num, 10))
	}
	return xxhash.Sum64String("s" + p.Str)
}

func (e *cacheEntry) find(key string) int {
	return sort.Search(len(e.props), func(i int) bool { return e.props[i].key >= key })
}

// covers reports whether writing p can change nothing the entry says the
// graph holds.
func (e *cacheEntry) covers(p lineage.Props) bool {
	for _, x := range p.List() {
		i := e.find(x.Key)
		if i == len(e.props) || e.props[i].key != x.Key {
			return false
		}
		a := e.props[i]
		if a.stamp < x.Stamp || a.stamp == x.Stamp && (!a.known || a.hash != valueHash(x)) {
			return false
		}
	}
	return true
}

// merge folds acknowledged properties p into the entry.
func (e *cacheEntry) merge(p lineage.Props) {
	for _, x := range p.List() {
		h := valueHash(x)
		i := e.find(x.Key)
		switch {
		case i == len(e.props) || e.props[i].key != x.Key:
			e.props = append(e.props, ackedProp{})
			copy(e.props[i+1:], e.props[i:])
			e.props[i] = ackedProp{key: x.Key, stamp: x.Stamp, hash: h, known: true}
		case e.props[i].stamp < x.Stamp:
			e.props[i] = ackedProp{key: x.Key, stamp: x.Stamp, hash: h, known: true}
		case e.props[i].stamp == x.Stamp && e.props[i].hash != h:
			e.props[i].known = false
		}
	}
}

// contains reports whether vertex id was acknowledged with properties
// that cover p (writing p again would change nothing).
func (c *vertexCache) contains(id string, p lineage.Props) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.mu.ids[id]
	if ok {
		c.mu.order.MoveToFront(e)
		return e.Value.(*cacheEntry).covers(p)
	}
	return false
}

// add records that vertex id was acknowledged with properties p.
func (c *vertexCache) add(id string, p lineage.Props) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.ids[id]; ok {
		c.mu.order.MoveToFront(e)
		e.Value.(*cacheEntry).merge(p)
		return
	}
	ce := &cacheEntry{id: id}
	ce.merge(p)
	c.mu.ids[id] = c.mu.order.PushFront(ce)
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
