package source

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/lineageflow/lineageflow/processor"
)

// Stats are the KCL side's counters and gauges: whether the KCL worker
// runs, each leased shard's lag and checkpoints, leases lost, and the
// parents' handoffs a child shard waits for. The pipeline's figures are
// [processor.Stats]. Every field is safe for concurrent use; writers are
// one atomic operation per KCL call (GetRecords batch, checkpoint), never
// per record. The exporter (ops/metrics) and /readyz read them.
type Stats struct {
	Checkpoints atomic.Int64 // KCL checkpoints written
	LeasesLost  atomic.Int64 // leases found taken by another worker (lease guard or watcher)
	// HandoffsMissing: parents whose handoff a child did not find (or
	// could not decode); the child went on without it.
	HandoffsMissing atomic.Int64
	// HandoffsWaiting: child shards waiting right now for a parent's
	// handoff (or their parents' list) that cannot be read; they process
	// nothing and the worker is not ready. HandoffReadFails: the failed
	// reads (each retried, never given up).
	HandoffsWaiting  atomic.Int64
	HandoffReadFails atomic.Int64

	running atomic.Bool
	shards  sync.Map // shard id -> *shardLag
}

type shardLag struct {
	behind     atomic.Int64 // MillisBehindLatest of the last GetRecords, -1 before the first
	checkpoint atomic.Int64 // unix ns of the last KCL checkpoint written by this worker, 0: none
	pending    atomic.Int64 // unix ns of the first read with records since that checkpoint, 0: none
	since      atomic.Int64 // unix ns when this worker started the shard
}

// Running reports whether the KCL worker is started and not shutting
// down: it holds leases or is waiting for some.
func (s *Stats) Running() bool { return s.running.Load() }

func (s *Stats) setRunning(v bool) { s.running.Store(v) }

func (s *Stats) lag(shard string) *shardLag {
	if v, ok := s.shards.Load(shard); ok {
		return v.(*shardLag)
	}
	l := &shardLag{}
	l.behind.Store(-1)
	v, _ := s.shards.LoadOrStore(shard, l)
	return v.(*shardLag)
}

// shardStarted resets the lag of a shard this worker (re)starts at now.
func (s *Stats) shardStarted(shard string, now time.Time) {
	s.shards.Delete(shard)
	s.lag(shard).since.Store(now.UnixNano())
}

// observeRead records a GetRecords batch read at now: its
// MillisBehindLatest and, if it had records, that records wait for a
// checkpoint.
func (s *Stats) observeRead(shard string, millisBehind int64, records int, now time.Time) {
	l := s.lag(shard)
	l.behind.Store(millisBehind)
	if records > 0 && l.pending.Load() == 0 {
		l.pending.CompareAndSwap(0, now.UnixNano())
	}
}

// observeCheckpoint records a KCL checkpoint written for shard at now.
func (s *Stats) observeCheckpoint(shard string, now time.Time) {
	s.Checkpoints.Add(1)
	l := s.lag(shard)
	l.checkpoint.Store(now.UnixNano())
	l.pending.Store(0)
}

// Snapshot returns the counters by name, for logs and tests (the names
// of [processor.Stats.Snapshot] do not overlap them).
func (s *Stats) Snapshot() map[string]int64 {
	return map[string]int64{
		"checkpoints": s.Checkpoints.Load(), "leases_lost": s.LeasesLost.Load(),
		"handoffs_missing": s.HandoffsMissing.Load(), "handoffs_waiting": s.HandoffsWaiting.Load(),
		"handoff_read_failures": s.HandoffReadFails.Load(),
	}
}

// ShardStatus is one leased shard as an exporter sees it: the KCL side's
// lag and checkpoints, and the pipeline's outbox.
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

// status returns shard sh as an exporter sees it (it takes the drainer's
// lock only).
func (s *Stats) status(sh *processor.Shard) ShardStatus {
	ps := sh.Status()
	l := s.lag(ps.ID)
	ss := ShardStatus{ID: ps.ID, MillisBehindLatest: l.behind.Load(), Since: time.Unix(0, l.since.Load()),
		OutboxDepth: ps.OutboxDepth, Backpressured: ps.Backpressured}
	if ns := l.checkpoint.Load(); ns != 0 {
		ss.LastCheckpoint = time.Unix(0, ns)
	}
	if ns := l.pending.Load(); ns != 0 {
		ss.Uncheckpointed = time.Unix(0, ns)
	}
	return ss
}
