package processor

import "encoding/binary"

// fpTable is a multiset of 32-bit fingerprints: linear probing, home slot =
// the top bits of the fingerprint (so it can grow without the hashes),
// deletion by backward shift. 0 marks an empty slot.
type fpTable struct {
	slots []uint32
	shift uint // 32 - log2(len(slots))
	n     int
	// minSlots is the smallest size (0: fpMinSlots; a power of two).
	minSlots int
}

// fpMinSlots is the smallest table by default.
const fpMinSlots = 1024

func (t *fpTable) smallest() int {
	if t.minSlots == 0 {
		return fpMinSlots
	}
	return t.minSlots
}

// bytes is the table's memory (4 B a slot).
func (t *fpTable) bytes() int64 { return int64(len(t.slots)) * 4 }

// slotsFor is the size a table of smallest size minSlots reaches holding
// n fingerprints.
func slotsFor(n, minSlots int) int {
	s := minSlots
	for n*4 > s*3 {
		s *= 2
	}
	return s
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

// grows reports whether inserting one more fingerprint resizes the table
// (to twice its size).
func (t *fpTable) grows() bool { return (t.n+1)*4 > len(t.slots)*3 }

func (t *fpTable) insert(v uint32) {
	if t.grows() {
		t.resize(max(len(t.slots)*2, t.smallest()))
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
	if len(t.slots) > t.smallest() && t.n*8 < len(t.slots) {
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
