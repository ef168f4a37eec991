package processor

import (
	"slices"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
)

// run is a shard's copy of one run: its meaning (semantics.Run) and
// what the engine keeps of it.
type run struct {
	semantics.Run
	pin         string // last sequence number fully processed before the run's first record
	lastArrival int64
	dirty       bool
	// handoff: loaded from a parent shard's handoff (handoff.go). Such a
	// run never pins this shard's checkpoint (its earlier events are on
	// the parent, not here: the handoff is its durable source) and its
	// emissions carry the pin of the record that makes them.
	handoff bool
}

// runTable is a shard's run state: the runs by id, those changed and
// those forgotten since the last barrier, their GC, and their
// s/<shard>/r/ keys in the barrier batch. Open runs (but handed-off ones)
// hold a pin each.
type runTable struct {
	shard string
	pins  *checkpoint.Pins
	ids   *semantics.IDs
	st    *Stats

	// maxRuns bounds the runs held (0: no bound).
	maxRuns int

	m       map[string]*run
	dirty   []*run
	dropped []string
	lastGC  int64

	// unpinned: a run store is configured (runstore.go); runs never pin
	// the checkpoint. evicted holds the runs evicted (maxRuns) since the
	// last barrier with changes not yet written to the store, and fetch
	// reads one run the prefetch did not load (nil: none stored).
	unpinned bool
	evicted  map[string]*run
	fetch    func(id string) *run
	// absent: runs the current batch's prefetch asked for and the store
	// did not hold (new runs: no second read).
	absent map[string]struct{}

	keyBuf []byte
	valBuf []byte
}

func newRunTable(shard string, pins *checkpoint.Pins, ids *semantics.IDs, st *Stats) *runTable {
	return &runTable{shard: shard, pins: pins, ids: ids, st: st, m: map[string]*run{}}
}

func (t *runTable) len() int { return len(t.m) }

// open returns run id, starting it (pinned at pin, unless a run store
// is configured) if it is new. With a store, a run this shard does not hold
// is looked up there first (normally loaded already by the batch's
// prefetch).
func (t *runTable) open(id string, job lineage.Job, pin string) *run {
	r := t.m[id]
	if r != nil {
		return r
	}
	if t.unpinned {
		if r = t.evicted[id]; r != nil {
			delete(t.evicted, id)
		} else if _, ok := t.absent[id]; ok {
			delete(t.absent, id)
		} else {
			r = t.fetch(id)
		}
		if r != nil {
			t.m[id] = r
			return r
		}
		r = &run{Run: semantics.StartRun(id, job, t.ids.Job(job))}
		t.m[id] = r
		return r
	}
	r = &run{Run: semantics.StartRun(id, job, t.ids.Job(job)), pin: pin}
	t.m[id] = r
	t.pins.Add(r.pin)
	return r
}

// emitPin is the pin of an emission of r made by the current record
// (prevFull): the run's own pin, unless it holds none (handed off by a
// parent, or a run store is configured).
func (t *runTable) emitPin(r *run, prevFull string) string {
	if r.handoff || t.unpinned {
		return prevFull
	}
	return r.pin
}

func (t *runTable) markDirty(r *run) {
	if !r.dirty {
		r.dirty = true
		t.dirty = append(t.dirty, r)
	}
}

// release releases the pin of an open run that ends or expires (a run
// handed off by a parent shard holds none).
func (t *runTable) release(r *run) {
	if !r.handoff && !t.unpinned {
		t.pins.Release(r.pin)
	}
}

