package processor

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/window"
)

// windowTable is a shard's open windows: the in-memory deltas since the
// last barrier ([window.Table]), the open buckets with their pins (what
// Pebble may hold of each), and the sealed windows whose outbox entries
// are not all acknowledged yet. It writes the s/<shard>/w/ and
// s/<shard>/b/ keys of a barrier and folds a sealing window with what
// Pebble holds; the shard writes the outbox entries.
type windowTable struct {
	shard string
	db    *pebble.DB
	pins  *checkpoint.Pins
	tab   *window.Table

	// maxKeys: past it, an emission spills the table (spill) inside its
	// loops (semantics.Emitter.MaySpill), so one emission's memory is
	// bounded whatever its size.
	maxKeys int
	spill   func()
	st      *Stats

	// Window geometry (ms) and the refresh lane (refresh.go; refreshMs 0:
	// off), with the shard's memory of the content it saw per element.
	sizeMs, latenessMs, refreshMs int64
	seen                          map[uint64]uint64

	buckets map[int64]*bucketState // open window buckets (in memory or in Pebble)
	groups  []sealGroup            // sealed windows whose outbox entries are not all acked

	keyBuf []byte
	valBuf []byte
}

type bucketState struct {
	pin    string
	dirty  bool // pin changed since the last barrier
	stored bool // Pebble may hold window entries of the bucket
	meta   bool // Pebble may hold the bucket's pin key
}

type sealGroup struct {
	last uint64 // last outbox sequence of the sealed window
	pin  string
}

func newWindowTable(shard string, db *pebble.DB, pins *checkpoint.Pins) *windowTable {
	return &windowTable{shard: shard, db: db, pins: pins, tab: window.NewTable(), buckets: map[int64]*bucketState{}}
}

// touch opens bucket (or lowers its pin) for a contribution whose replay
// must start after pin.
func (w *windowTable) touch(bucket int64, pin string) {
	b, ok := w.buckets[bucket]
	if !ok {
		w.buckets[bucket] = &bucketState{pin: pin, dirty: true}
		w.pins.Add(pin)
		return
	}
	if checkpoint.CompareSeq(pin, b.pin) < 0 {
		w.pins.Release(b.pin)
		w.pins.Add(pin)
		b.pin, b.dirty = pin, true
	}
}

// spillIfFull spills the table once it holds maxKeys keys. The bucket
// stays open (its pin written with the deltas); sealing folds what Pebble
// holds with the table, so an edge and its endpoint vertices may be split
// between the two.
func (w *windowTable) spillIfFull() {
	if w.spill != nil && w.tab.Len() >= w.maxKeys {
		w.spill()
	}
}

// full reports whether the in-memory deltas reached max keys.
func (w *windowTable) full(max int) bool { return w.tab.Len() >= max }

// sealDue reports whether the watermark has passed an open window.
func (w *windowTable) sealDue(wm *window.Watermark) bool {
	ms, set := wm.Value()
	for b := range w.buckets {
		if w.sealedAt(ms, set, b) {
			return true
		}
	}
	return false
}

// sealable returns, in order, the open windows to seal now: those the
// watermark has passed, or all of them if all.
func (w *windowTable) sealable(all bool, wm *window.Watermark) sealSet {
	var sealing sealSet
	ms, set := wm.Value()
	for b := range w.buckets {
		if all || w.sealedAt(ms, set, b) {
			sealing = append(sealing, b)
		}
	}
	sort.Slice(sealing, func(i, j int) bool { return sealing[i] < sealing[j] })
	return sealing
}

// sealSet is a sorted set of buckets being sealed.
type sealSet []int64

func (ss sealSet) has(b int64) bool {
	i := sort.Search(len(ss), func(i int) bool { return ss[i] >= b })
	return i < len(ss) && ss[i] == b
}

// sealFold holds the in-memory deltas of the windows being sealed: by
// store key for a window Pebble holds entries of (stored), and for one it
// holds nothing of (opened and sealed between two barriers, the common
// case: no store keys, no iterator, no range deletion) as its sealed
// content already (mem), built straight from the table.
type sealFold struct {
	stored map[int64]map[[32]byte]window.Entry
	mem    map[int64]*sealedWindow
}

// writeDeltas adds to batch the deltas of the windows that stay open
// (blind merges) and the pins of those whose pin changed, and returns the
// deltas of the sealing ones.
func (w *windowTable) writeDeltas(batch *pebble.Batch, sealing sealSet) sealFold {
	f := sealFold{stored: map[int64]map[[32]byte]window.Entry{}, mem: map[int64]*sealedWindow{}}
	w.tab.Range(func(k window.Key, p window.Props) {
		if sealing.has(k.Bucket) {
			if !w.buckets[k.Bucket].stored {
				sw := f.mem[k.Bucket]
				if sw == nil {
					sw = &sealedWindow{bucket: k.Bucket, vertices: map[string]lineage.Vertex{}}
					f.mem[k.Bucket] = sw
				}
				e := window.EntryOf(k, p)
				sw.add(&e)
				return
			}
			m := f.stored[k.Bucket]
			if m == nil {
				m = map[[32]byte]window.Entry{}
				f.stored[k.Bucket] = m
			}
			m[k.StoreKey()] = window.EntryOf(k, p)
			return
		}
		e := window.EntryOf(k, p)
		sk := k.StoreKey()
		w.keyBuf = checkpoint.AppendWindowKey(w.keyBuf[:0], w.shard, k.Bucket, &sk)
		w.valBuf = window.AppendEntry(w.valBuf[:0], &e)
		_ = batch.Merge(w.keyBuf, w.valBuf, nil)
		w.buckets[k.Bucket].stored = true
	})
	for b, st := range w.buckets {
		if st.dirty && !sealing.has(b) {
			w.keyBuf = checkpoint.AppendBucketMetaKey(w.keyBuf[:0], w.shard, b)
			_ = batch.Set(w.keyBuf, []byte(st.pin), nil)
			st.meta = true
		}
	}
	return f
}

