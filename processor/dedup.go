package processor

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
)

// Dedup set (DESIGN.md, Processor, "Dedup set"). Two tiers:
//
//   - recent: the last dedupRecentMax payload hashes (dedupOptions), exact (128 bits) in a
//     Go map, with their arrival times in insertion order (FIFO) for expiry;
//   - old: the hashes evicted from recent, which are always durable in
//     Pebble (eviction happens after a barrier commit), kept in memory only
//     as 32-bit fingerprints in an open-addressing table (4 bytes a slot,
//     load <= 3/4). A fingerprint match is confirmed with a Pebble Get of
//     the d/<hash> key, so the answer is as exact as the 128-bit set was;
//     a false match (about n/2^32 of the new payloads) costs one Get.
//
// Memory budget (PipelineConfig.Dedup.MaxBytes): the old tier's table may
// not grow beyond it. When it would, the table is dropped and the old tier
// is "spilled": every payload the recent tier does not know is looked up in
// Pebble (slower, still exact: no key is forgotten). Once expiry brings the
// old tier down to half the budget, the table is rebuilt from the x/ index.
//
// Expiry is unchanged: at each barrier, entries whose arrival is older than
// max arrival - DedupTTL go (FIFO walk for recent; a scan of the x/ expiry
// index below the cutoff for old).

// dedupRecentMax bounds the exact tier (~60 B an entry): 262144 entries,
// about 16 MiB per shard.
const dedupRecentMax = 1 << 18

// dedupOptions are a dedup set's sizes: the defaults in production, tiny in
// tests (which set them on a shard's set before Start: setOptions).
type dedupOptions struct {
	recentMax int   // entries of the exact tier (default dedupRecentMax)
	minSlots  int   // smallest fingerprint table (default fpMinSlots)
	maxBytes  int64 // the old tier's memory budget (<= 0: no bound)
}

// dedupSet is a shard's dedup set: both tiers, the hashes added and
// expired since the last barrier, and their s/<shard>/d/ and
// s/<shard>/x/ keys in the barrier batch.
type dedupSet struct {
	shard string
	db    *pebble.DB
	st    *Stats
	log   *slog.Logger

	recent map[[16]byte]struct{} // recent tier, exact
	fifo   []dedupItem           // recent tier in insertion order (arrival order, mostly) from head
	head   int
	old    fpTable // old tier: fingerprints of hashes durable in Pebble
	oldN   int     // old-tier entries (= old.n unless spilled)
	oldMin int64   // no old-tier entry arrived before this
	opts   dedupOptions
	// spilled: old is empty and every recent-tier miss is a Pebble Get;
	// peak: the largest old.bytes() seen (tests).
	spilled bool
	peak    int64
	added   []dedupItem
	expired []dedupItem

	keyBuf []byte
}

type dedupItem struct {
	h       [16]byte
	arrival int64
}

func newDedupSet(shard string, db *pebble.DB, st *Stats, log *slog.Logger, maxBytes int64) *dedupSet {
	d := &dedupSet{shard: shard, db: db, st: st, log: log, recent: map[[16]byte]struct{}{}}
	d.setOptions(dedupOptions{maxBytes: maxBytes})
	return d
}

// setOptions sets the set's sizes (zero recentMax, minSlots: the
// defaults). Call it before anything is added or loaded.
func (d *dedupSet) setOptions(o dedupOptions) {
	if o.recentMax == 0 {
		o.recentMax = dedupRecentMax
	}
	if o.minSlots == 0 {
		o.minSlots = fpMinSlots
	}
	d.opts = o
	d.old = d.newTable()
}

func (d *dedupSet) newTable() fpTable { return fpTable{minSlots: d.opts.minSlots} }

// seen reports whether payload hash h is in the dedup set.
func (d *dedupSet) seen(h *[16]byte) bool {
	if _, ok := d.recent[*h]; ok {
		return true
	}
	if d.spilled {
		if d.oldN == 0 {
			return false
		}
		d.st.Budget.DedupSpilledLookups.Add(1)
	} else if !d.old.contains(fingerprint(h)) {
		return false
	}
	d.st.DedupLookups.Add(1)
	d.keyBuf = checkpoint.AppendDedupKey(d.keyBuf[:0], d.shard, h)
	_, closer, err := d.db.Get(d.keyBuf)
	if errors.Is(err, pebble.ErrNotFound) {
		return false
	}
	if err != nil {
		// A read error of local state: treat as not seen (writes are
		// idempotent, a duplicate only costs work) but say so.
		d.log.Warn("dedup lookup failed", "err", err)
		return false
	}
	closer.Close()
	return true
}