// evict keeps the run table within maxRuns: past it, the runs with the
// oldest last event (a sixteenth of the budget at once) are forgotten as
// the run timeout would forget them, but keep; open ones are counted.
func (t *runTable) evict(keep *run) {
	if t.maxRuns <= 0 || len(t.m) <= t.maxRuns {
		return
	}
	all := make([]*run, 0, len(t.m))
	for _, r := range t.m {
		if r != keep {
			all = append(all, r)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].lastArrival < all[j].lastArrival })
	n := len(t.m) - t.maxRuns + max(t.maxRuns/16, 1)
	for _, r := range all[:min(n, len(all))] {
		if t.unpinned {
			// Nothing lost: the store holds the run (or will, at the
			// barrier: until then it is kept in evicted).
			if r.dirty {
				if t.evicted == nil {
					t.evicted = map[string]*run{}
				}
				t.evicted[r.ID] = r
			}
		} else if r.Status == semantics.StatusOpen {
			t.st.Budget.RunsEvicted.Add(1)
			t.release(r)
		}
		delete(t.m, r.ID)
		r.dirty = true // never re-written
		t.dropped = append(t.dropped, r.ID)
	}
}

// beginRun returns the run of the current RunEvent (arriving at
// arrival), started if new and marked changed, and keeps the run table
// within its budget (another run may be evicted, never this one).
func (s *Shard) beginRun(r *run, arrival int64) *run {
	r.lastArrival = arrival
	if r.Status == semantics.StatusStreaming {
		// Holds no pin: what it emits replays from its own record.
		r.pin = s.prevFull
	}
	s.runs.markDirty(r)
	s.runs.evict(r)
	return r
}

// expire forgets runs with no event for timeout (Unix ms of arrival time,
// up to maxArrival); open ones are counted as expired.
func (t *runTable) expire(maxArrival, timeout int64) {
	if maxArrival-t.lastGC < timeout/64 && t.lastGC != 0 {
		return
	}
	t.lastGC = maxArrival
	for id, r := range t.m {
		if maxArrival-r.lastArrival <= timeout {
			continue
		}
		if r.Status == semantics.StatusOpen {
			// Never any edge: the run is only forgotten. A handed-off run
			// expires on every child its events do not reach (normal
			// after a split): counted apart from runs that never ended.
			if r.handoff {
				t.st.HandoffRunsExpired.Add(1)
			} else {
				t.st.RunsExpired.Add(1)
			}
			t.release(r)
		}
		delete(t.m, id)
		r.dirty = true // never re-written
		t.dropped = append(t.dropped, id)
	}
}

// writeTo adds to batch the deletion of the runs forgotten and the state
// of the runs changed since the last barrier.
func (t *runTable) writeTo(batch *pebble.Batch) {
	for _, id := range t.dropped {
		t.keyBuf = checkpoint.AppendRunKey(t.keyBuf[:0], t.shard, id)
		_ = batch.Delete(t.keyBuf, nil)
	}
	// In key order (see dedupSet.writeTo). A run id twice in dirty (a run
	// forgotten and started again) is written once: the one in t.m.
	slices.SortFunc(t.dirty, func(a, b *run) int { return strings.Compare(a.ID, b.ID) })
	for _, r := range t.dirty {
		r.dirty = false
		if t.m[r.ID] != r {
			continue
		}
		// Encoded once for the value, and kept so in memory until the
		// run's next event (a run's list is larger than its encoding).
		r.RV.Props.Compact()
		t.valBuf = appendRun(t.valBuf[:0], r)
		t.keyBuf = checkpoint.AppendRunKey(t.keyBuf[:0], t.shard, r.ID)
		_ = batch.Set(t.keyBuf, t.valBuf, nil)
	}
}

// afterCommit forgets what the barrier made durable.
func (t *runTable) afterCommit() {
	t.dirty = t.dirty[:0]
	t.dropped = t.dropped[:0]
}

// load restores run id from its s/<shard>/r/ value (resume).
func (t *runTable) load(id string, v []byte) error {
	r, err := decodeRun(id, v, t.ids)
	if err != nil {
		return err
	}
	t.m[id] = r
	if r.Status == semantics.StatusOpen && !r.handoff && !t.unpinned {
		t.pins.Add(r.pin)
	}
	return nil
}
