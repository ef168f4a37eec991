package processor

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds what an exporter (ops/metrics, the /readyz probe)
// reads at scrape time and that the counters of [Stats] do not give: the
// worker's state, the shards it holds and their lag, and the buckets of the
// barrier-duration histogram. Writers are one atomic store per KCL call
// (GetRecords batch, checkpoint), never per record.

// BarrierBuckets are the upper bounds of the barrier-duration histogram
// read by [Stats.BarrierHistogram].
var BarrierBuckets = []time.Duration{
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// observed is the exporter-only part of [Stats].
type observed struct {
	running atomic.Bool
	barrier [14]atomic.Int64 // per BarrierBuckets bound, then +Inf (not cumulative)
	shards  sync.Map         // shard id -> *shardLag
}

type shardLag struct {
	behind     atomic.Int64 // MillisBehindLatest of the last GetRecords, -1 before the first
	checkpoint atomic.Int64 // unix ns of the last KCL checkpoint written by this worker, 0: none
	pending    atomic.Int64 // unix ns of the first read with records since that checkpoint, 0: none
	since      atomic.Int64 // unix ns when this worker started the shard
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

// Running reports whether the worker's KCL worker is started and not
// shutting down: it holds leases or is waiting for some.
func (s *Stats) Running() bool { return s.obs.running.Load() }

// SetRunning records whether the reading side (the KCL worker) is started
// and not shutting down.
func (s *Stats) SetRunning(v bool) { s.obs.running.Store(v) }

func (s *Stats) lag(shard string) *shardLag {
	if v, ok := s.obs.shards.Load(shard); ok {
		return v.(*shardLag)
	}
	l := &shardLag{}
	l.behind.Store(-1)
	v, _ := s.obs.shards.LoadOrStore(shard, l)
	return v.(*shardLag)
}

// ShardStarted resets the lag of a shard this worker (re)starts at now.
func (s *Stats) ShardStarted(shard string, now time.Time) {
	s.obs.shards.Delete(shard)
	s.lag(shard).since.Store(now.UnixNano())
}

// ObserveRead records a GetRecords batch read at now: its
// MillisBehindLatest and, if it had records, that records wait for a
// checkpoint.
func (s *Stats) ObserveRead(shard string, millisBehind int64, records int, now time.Time) {
	l := s.lag(shard)
	l.behind.Store(millisBehind)
	if records > 0 && l.pending.Load() == 0 {
		l.pending.CompareAndSwap(0, now.UnixNano())
	}
}

// ObserveCheckpoint records a KCL checkpoint written for shard at now.
func (s *Stats) ObserveCheckpoint(shard string, now time.Time) {
	s.Checkpoints.Add(1)
	l := s.lag(shard)
	l.checkpoint.Store(now.UnixNano())
	l.pending.Store(0)
}

// ShardStatus is one leased shard as an exporter sees it.
type ShardStatus struct {
	ID string
	// MillisBehindLatest is what the last GetRecords reported (-1: no read yet).
	MillisBehindLatest int64
	// LastCheckpoint is when this worker last wrote the shard's KCL
	// checkpoint (zero: not yet); Since is when it started the shard.
	LastCheckpoint, Since time.Time
	// Uncheckpointed is when the first records read since the last
	// checkpoint were read (zero: everything read is checkpointed). Its
	// age is about how much a restart would replay; an idle, checkpointed
	// shard has none.
	Uncheckpointed time.Time
	// OutboxDepth is the number of sealed-window entries not yet
	// acknowledged by the sink.
	OutboxDepth int
	// Backpressured: sealing waits for outbox room (intake blocked).
	Backpressured bool
}

// Status returns the shard as an exporter sees it. Safe for concurrent
// use (it takes the drainer's lock only).
func (s *Shard) Status() ShardStatus {
	l := s.st.lag(s.id)
	bp, _ := s.Backpressured()
	ss := ShardStatus{ID: s.id, MillisBehindLatest: l.behind.Load(),
		Since: time.Unix(0, l.since.Load()), OutboxDepth: s.drain.pending(), Backpressured: bp}
	if ns := l.checkpoint.Load(); ns != 0 {
		ss.LastCheckpoint = time.Unix(0, ns)
	}
	if ns := l.pending.Load(); ns != 0 {
		ss.Uncheckpointed = time.Unix(0, ns)
	}
	return ss
}

// CheckpointNotWritten tells the shard that the checkpoint [Shard.Checkpoint]
// returned was not written (lease guard refused, or the KCL call failed):
// the next call returns it again.
func (s *Shard) CheckpointNotWritten() { s.reported = "" }

// OpenRuns returns how many runs the shard holds (open, or closed and not
// yet expired).
func (s *Shard) OpenRuns() int { return s.runs.len() }
