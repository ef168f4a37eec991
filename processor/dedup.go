package processor

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
)

// Dedup set (DESIGN.md, Processor, "Dedup set"). Two tiers:
//
//   - recent: the last dedupRecentMax payload hashes, exact (128 bits) in a
//     Go map, with their arrival times in insertion order (FIFO) for expiry;
//   - old: the hashes evicted from recent, which are always durable in
//     Pebble (eviction happens after a barrier commit), kept in memory only
//     as 32-bit fingerprints in an open-addressing table (4 bytes a slot,
//     load <= 3/4). A fingerprint match is confirmed with a Pebble Get of
//     the d/<hash> key, so the answer is as exact as the 128-bit set was;
//     a false match (about n/2^32 of the new payloads) costs one Get.
//
// Expiry is unchanged: at each barrier, entries whose arrival is older than
// max arrival - DedupTTL go (FIFO walk for recent; a scan of the x/ expiry
// index below the cutoff for old).

// dedupRecentMax bounds the exact tier (~60 B an entry): 262144 entries,
// about 16 MiB per shard. A variable so tests can make it tiny.
var dedupRecentMax = 1 << 18

// fpTable is a multiset of 32-bit fingerprints: linear probing, home slot =
// the top bits of the fingerprint (so it can grow without the hashes),
// deletion by backward shift. 0 marks an empty slot.
type fpTable struct {
	slots []uint32
	shift uint // 32 - log2(len(slots))
	n     int
}

func fingerprint(h *[16]byte) uint32 {
	v := binary.BigEndian.Uint32(h[:4])
	if v == 0 {
		v = 1
	}
	return v
}

func (t *fpTable) home(v uint32) int { return int(v >> t.shift) }

func (t *fpTable) contains(v uint32) bool {
	if t.n == 0 {
		return false
	}
	mask := len(t.slots) - 1
	for i := t.home(v); t.slots[i] != 0; i = (i + 1) & mask {
		if t.slots[i] == v {
			return true
		}
	}
	return false
}

func (t *fpTable) insert(v uint32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(len(t.slots)*2, 1024))
	}
	mask := len(t.slots) - 1
	i := t.home(v)
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = v
	t.n++
}

// remove removes one occurrence of v (if any).
func (t *fpTable) remove(v uint32) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(v)
	for t.slots[i] != v {
		if t.slots[i] == 0 {
			return
		}
		i = (i + 1) & mask
	}
	// Backward shift: move later members of the probe run into the hole
	// when their home does not lie cyclically in (i, j].
	for j := (i + 1) & mask; t.slots[j] != 0; j = (j + 1) & mask {
		k := t.home(t.slots[j])
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = 0
	t.n--
	if len(t.slots) > 1024 && t.n*8 < len(t.slots) {
		t.resize(len(t.slots) / 2)
	}
}

func (t *fpTable) resize(size int) {
	old := t.slots
	t.slots = make([]uint32, size)
	t.shift = 32
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	t.n = 0
	mask := size - 1
	for _, v := range old {
		if v == 0 {
			continue
		}
		i := t.home(v)
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = v
		t.n++
	}
}

// seen reports whether payload hash h is in the dedup set.
func (s *Shard) seen(h *[16]byte) bool {
	if _, ok := s.dedup[*h]; ok {
		return true
	}
	if !s.dedupOld.contains(fingerprint(h)) {
		return false
	}
	s.st.DedupLookups.Add(1)
	s.keyBuf = checkpoint.AppendDedupKey(s.keyBuf[:0], s.id, h)
	_, closer, err := s.db.Get(s.keyBuf)
	if errors.Is(err, pebble.ErrNotFound) {
		return false
	}
	if err != nil {
		// A read error of local state: treat as not seen (writes are
		// idempotent, a duplicate only costs work) but say so.
		s.log.Warn("dedup lookup failed", "err", err)
		return false
	}
	closer.Close()
	return true
}

// addSeen records a new payload hash.
func (s *Shard) addSeen(h [16]byte, arrival int64) {
	s.dedup[h] = struct{}{}
	it := dedupItem{h: h, arrival: arrival}
	s.dedupFIFO = append(s.dedupFIFO, it)
	s.dedupNew = append(s.dedupNew, it)
}

// evictDedup moves the oldest recent hashes beyond dedupRecentMax to the
// old tier. Call it only when every recent hash is durable (after a
// barrier commit, or while resuming).
func (s *Shard) evictDedup() {
	for len(s.dedupFIFO)-s.dedupHead > dedupRecentMax {
		it := &s.dedupFIFO[s.dedupHead]
		s.dedupHead++
		delete(s.dedup, it.h)
		s.dedupOld.insert(fingerprint(&it.h))
		if s.dedupOld.n == 1 || it.arrival < s.dedupOldMin {
			s.dedupOldMin = it.arrival
		}
	}
	s.compactFIFO()
}

func (s *Shard) compactFIFO() {
	if s.dedupHead > 1024 && s.dedupHead*2 > len(s.dedupFIFO) {
		n := copy(s.dedupFIFO, s.dedupFIFO[s.dedupHead:])
		s.dedupFIFO = s.dedupFIFO[:n]
		if cap(s.dedupFIFO) > 4*n+1024 {
			s.dedupFIFO = append([]dedupItem(nil), s.dedupFIFO...)
		}
		s.dedupHead = 0
	}
}

// expireDedup collects in dedupExpired the entries older than the TTL:
// old-tier ones first (a scan of the expiry index, before the recent ones
// leave the map), then the recent ones (FIFO walk).
func (s *Shard) expireDedup() error {
	cutoff := s.maxArrival - s.cfg.DedupTTL.Milliseconds()
	if s.dedupOld.n > 0 && s.dedupOldMin < cutoff {
		lower := checkpoint.ExpiryPrefix(s.id)
		if s.dedupOldMin > 0 {
			lower = checkpoint.ExpiryBound(s.id, s.dedupOldMin)
		}
		upper := checkpoint.ExpiryBound(s.id, max(cutoff, 0))
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return err
		}
		xp := len(checkpoint.ExpiryPrefix(s.id))
		for it.First(); it.Valid(); it.Next() {
			k := it.Key()
			if len(k) != xp+24 {
				_ = it.Close()
				return fmt.Errorf("dedup expiry key %x: %w", k, checkpoint.ErrCorrupt)
			}
			var d dedupItem
			d.arrival = int64(binary.BigEndian.Uint64(k[xp : xp+8]))
			copy(d.h[:], k[xp+8:])
			if _, recent := s.dedup[d.h]; recent {
				continue // expires (or not) with the FIFO walk
			}
			s.dedupOld.remove(fingerprint(&d.h))
			s.dedupExpired = append(s.dedupExpired, d)
		}
		if err := it.Close(); err != nil {
			return err
		}
		s.dedupOldMin = cutoff
	}
	n := s.dedupHead
	for n < len(s.dedupFIFO) && s.dedupFIFO[n].arrival < cutoff {
		d := s.dedupFIFO[n]
		delete(s.dedup, d.h)
		s.dedupExpired = append(s.dedupExpired, d)
		n++
	}
	s.dedupHead = n
	s.compactFIFO()
	return nil
}
