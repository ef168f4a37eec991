package processor

import (
	"fmt"
	"sort"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/enc"
)

const handoffV1 = 1

// HandoffState encodes every run the shard holds (what it keeps under
// s/<shard>/r/), sorted by run id so the same state gives the same bytes.
// Call it at shard end, after [Shard.Flush].
func (s *Shard) HandoffState() []byte {
	dst, n := s.runs.handoffState()
	s.st.RunsHandedOff.Add(int64(n))
	return dst
}

// LoadHandoff adds the runs a parent shard handed off (see
// [Shard.HandoffState]) to this shard's state. Call it after
// [Shard.Start] and before the first record; for a merge, once per
// parent. The runs become durable with the next barrier. They never pin
// the checkpoint: the handoff, not this shard's records, is where their
// earlier events are (a child that starts again without its local state
// loads it again). A run both parents hold is merged. It returns the
// number of runs loaded.
func (s *Shard) LoadHandoff(parent string, data []byte) (int, error) {
	if s.started {
		return 0, fmt.Errorf("processor: %s: handoff of %s loaded after the first record", s.id, parent)
	}
	n, err := s.runs.loadHandoff(parent, data)
	if err != nil {
		return 0, err
	}
	s.st.RunsHandedIn.Add(int64(n))
	return n, nil
}

// handoffState encodes every run of t, sorted by id, and their number.
func (t *runTable) handoffState() ([]byte, int) {
	ids := make([]string, 0, len(t.m))
	for id := range t.m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	dst := []byte{handoffV1}
	dst = enc.AppendVarint(dst, int64(len(ids)))
	var val []byte
	for _, id := range ids {
		val = appendRun(val[:0], t.m[id])
		dst = enc.AppendString(dst, id)
		dst = enc.AppendString(dst, string(val))
	}
	return dst, len(ids)
}

// loadHandoff adds the runs of parent's handoff to t, unpinned and dirty,
// merging a run t holds already.
func (t *runTable) loadHandoff(parent string, data []byte) (int, error) {
	rd := enc.NewReader(data, checkpoint.ErrCorrupt)
	if rd.Byte() != handoffV1 {
		return 0, fmt.Errorf("processor: handoff of %s: %w", parent, checkpoint.ErrCorrupt)
	}
	n := rd.Varint()
	if n < 0 || n > int64(len(data)) {
		return 0, fmt.Errorf("processor: handoff of %s: %w", parent, checkpoint.ErrCorrupt)
	}
	loaded := make([]*run, 0, n)
	for i := int64(0); i < n; i++ {
		id, val := rd.String(), rd.String()
		if rd.Err() != nil {
			break
		}
		r, err := decodeRun(id, []byte(val), t.ids)
		if err != nil {
			return 0, fmt.Errorf("processor: handoff of %s, run %q: %w", parent, id, err)
		}
		loaded = append(loaded, r)
	}
	if err := rd.Err(); err != nil {
		return 0, fmt.Errorf("processor: handoff of %s: %w", parent, err)
	}
	for _, r := range loaded {
		r.handoff, r.pin = true, ""
		if x := t.m[r.ID]; x != nil {
			x.lastArrival = max(x.lastArrival, r.lastArrival)
			x.Merge(&r.Run)
			r = x
		} else {
			t.m[r.ID] = r
		}
		t.markDirty(r)
	}
	return len(loaded), nil
}
