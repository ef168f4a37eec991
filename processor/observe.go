package processor

import (
	"sort"
	"sync/atomic"
	"time"
)

// This file holds what an exporter (ops/metrics) reads at scrape time and
// that the counters of [Stats] do not give: a shard's outbox and the
// buckets of the barrier-duration histogram.

// BarrierBuckets are the upper bounds of the barrier-duration histogram
// read by [Stats.BarrierHistogram].
var BarrierBuckets = []time.Duration{
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// observed is the exporter-only part of [Stats].
type observed struct {
	barrier [14]atomic.Int64 // per BarrierBuckets bound, then +Inf (not cumulative)
}

func (s *Stats) observeBarrierBucket(d time.Duration) {
	i := sort.Search(len(BarrierBuckets), func(i int) bool { return d <= BarrierBuckets[i] })
	s.obs.barrier[i].Add(1)
}

// BarrierHistogram returns the barrier-duration histogram: cumulative
// counts per bound of [BarrierBuckets], the total count and the sum of
// durations in seconds.
func (s *Stats) BarrierHistogram() (cumulative []uint64, count uint64, sumSeconds float64) {
	cumulative = make([]uint64, len(BarrierBuckets))
	var c uint64
	for i := range BarrierBuckets {
		c += uint64(s.obs.barrier[i].Load())
		cumulative[i] = c
	}
	c += uint64(s.obs.barrier[len(BarrierBuckets)].Load())
	return cumulative, c, time.Duration(s.BarrierNanos.Load()).Seconds()
}

// ShardStatus is what the pipeline knows of a shard for an exporter (the
// reading side adds its lag and checkpoints: source.ShardStatus).
type ShardStatus struct {
	ID string
	// OutboxDepth is the number of sealed-window entries not yet
	// acknowledged by the sink.
	OutboxDepth int
	// Backpressured: sealing waits for outbox room (intake blocked).
	Backpressured bool
}

// Status returns the shard as an exporter sees it. Safe for concurrent
// use (it takes the drainer's lock only).
func (s *Shard) Status() ShardStatus {
	bp, _ := s.Backpressured()
	return ShardStatus{ID: s.id, OutboxDepth: s.drain.pending(), Backpressured: bp}
}

// CheckpointNotWritten tells the shard that the checkpoint [Shard.Checkpoint]
// returned was not written (lease guard refused, or the KCL call failed):
// the next call returns it again.
func (s *Shard) CheckpointNotWritten() { s.reported = "" }

// OpenRuns returns how many runs the shard holds (open, or closed and not
// yet expired).
func (s *Shard) OpenRuns() int { return s.runs.len() }
