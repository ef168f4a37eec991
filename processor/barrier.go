package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
)

// barrier writes one synced Pebble batch with the window deltas, the
// outbox entries of the windows sealed now (all open ones if sealAll), run
// state, dedup keys, dead letters and the position, then updates the
// in-memory view. boundary says the last processed record ends its
// sequence number (all sub-records processed). Each phase adds its keys to
// the batch in this order; nothing is durable before the commit, and a
// failure after the batch is started fails the shard.
func (s *Shard) barrier(ctx context.Context, sealAll, boundary bool) error {
	if s.failed != nil {
		return s.failed
	}
	start := s.cfg.Clock()
	sealing := s.windows.sealable(sealAll, s.wm)
	if err := s.awaitOutboxSpace(ctx, sealing); err != nil {
		return err
	}
	s.runs.expire(s.maxArrival, s.cfg.Semantics.RunTimeout.Milliseconds())
	if s.cfg.RunStore.Store != nil {
		// Before the commit that moves the durable position (and so
		// the KCL checkpoint) past the records these updates fold.
		if err := s.saveRuns(ctx); err != nil {
			return s.fail(err)
		}
	}

	// Sized for what the last barrier wrote: a barrier's batch is often
	// megabytes (sealed windows, run state), which growing by doubling
	// copies over and over.
	batch := s.db.NewBatchWithSize(s.batchHint)
	defer func() { _ = batch.Close() }()

	fold := s.windows.writeDeltas(batch, sealing)
	outbox, entries, err := s.writeSealed(batch, sealing, fold)
	if err != nil {
		return s.fail(err)
	}
	s.runs.writeTo(batch)
	if err := s.dedup.writeTo(batch, s.maxArrival-s.cfg.Dedup.TTL.Milliseconds()); err != nil {
		return s.fail(fmt.Errorf("dedup expiry: %w", err))
	}
	if err := s.expireDeadLetters(batch); err != nil {
		return s.fail(fmt.Errorf("dead-letter retention: %w", err))
	}
	s.dead.writeTo(batch)
	if s.arc != nil {
		s.arc.writeTo(batch)
	}
	durable := s.writePosition(batch, boundary)

	s.batchHint = min(batch.Len()+batch.Len()/8, maxBatchHint)
	if err := batch.Commit(pebble.Sync); err != nil {
		return s.fail(fmt.Errorf("barrier commit: %w", err))
	}
	s.afterCommit(durable, sealing, outbox, entries, start)
	return nil
}

// maxBatchHint caps the initial size of a barrier's batch.
const maxBatchHint = 64 << 20

// awaitOutboxSpace blocks, when windows are about to seal, while the
// outbox is full: the backpressure bound (invariant 7).
func (s *Shard) awaitOutboxSpace(ctx context.Context, sealing sealSet) error {
	if len(sealing) == 0 {
		return nil
	}
	return s.drain.waitSpace(ctx, s.cfg.Drain.OutboxCap)
}

// writeSealed folds each sealing window with what Pebble holds, adds its
// outbox entries and the deletion of its window state to batch, and
// returns the new outbox sequences and their content (for the drain).
func (s *Shard) writeSealed(batch *pebble.Batch, sealing sealSet, fold sealFold) ([]uint64, []*cachedEntry, error) {
	var outbox []uint64
	var entries []*cachedEntry
	for _, b := range sealing {
		sw, err := s.windows.fold(batch, b, fold)
		if err != nil {
			return nil, nil, err
		}
		n := s.writeOutbox(batch, &sw, &outbox, &entries)
		var last uint64
		if n > 0 {
			last = outbox[len(outbox)-1]
		}
		s.windows.sealed(&sw, n, last)
	}
	return outbox, entries, nil
}

// writePosition adds the shard's position to batch and returns the
// durable sequence number it records.
func (s *Shard) writePosition(batch *pebble.Batch, boundary bool) string {
	durable := s.durable
	if boundary {
		durable = s.curSeq
	} else if s.prevFull != "" {
		durable = s.prevFull
	}
	wmv, wmSet := s.wm.Value()
	pos := checkpoint.Position{Last: s.last, Durable: durable, Watermark: wmv, WMSet: wmSet,
		MaxArrival: s.maxArrival, NextOutbox: s.nextOutbox}
	_ = batch.Set(checkpoint.PosKey(s.id), checkpoint.AppendPosition(nil, &pos), nil)
	return durable
}

// afterCommit updates the in-memory view once the barrier is durable and
// hands the new outbox entries to the drain.
func (s *Shard) afterCommit(durable string, sealing sealSet, outbox []uint64, entries []*cachedEntry, start time.Time) {
	s.durable = durable
	s.windows.afterCommit(sealing)
	s.runs.afterCommit()
	s.dedup.afterCommit()
	s.dead.afterCommit()
	s.st.WindowsSealed.Add(int64(len(sealing)))
	s.st.OutboxWritten.Add(int64(len(outbox)))
	s.drain.push(outbox, entries)
	if s.arc != nil {
		s.archiveAfterCommit()
	}
	s.lastBarrier = s.cfg.Clock()
	s.st.observeBarrier(s.lastBarrier.Sub(start))
}