// sealedWindow is the content of a window being sealed, and its pin.
type sealedWindow struct {
	bucket   int64
	pin      string
	edges    []lineage.Edge
	vertices map[string]lineage.Vertex
}

// add adds entry e to the window's content.
func (sw *sealedWindow) add(e *window.Entry) {
	if e.Kind == window.KindVertex {
		sw.vertices[e.Out] = e.Vertex()
	} else {
		sw.edges = append(sw.edges, e.Edge())
	}
}

// fold returns the content of sealing window bucket (what Pebble holds
// folded with the in-memory deltas of f) and adds to batch the deletion
// of its window entries and pin.
func (w *windowTable) fold(batch *pebble.Batch, bucket int64, f sealFold) (sealedWindow, error) {
	bs := w.buckets[bucket]
	if !bs.stored {
		out := sealedWindow{bucket: bucket, vertices: map[string]lineage.Vertex{}}
		if sw := f.mem[bucket]; sw != nil {
			out = *sw
		}
		out.pin = bs.pin
		if bs.meta {
			w.keyBuf = checkpoint.AppendBucketMetaKey(w.keyBuf[:0], w.shard, bucket)
			_ = batch.Delete(w.keyBuf, nil)
		}
		return out, nil
	}
	out := sealedWindow{bucket: bucket, pin: bs.pin, vertices: map[string]lineage.Vertex{}}
	mem := f.stored[bucket]
	prefix := checkpoint.BucketPrefix(w.shard, bucket)
	it, err := w.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: checkpoint.PrefixEnd(prefix)})
	if err != nil {
		return out, err
	}
	for it.First(); it.Valid(); it.Next() {
		var e window.Entry
		if _, err := window.DecodeEntry(it.Value(), &e); err != nil {
			_ = it.Close()
			return out, fmt.Errorf("window entry %x: %w", it.Key(), err)
		}
		var sk [32]byte
		copy(sk[:], it.Key()[len(prefix):])
		if m, ok := mem[sk]; ok {
			e.Merge(m)
			delete(mem, sk)
		}
		out.add(&e)
	}
	if err := it.Close(); err != nil {
		return out, err
	}
	for _, e := range mem {
		out.add(&e)
	}
	_ = batch.DeleteRange(prefix, checkpoint.PrefixEnd(prefix), nil)
	_ = batch.Delete(checkpoint.BucketMetaKey(w.shard, bucket), nil)
	return out, nil
}

// sealed records that window sw went to the outbox: its pin now holds
// until outbox entry last is acknowledged, or is released at once if the
// window gave no entry.
func (w *windowTable) sealed(sw *sealedWindow, entries int, last uint64) {
	if entries > 0 {
		w.groups = append(w.groups, sealGroup{last: last, pin: sw.pin})
	} else {
		w.pins.Release(sw.pin)
	}
}

// afterCommit updates the in-memory view once the barrier is durable.
func (w *windowTable) afterCommit(sealing sealSet) {
	for _, b := range sealing {
		delete(w.buckets, b)
	}
	for _, st := range w.buckets {
		st.dirty = false
	}
	w.tab.Reset()
}

// releaseAcked releases the pins of the sealed windows all of whose
// outbox entries are below acked (acknowledged).
func (w *windowTable) releaseAcked(acked uint64) {
	n := 0
	for _, g := range w.groups {
		if g.last >= acked {
			break
		}
		w.pins.Release(g.pin)
		n++
	}
	w.groups = w.groups[n:]
}

// loadPin restores an open bucket from its s/<shard>/b/ key (resume).
func (w *windowTable) loadPin(k, v []byte) {
	b := int64(binary.BigEndian.Uint64(k[len(checkpoint.BucketMetaPrefix(w.shard)):]))
	w.buckets[b] = &bucketState{pin: string(v), stored: true, meta: true}
	w.pins.Add(string(v))
}

// loadSealed restores a sealed window's outbox entry seq (resume).
func (w *windowTable) loadSealed(seq uint64, pin string) {
	w.groups = append(w.groups, sealGroup{last: seq, pin: pin})
	w.pins.Add(pin)
}

// checkStored checks that the bucket of a window entry key has a pin
// (both are written in the same batch).
func (w *windowTable) checkStored(k []byte) error {
	if _, ok := w.buckets[checkpoint.BucketFromWindowKey(w.shard, k)]; !ok {
		return fmt.Errorf("window entry %x without a bucket pin", k)
	}
	return nil
}