// add records a new payload hash.
func (d *dedupSet) add(h [16]byte, arrival int64) {
	d.recent[h] = struct{}{}
	it := dedupItem{h: h, arrival: arrival}
	d.fifo = append(d.fifo, it)
	d.added = append(d.added, it)
}

// writeTo adds to batch the keys of the hashes added since the last
// barrier, expires the entries that arrived before cutoff (Unix ms) and
// adds their deletion.
func (d *dedupSet) writeTo(batch *pebble.Batch, cutoff int64) error {
	// Each kind of key in key order: Pebble inserts a batch's keys into
	// its memtable skiplist starting from where the previous key went, so
	// ascending keys cost a short walk, random ones a full descent. The
	// x/ keys first, in arrival order (mostly ascending already), then
	// the d/ keys sorted by hash (unique among added: a hash is added
	// only when not in recent, and leaves it only at a barrier).
	for i := range d.added {
		it := &d.added[i]
		d.keyBuf = checkpoint.AppendExpiryKey(d.keyBuf[:0], d.shard, it.arrival, &it.h)
		_ = batch.Set(d.keyBuf, nil, nil)
	}
	slices.SortFunc(d.added, cmpHash)
	for i := range d.added {
		it := &d.added[i]
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], uint64(it.arrival))
		d.keyBuf = checkpoint.AppendDedupKey(d.keyBuf[:0], d.shard, &it.h)
		_ = batch.Set(d.keyBuf, v[:], nil)
	}
	if err := d.expire(cutoff); err != nil {
		return err
	}
	// The same two runs for the deletions (expired is in arrival order).
	for i := range d.expired {
		it := &d.expired[i]
		d.keyBuf = checkpoint.AppendExpiryKey(d.keyBuf[:0], d.shard, it.arrival, &it.h)
		_ = batch.Delete(d.keyBuf, nil)
	}
	slices.SortFunc(d.expired, cmpHash)
	for i := range d.expired {
		it := &d.expired[i]
		d.keyBuf = checkpoint.AppendDedupKey(d.keyBuf[:0], d.shard, &it.h)
		_ = batch.Delete(d.keyBuf, nil)
	}
	return nil
}

// cmpHash orders dedup items by hash (the order of their d/ keys).
func cmpHash(a, b dedupItem) int {
	if x, y := binary.BigEndian.Uint64(a.h[:8]), binary.BigEndian.Uint64(b.h[:8]); x != y {
		return cmp.Compare(x, y)
	}
	return cmp.Compare(binary.BigEndian.Uint64(a.h[8:]), binary.BigEndian.Uint64(b.h[8:]))
}

// afterCommit forgets what the barrier made durable and moves the oldest
// recent hashes to the old tier.
func (d *dedupSet) afterCommit() {
	d.added = d.added[:0]
	d.expired = d.expired[:0]
	if d.spilled && int64(slotsFor(d.oldN, d.opts.minSlots))*4*2 <= d.opts.maxBytes {
		d.unspill()
	}
	d.evict()
}

// spill drops the old tier's table: the memory budget would be exceeded.
func (d *dedupSet) spill() {
	d.old = d.newTable()
	d.spilled = true
	d.st.Budget.DedupSpills.Add(1)
	d.log.Warn("dedup memory budget reached: the old tier is looked up in Pebble until expiry halves it",
		"entries", d.oldN, "max_bytes", d.opts.maxBytes)
}

