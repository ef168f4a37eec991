package checkpoint

// CompareSeq compares two Kinesis sequence numbers as the big decimal
// integers they are: by length, then lexicographically. It returns -1, 0
// or +1. The empty string ("nothing processed yet") is less than any
// sequence number. Leading zeros are not expected (Kinesis never sends
// them).
func CompareSeq(a, b string) int {
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Pos is the position of one user record in a shard: the Kinesis sequence
// number and, for the user records a KPL-aggregated record holds (they
// share its sequence number), the index among them (0 otherwise).
type Pos struct {
	Seq string
	Sub uint32
}

// Compare orders positions by sequence number, then sub-sequence.
func (p Pos) Compare(o Pos) int {
	if c := CompareSeq(p.Seq, o.Seq); c != 0 {
		return c
	}
	switch {
	case p.Sub < o.Sub:
		return -1
	case p.Sub > o.Sub:
		return 1
	}
	return 0
}
