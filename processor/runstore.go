package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
)

// Shared open-run store (DESIGN.md, Processor, "Shared run store"). Without
// it a run's state lives only in its worker's Pebble, so an open run pins
// its shard's KCL checkpoint from its first record until it ends or
// expires: a new owner without that disk must re-read the run's earlier
// events. With a [RunStore] (DynamoDB, source.DynamoRunStore), shared by
// every worker of the application:
//
//   - at every barrier, the runs changed since the last one are written to
//     the store BEFORE the barrier's Pebble commit, which is what moves the
//     durable position and so the KCL checkpoint: a checkpoint never passes
//     a record whose run update is not durable in the store;
//   - open runs never pin the checkpoint: it follows the acknowledged
//     windows only;
//   - a worker that meets a runId it does not hold loads it from the store
//     before processing: one batched read per Process call for all the
//     unknown runIds of its records, not one per record;
//   - RunTimeout is a retention (days): local state is forgotten after it,
//     and the store's copy expires with DynamoDB TTL at the same age.
//
// The store may be AHEAD of the shard's checkpoint (its run state folds
// records that a new owner replays). Folding a record twice into a run is
// idempotent (set unions, min/max, a status that only moves forward), but a
// committed run's edges were emitted into a window that the replay must
// fill again: a run loaded from the store therefore emits everything it
// holds on its next event (semantics.Run.Reemit), not only what that event adds.

// RunStore is a run-state store shared by the workers of one application.
// Implementations must be safe for concurrent use (every shard of a worker
// calls it), retry what the service leaves unprocessed, and return
// promptly once ctx is done.
type RunStore interface {
	// Get returns the stored value of each id the store holds (the
	// others are absent from the map).
	Get(ctx context.Context, ids []string) (map[string][]byte, error)
	// Put makes every item durable before it returns nil.
	Put(ctx context.Context, items []RunItem) error
}

// RunItem is one run's state as the store keeps it.
type RunItem struct {
	ID    string // the runId (the store adds the application)
	Shard string // the shard that wrote it last (diagnostics)
	// Value is the processor's encoding of the run (opaque to the store).
	Value []byte
	// Status is "open", "committed" or "closed" (readable by an operator).
	Status string
	// Job is the run's job ("namespace/name", readable by an operator).
	Job string
	// Expires is when the store may delete the item (DynamoDB TTL).
	Expires time.Time
}

// MaxRunItemBytes bounds a run's encoded value in the store: DynamoDB's
// item limit is 400 KB (names and values of every attribute), and the
// other attributes take well under 1 KB.
const MaxRunItemBytes = 390_000

// Run store defaults.
const (
	// DefaultStoreRunTimeout is the run retention with a store.
	DefaultStoreRunTimeout = 72 * time.Hour
	// DefaultRunStoreTimeout bounds one barrier's write or one batch's
	// read, retries included.
	DefaultRunStoreTimeout = 30 * time.Second
)

// prefetchRuns loads from the store the runs of recs that this shard does
// not hold: one Get for all of them. Records are decoded twice with a
// store (here, and when processed); a record that does not decode is
// left to record() to refuse.
func (s *Shard) prefetchRuns(ctx context.Context, recs []Record) error {
	t := s.runs
	var ids []string
	seen := map[string]struct{}{}
	clear(t.absent)
	for i := range recs {
		r := &recs[i]
		if r.Refused != nil || (s.resume.Seq != "" && s.skipResumed(r)) {
			continue
		}
		if err := s.peekDec.Decode(r.Data, &s.peekEv); err != nil || s.peekEv.Kind != lineage.KindRun {
			continue
		}
		id := s.peekEv.RunID
		if _, ok := t.m[id]; ok {
			continue
		}
		if x := t.evicted[id]; x != nil {
			// Evicted since the last barrier with changes not yet in
			// the store: the local copy is the newest.
			t.m[id] = x
			delete(t.evicted, id)
			continue
		}
		if _, ok := seen[id]; ok {
			continue
		}
		seen[id] = struct{}{}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.RunStore.Timeout)
	start := time.Now()
	got, err := s.cfg.RunStore.Store.Get(cctx, ids)
	cancel()
	s.st.observeRunStoreRead(len(ids), len(got), time.Since(start))
	s.st.runStoreResult(err)
	if err != nil {
		return fmt.Errorf("processor: %s: read %d runs from the run store: %w", s.id, len(ids), err)
	}
	if t.absent == nil {
		t.absent = make(map[string]struct{}, len(ids))
	}
	for _, id := range ids {
		v, ok := got[id]
		if !ok {
			t.absent[id] = struct{}{}
			continue
		}
		if r := s.storedRun(id, v); r != nil {
			t.m[id] = r
		} else {
			t.absent[id] = struct{}{}
		}
	}
	return nil
}

