package processor

import (
	"github.com/cespare/xxhash/v2"

	"github.com/lineageflow/lineageflow/internal/enc"
	"github.com/lineageflow/lineageflow/lineage"
)

// The refresh lane (PipelineConfig.Window.Refresh): most graph writes of a
// steady workload change nothing but a stamp. A dataset's schema facet
// comes back with every event, only its eventTime (the property's _ts)
// newer; a FIELD_OF, ALIAS_OF, Job CHILD_OF or COLUMN_DERIVES edge comes
// back with a newer lastSeen. With the refresh lane on, such a record goes
// to a longer window (RefreshWindow, aligned on the epoch) instead of the
// 10 s one, so it is written once per refresh window instead of once per
// window; a record whose content is new to the shard (a vertex's facet
// values that differ from the last ones the shard saw for it, an edge the
// shard has not seen) goes to the normal window as before, so a changed
// facet or a new edge is written as soon as without the lane.
//
// The lane changes when a stamp reaches the graph, never what the graph
// ends up holding: a refresh window is an ordinary window (durable in
// Pebble between barriers, its pin holding the checkpoint back, sealed
// when the watermark passes its end plus the lateness, every window sealed
// by Flush), and all merges are commutative. The shard's memory of what it
// has seen (refreshSeen) is a bounded in-memory map: after a restart, or
// once it was emptied, records go to the normal window (more writes, the
// same graph). The cost: a stamp refresh reaches the graph up to
// RefreshWindow later, and a crash replays up to RefreshWindow of records.
//
// Dataset lineage (INPUT_TO, OUTPUTS, DERIVES) and run records never take
// the lane: their lastSeen is what the latency target measures.

// refreshSeenMax bounds the shard's memory of what it saw (windowTable.seen,
// 64-bit hashes of the element key and of its content, ~40 B an entry):
// past it the map is emptied (the next record of each key goes to the
// normal window once more). A hash collision can only pick a lane, never
// change what is written.
const refreshSeenMax = 1 << 17

// refreshBucket returns the refresh window of the normal window bucket:
// the start of the RefreshWindow holding it, plus 1 (normal buckets are
// multiples of the window size, at least 2 ms, so the two never collide).
func (w *windowTable) refreshBucket(bucket int64) int64 {
	r := w.refreshMs
	start := bucket - bucket%r
	if bucket < 0 && bucket%r != 0 {
		start -= r
	}
	return start + 1
}

// isRefresh reports whether bucket is a refresh window.
func (w *windowTable) isRefresh(bucket int64) bool {
	if w.refreshMs == 0 {
		return false
	}
	m := bucket % w.sizeMs
	if m < 0 {
		m += w.sizeMs
	}
	return m == 1
}

// sealAt is the watermark at which bucket is sealed: its end plus the
// lateness, the end of a refresh window being RefreshWindow after its
// start.
func (w *windowTable) sealAt(bucket int64) int64 {
	if w.isRefresh(bucket) {
		return bucket - 1 + w.refreshMs + w.latenessMs
	}
	return bucket + w.sizeMs + w.latenessMs
}

// sealedAt reports whether the watermark wm (set: it saw anything) has
// passed bucket's seal time.
func (w *windowTable) sealedAt(wm int64, set bool, bucket int64) bool {
	return set && wm >= w.sealAt(bucket)
}

// lane returns the bucket a record with content hash h of element key
// goes to: the refresh window of bucket when the lane is on and the shard
// saw key with the same content last, else bucket (and the content is
// remembered).
func (w *windowTable) lane(bucket int64, key string, h uint64) int64 {
	if w.refreshMs == 0 {
		return bucket
	}
	k := xxhash.Sum64String(key)
	if old, ok := w.seen[k]; ok && old == h {
		w.st.RefreshLane.Add(1)
		return w.refreshBucket(bucket)
	}
	if len(w.seen) >= refreshSeenMax {
		clear(w.seen)
	}
	w.seen[k] = h
	return bucket
}

// edgeLane is lane for an edge: its content is its existence.
func (w *windowTable) edgeLane(bucket int64, label, out, in string) int64 {
	if w.refreshMs == 0 {
		return bucket
	}
	return w.lane(bucket, label+"\x00"+out+"\x00"+in, 1)
}

// edgePropsLane is edgeLane for an edge with properties: its content is
// its existence and its properties' values (not their stamps).
func (w *windowTable) edgePropsLane(bucket int64, label, out, in string, ps lineage.Props) int64 {
	if w.refreshMs == 0 {
		return bucket
	}
	h := uint64(1)
	for _, p := range ps.List() {
		h = h*31 + xxhash.Sum64String(p.Key) ^ valueHash(p)
	}
	return w.lane(bucket, label+"\x00"+out+"\x00"+in, h)
}

// propLane is lane for property p of vertex id: its content is its
// value (not its stamp).
func (w *windowTable) propLane(bucket int64, id string, p lineage.Prop) int64 {
	return w.lane(bucket, id+"\x00"+p.Key, valueHash(p))
}

// valueHash hashes p's value without its stamp.
func valueHash(p lineage.Prop) uint64 {
	if p.IsNum {
		return xxhash.Sum64(enc.AppendVarint([]byte{1}, p.Num))
	}
	return xxhash.Sum64String("\x00" + p.Str)
}
