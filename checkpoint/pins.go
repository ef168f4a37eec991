package checkpoint

// Pins tracks what holds the KCL checkpoint back. Each pin (an open window
// bucket, a sealed window whose outbox entries are not acknowledged yet, an
// open run) carries the sequence number of the last Kinesis record fully
// processed before the pin was opened: replaying from there re-creates
// everything the pin stands for. The safe checkpoint is the minimum over the
// pins, or the last durable fully-processed record when nothing is pinned.
//
// A pin value is always a sequence number all of whose sub-records (KPL
// aggregation) were processed before the pin opened, so checkpointing at it
// never skips part of an aggregated record.
//
// Pins is a multiset: the same value may be pinned many times. Not safe for
// concurrent use.
type Pins struct {
	counts map[string]int
	min    string
	minOK  bool // min is valid
}

// NewPins returns an empty pin set.
func NewPins() *Pins { return &Pins{counts: map[string]int{}} }

// Add pins seq once.
func (p *Pins) Add(seq string) {
	p.counts[seq]++
	if p.minOK && CompareSeq(seq, p.min) < 0 {
		p.min = seq
	}
	if len(p.counts) == 1 {
		p.min, p.minOK = seq, true
	}
}

// Release removes one pin of seq. Releasing a value not pinned panics: it is
// a bookkeeping bug that would let the checkpoint run ahead.
func (p *Pins) Release(seq string) {
	n, ok := p.counts[seq]
	if !ok {
		panic("checkpoint: release of unpinned sequence number " + seq)
	}
	if n > 1 {
		p.counts[seq] = n - 1
		return
	}
	delete(p.counts, seq)
	if p.minOK && p.min == seq {
		p.minOK = false
	}
}

// Len returns the number of pins.
func (p *Pins) Len() int {
	n := 0
	for _, c := range p.counts {
		n += c
	}
	return n
}

// Min returns the smallest pinned value, and false when nothing is pinned.
func (p *Pins) Min() (string, bool) {
	if len(p.counts) == 0 {
		return "", false
	}
	if !p.minOK {
		first := true
		for s := range p.counts {
			if first || CompareSeq(s, p.min) < 0 {
				p.min, first = s, false
			}
		}
		p.minOK = true
	}
	return p.min, true
}

// Safe returns the sequence number the KCL checkpoint may advance to, given
// durable, the last fully processed record whose effects are in a synced
// barrier. "" means nothing is safe yet.
func (p *Pins) Safe(durable string) string {
	if m, ok := p.Min(); ok && CompareSeq(m, durable) < 0 {
		return m
	}
	return durable
}
