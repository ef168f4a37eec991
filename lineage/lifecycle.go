package lineage

// Lifecycle is the lifecycleStateChange facet of an output dataset.
type Lifecycle struct {
	Dataset Dataset
	State   string // ALTER, CREATE, DROP, OVERWRITE, RENAME, TRUNCATE (as sent)
}

// LifecycleDrop is the state of a dropped dataset: its event does not
// write it (no OUTPUTS, no DERIVES, no WROTE), it marks it dropped.
const LifecycleDrop = "DROP"

// Dataset properties the lifecycle gives (see [Prop] for the rules).
const (
	PropLifecycleState = "lifecycleState" // last writer wins by eventTime
	PropDroppedAt      = "droppedAt"      // latest eventTime of a DROP
)

// lifecycleOf reads the lifecycleStateChange facet's state from its raw
// object ("" when absent or not a string; invalid JSON or another type
// than an object gives ""). refLifecycleOf is its encoding/json reference.
func lifecycleOf(raw []byte) string {
	var s scanner
	s.reset(raw)
	if s.peek() != '{' {
		return ""
	}
	var st string
	for ok := s.objBegin(); ok; ok = s.objNext() {
		if string(s.key()) == "lifecycleStateChange" {
			st, _ = s.optStr(2) // the last one
		} else {
			s.skip(2)
		}
	}
	s.end()
	if s.err != nil {
		return ""
	}
	return st
}

// LifecycleProps are the Dataset properties a lifecycle change at
// eventTime t (Unix ms) gives.
func LifecycleProps(l Lifecycle, t int64) []Prop {
	ps := []Prop{StrLWW(PropLifecycleState, l.State, t)}
	if l.State == LifecycleDrop {
		ps = append(ps, NumMax(PropDroppedAt, t))
	}
	return ps
}