// storedRun decodes the stored value v of run id, nil if it cannot be read
// (counted, logged: the run starts afresh here) or is past the retention
// (DynamoDB TTL deletes lazily: such an item may still be read).
func (s *Shard) storedRun(id string, v []byte) *run {
	r, err := decodeRun(id, v, s.ids)
	if err != nil {
		s.st.RunStoreCorrupt.Add(1)
		s.log.Warn("run store: unreadable run, starting it afresh", "run", id, "err", err)
		return nil
	}
	if s.maxArrival-r.lastArrival > s.cfg.Semantics.RunTimeout.Milliseconds() {
		return nil
	}
	r.handoff, r.pin, r.Reemit = false, "", true
	// Not the first to go if the table is over MaxRuns before its event.
	r.lastArrival = max(r.lastArrival, s.maxArrival)
	return r
}

// fetchRun reads one run the prefetch did not load (evicted by MaxRuns
// inside the batch before its event): rare, so a read of its own. A store
// that does not answer fails the shard (starting the run afresh would
// overwrite its stored state).
func (s *Shard) fetchRun(id string) *run {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RunStore.Timeout)
	defer cancel()
	start := time.Now()
	got, err := s.cfg.RunStore.Store.Get(ctx, []string{id})
	s.st.observeRunStoreRead(1, len(got), time.Since(start))
	s.st.runStoreResult(err)
	s.st.RunStoreSingleReads.Add(1)
	if err != nil {
		panic(&checkpoint.FatalError{Msg: fmt.Sprintf("run store: read run %q: %v", id, err)})
	}
	if v, ok := got[id]; ok {
		return s.storedRun(id, v)
	}
	return nil
}

// saveRuns writes the runs changed since the last barrier to the store
// (before the barrier's commit). Runs forgotten since (expired, evicted)
// are written too when they changed: the store must not miss an update
// whose record the checkpoint is about to pass.
func (s *Shard) saveRuns(ctx context.Context) error {
	t := s.runs
	if len(t.dirty) == 0 {
		return nil
	}
	items := make([]RunItem, 0, len(t.dirty))
	idx := make(map[string]int, len(t.dirty))
	retain := s.cfg.Semantics.RunTimeout
	for _, r := range t.dirty {
		if cur := t.m[r.ID]; cur != nil && cur != r {
			continue // an older copy (evicted, then loaded again): cur is in the list too
		}
		v := appendRun(nil, r)
		if len(v) > MaxRunItemBytes {
			v = s.cutRun(r)
		}
		it := RunItem{ID: r.ID, Shard: s.id, Value: v, Status: r.Status.String(),
			Job:     r.Job.Namespace + "/" + r.Job.Name,
			Expires: time.UnixMilli(r.lastArrival).Add(retain)}
		if i, ok := idx[r.ID]; ok {
			items[i] = it
			continue
		}
		idx[r.ID] = len(items)
		items = append(items, it)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.RunStore.Timeout)
	start := time.Now()
	err := s.cfg.RunStore.Store.Put(cctx, items)
	cancel()
	s.st.observeRunStoreWrite(len(items), time.Since(start))
	s.st.runStoreResult(err)
	if err != nil {
		return fmt.Errorf("processor: %s: write %d runs to the run store: %w", s.id, len(items), err)
	}
	t.evicted = nil
	return nil
}

// cutRun encodes r for the store within MaxRunItemBytes: its column pairs
// and explicit-lineage pairs go first, then datasets from the end of its lists, counted in
// lineage_budget_total{budget="run_store_item"} (the local copy keeps
// them: only a new owner after a shard move misses them).
func (s *Shard) cutRun(r *run) []byte {
	c := *r
	c.Cols, c.Pairs = nil, nil
	v := appendRun(nil, &c)
	cut := int64(len(r.Cols) + len(r.Pairs))
	for len(v) > MaxRunItemBytes && len(c.Inputs)+len(c.Outputs) > 0 {
		// Drop in proportion to the excess, at least one.
		n := max(1, (len(c.Inputs)+len(c.Outputs))*(len(v)-MaxRunItemBytes)/len(v)+1)
		for ; n > 0 && len(c.Outputs) > 0; n-- {
			c.Outputs = c.Outputs[:len(c.Outputs)-1]
			cut++
		}
		for ; n > 0 && len(c.Inputs) > 0; n-- {
			c.Inputs = c.Inputs[:len(c.Inputs)-1]
			cut++
		}
		c.RV.Reads, c.RV.Writes = nil, nil
		v = appendRun(nil, &c)
	}
	s.st.Budget.RunStoreCut.Add(cut)
	return v
}