// unspill rebuilds the old tier's table from the x/ index (every entry
// durable and not in the recent tier). On a read error the tier stays
// spilled (still exact).
func (d *dedupSet) unspill() {
	prefix := checkpoint.ExpiryPrefix(d.shard)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: checkpoint.PrefixEnd(prefix)})
	if err != nil {
		d.log.Warn("dedup old tier rebuild failed", "err", err)
		return
	}
	t := d.newTable()
	n, xp := 0, len(prefix)
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) != xp+24 {
			continue
		}
		var h [16]byte
		copy(h[:], k[xp+8:])
		if _, recent := d.recent[h]; recent {
			continue
		}
		t.insert(fingerprint(&h))
		n++
	}
	if err := it.Close(); err != nil {
		d.log.Warn("dedup old tier rebuild failed", "err", err)
		return
	}
	d.old, d.oldN, d.spilled = t, n, false
	d.peak = max(d.peak, d.old.bytes())
	d.log.Info("dedup old tier back in memory", "entries", n, "bytes", d.old.bytes())
}

// memBytes is the old tier's memory.
func (d *dedupSet) memBytes() int64 { return d.old.bytes() }

// load restores one entry of the s/<shard>/x/ expiry index (resume, in
// key order: everything loaded is durable).
func (d *dedupSet) load(k []byte) error {
	rest := k[len(checkpoint.ExpiryPrefix(d.shard)):]
	if len(rest) != 24 {
		return checkpoint.ErrCorrupt
	}
	var it dedupItem
	it.arrival = int64(binary.BigEndian.Uint64(rest[:8]))
	copy(it.h[:], rest[8:])
	d.recent[it.h] = struct{}{}
	d.fifo = append(d.fifo, it)
	d.evict()
	return nil
}

// evict moves the oldest recent hashes beyond opts.recentMax to the old
// tier. Call it only when every recent hash is durable (after a barrier
// commit, or while resuming).
func (d *dedupSet) evict() {
	for len(d.fifo)-d.head > d.opts.recentMax {
		it := &d.fifo[d.head]
		d.head++
		delete(d.recent, it.h)
		d.oldN++
		if !d.spilled && d.opts.maxBytes > 0 && d.old.grows() && int64(max(len(d.old.slots)*2, d.opts.minSlots))*4 > d.opts.maxBytes {
			d.spill()
		}
		if !d.spilled {
			d.old.insert(fingerprint(&it.h))
			d.peak = max(d.peak, d.old.bytes())
		}
		if d.oldN == 1 || it.arrival < d.oldMin {
			d.oldMin = it.arrival
		}
	}
	d.compactFIFO()
}

func (d *dedupSet) compactFIFO() {
	if d.head > 1024 && d.head*2 > len(d.fifo) {
		n := copy(d.fifo, d.fifo[d.head:])
		d.fifo = d.fifo[:n]
		if cap(d.fifo) > 4*n+1024 {
			d.fifo = append([]dedupItem(nil), d.fifo...)
		}
		d.head = 0
	}
}

// expire collects in d.expired the entries that arrived before cutoff:
// old-tier ones first (a scan of the expiry index, before the recent ones
// leave the map), then the recent ones (FIFO walk).
func (d *dedupSet) expire(cutoff int64) error {
	if d.oldN > 0 && d.oldMin < cutoff {
		lower := checkpoint.ExpiryPrefix(d.shard)
		if d.oldMin > 0 {
			lower = checkpoint.ExpiryBound(d.shard, d.oldMin)
		}
		upper := checkpoint.ExpiryBound(d.shard, max(cutoff, 0))
		it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return err
		}
		xp := len(checkpoint.ExpiryPrefix(d.shard))
		for it.First(); it.Valid(); it.Next() {
			k := it.Key()
			if len(k) != xp+24 {
				_ = it.Close()
				return fmt.Errorf("dedup expiry key %x: %w", k, checkpoint.ErrCorrupt)
			}
			var x dedupItem
			x.arrival = int64(binary.BigEndian.Uint64(k[xp : xp+8]))
			copy(x.h[:], k[xp+8:])
			if _, recent := d.recent[x.h]; recent {
				continue // expires (or not) with the FIFO walk
			}
			if !d.spilled {
				d.old.remove(fingerprint(&x.h))
			}
			d.oldN = max(d.oldN-1, 0)
			d.expired = append(d.expired, x)
		}
		if err := it.Close(); err != nil {
			return err
		}
		d.oldMin = cutoff
	}
	n := d.head
	for n < len(d.fifo) && d.fifo[n].arrival < cutoff {
		x := d.fifo[n]
		delete(d.recent, x.h)
		d.expired = append(d.expired, x)
		n++
	}
	d.head = n
	d.compactFIFO()
	return nil
}
