package processor

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
)

// Stats are the pipeline's counters and gauges (all the shards of a
// worker). Every field is safe for concurrent use; an exporter (ops/metrics)
// reads them with Load. Counts of records refused for a reason are in
// [Stats.Invalid]. What the reading side counts (checkpoints, leases, lag)
// is not here: the KCL worker keeps its own (source.Stats).
type Stats struct {
	// Archive (archive.go): events and dead letters added as pending
	// entries, cuts made, objects and bytes put per table (0: events,
	// 1: dead letters), bytes pending in Pebble, failed cut attempts, and
	// cuts taken over whose rows differ from their marker (never expected).
	ArchiveEvents        atomic.Int64
	ArchiveDeadLetters   atomic.Int64
	ArchiveCuts          atomic.Int64
	ArchiveObjects       [2]atomic.Int64
	ArchiveBytes         [2]atomic.Int64
	ArchivePendingBytes  atomic.Int64
	ArchiveErrors        atomic.Int64
	ArchiveCutMismatches atomic.Int64
	archiveOldest        struct {
		sync.Mutex
		m map[string]time.Time
	}

	Records      atomic.Int64 // user records processed (after KPL de-aggregation)
	Skipped      atomic.Int64 // redelivered records at or before the resumed position
	Events       atomic.Int64 // records decoded into events
	Duplicates   atomic.Int64 // valid records byte-identical to one seen within the dedup TTL
	DedupLookups atomic.Int64 // Pebble Gets of the dedup set's old tier (fingerprint matches)
	// Shared dedup tier (shared.go): keys claimed, duplicates only the
	// shared tier knew (included in Duplicates: the local tier's shortfall),
	// records decided by the local tier alone because a claim failed, and
	// the claims' round trips and their total time.
	SharedDedupClaims     atomic.Int64
	SharedDedupDuplicates atomic.Int64
	SharedDedupFallbacks  atomic.Int64
	SharedDedupCalls      atomic.Int64
	SharedDedupNanos      atomic.Int64
	// NamesNormalized counts the events one of whose names the guard
	// rewrote to Unicode NFC (lineage.Guard).
	NamesNormalized atomic.Int64
	Late            atomic.Int64 // records whose window was already sealed (still written)
	WindowsSealed   atomic.Int64
	EdgesEmitted    atomic.Int64 // edges written to outbox entries
	VerticesEmitted atomic.Int64
	// RunRecordsEmitted counts the Run vertices among VerticesEmitted
	// (a run has no edge).
	RunRecordsEmitted atomic.Int64
	RunsExpired       atomic.Int64 // open runs dropped after the run timeout
	// RefreshLane counts the records sent to a refresh window (refresh.go):
	// stamp refreshes collapsed over PipelineConfig.Window.Refresh.
	RefreshLane atomic.Int64
	// Budget counts what the budgets did (budget.go).
	Budget BudgetStats
	// Shard split/merge (handoff.go): runs written to the handoff at shard
	// end, runs loaded from parents' handoffs, and handed-off runs still
	// open when they expired on a child (no edges; normal for the runs
	// whose events went to the sibling).
	RunsHandedOff      atomic.Int64
	RunsHandedIn       atomic.Int64
	HandoffRunsExpired atomic.Int64
	// Run store (runstore.go): runs asked for and found, items written,
	// the calls and their total time, reads of one run outside the
	// batch prefetch, and stored runs that could not be decoded.
	RunStoreReads       atomic.Int64
	RunStoreHits        atomic.Int64
	RunStoreWrites      atomic.Int64
	RunStoreReadCalls   atomic.Int64
	RunStoreReadNanos   atomic.Int64
	RunStoreWriteCalls  atomic.Int64
	RunStoreWriteNanos  atomic.Int64
	RunStoreSingleReads atomic.Int64
	RunStoreCorrupt     atomic.Int64
	Barriers            atomic.Int64
	BarrierNanos        atomic.Int64 // total time spent in barriers
	BarrierMaxNanos     atomic.Int64
	OutboxWritten       atomic.Int64
	OutboxAcked         atomic.Int64
	SinkErrors          atomic.Int64 // failed WriteBatch calls (each retried)
	// ItemsParked counts the vertices and edges set apart from such
	// entries and parked one by one (isolate.go); the rest was written.
	ItemsParked atomic.Int64

	backpressured  atomic.Int64 // shards blocked on a full outbox right now
	sharedDegraded atomic.Bool  // the last shared dedup claim failed
	// runStoreFailing: Unix ns of the first run store error since the
	// last success, 0 when answering (health.go).
	runStoreFailing atomic.Int64
	obs             observed // read by exporters: observe.go

	invalid sync.Map        // lineage.Reason -> *atomic.Int64
	lenient [8]atomic.Int64 // by bit of lineage.Leniency
}

// Lenient returns the number of events decoded with each leniency (by
// metric label, see lineage.Leniencies).
func (s *Stats) Lenient() map[string]int64 {
	out := map[string]int64{}
	for _, l := range lineage.Leniencies {
		out[l.Name] = s.lenient[bitIndex(l.L)].Load()
	}
	return out
}

func (s *Stats) addLenient(l lineage.Leniency) {
	for l != 0 {
		b := l & -l
		s.lenient[bitIndex(b)].Add(1)
		l &^= b
	}
}

func bitIndex(b lineage.Leniency) int {
	i := 0
	for b > 1 {
		b >>= 1
		i++
	}
	return i
}

// Invalid returns the number of refused records per reason.
func (s *Stats) Invalid() map[lineage.Reason]int64 {
	out := map[lineage.Reason]int64{}
	s.invalid.Range(func(k, v any) bool {
		out[k.(lineage.Reason)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// InvalidTotal returns the number of refused records.
func (s *Stats) InvalidTotal() int64 {
	var n int64
	for _, v := range s.Invalid() {
		n += v
	}
	return n
}

func (s *Stats) addInvalid(r lineage.Reason) {
	v, ok := s.invalid.Load(r)
	if !ok {
		v, _ = s.invalid.LoadOrStore(r, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

// IsBackPressured reports whether any shard of the worker is blocked because
// its outbox is full (the graph is slow or down): the analogue of Flink's
// isBackPressured.
func (s *Stats) IsBackPressured() bool { return s.backpressured.Load() > 0 }

// SharedDedupDegraded reports whether the last claim on the shared dedup
// tier failed: the local tier decides alone until one succeeds.
func (s *Stats) SharedDedupDegraded() bool { return s.sharedDegraded.Load() }

func (s *Stats) observeSharedClaim(d time.Duration) {
	s.SharedDedupCalls.Add(1)
	s.SharedDedupNanos.Add(int64(d))
}

func (s *Stats) observeRunStoreRead(asked, found int, d time.Duration) {
	s.RunStoreReadCalls.Add(1)
	s.RunStoreReadNanos.Add(int64(d))
	s.RunStoreReads.Add(int64(asked))
	s.RunStoreHits.Add(int64(found))
}

func (s *Stats) observeRunStoreWrite(items int, d time.Duration) {
	s.RunStoreWriteCalls.Add(1)
	s.RunStoreWriteNanos.Add(int64(d))
	s.RunStoreWrites.Add(int64(items))
}

func (s *Stats) observeBarrier(d time.Duration) {
	s.Barriers.Add(1)
	s.BarrierNanos.Add(int64(d))
	s.observeBarrierBucket(d)
	for {
		cur := s.BarrierMaxNanos.Load()
		if int64(d) <= cur || s.BarrierMaxNanos.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// Snapshot returns the counters by name, for logs and tests.
func (s *Stats) Snapshot() map[string]int64 {
	m := map[string]int64{
		"records": s.Records.Load(), "skipped": s.Skipped.Load(), "events": s.Events.Load(),
		"duplicates": s.Duplicates.Load(), "dedup_lookups": s.DedupLookups.Load(), "late": s.Late.Load(), "windows_sealed": s.WindowsSealed.Load(),
		"edges_emitted": s.EdgesEmitted.Load(), "vertices_emitted": s.VerticesEmitted.Load(),
		"runs_expired": s.RunsExpired.Load(), "refresh_lane": s.RefreshLane.Load(), "barriers": s.Barriers.Load(),
		"runs_handed_off": s.RunsHandedOff.Load(), "runs_handed_in": s.RunsHandedIn.Load(),
		"handoff_runs_expired": s.HandoffRunsExpired.Load(),
		"outbox_written":       s.OutboxWritten.Load(), "outbox_acked": s.OutboxAcked.Load(),
		"sink_errors": s.SinkErrors.Load(),
		"invalid":     s.InvalidTotal(), "items_parked": s.ItemsParked.Load(),
		"shared_dedup_claims": s.SharedDedupClaims.Load(), "shared_dedup_duplicates": s.SharedDedupDuplicates.Load(),
		"shared_dedup_fallbacks": s.SharedDedupFallbacks.Load(),
		"run_store_reads":        s.RunStoreReads.Load(), "run_store_hits": s.RunStoreHits.Load(),
		"run_store_writes": s.RunStoreWrites.Load(), "run_store_read_calls": s.RunStoreReadCalls.Load(),
		"run_store_write_calls": s.RunStoreWriteCalls.Load(), "run_store_single_reads": s.RunStoreSingleReads.Load(),
		"run_store_corrupt": s.RunStoreCorrupt.Load(),
	}
	for k, v := range s.Budget.Map() {
		m["budget_"+k] = v
	}
	for r, v := range s.Invalid() {
		m["invalid_"+string(r)] = v
	}
	m["names_normalized"] = s.NamesNormalized.Load()
	return m
}

// setArchiveOldest records when the oldest pending archive entry of shard
// was committed (zero: none).
func (s *Stats) setArchiveOldest(shard string, at time.Time) {
	s.archiveOldest.Lock()
	defer s.archiveOldest.Unlock()
	if at.IsZero() {
		delete(s.archiveOldest.m, shard)
		return
	}
	if s.archiveOldest.m == nil {
		s.archiveOldest.m = map[string]time.Time{}
	}
	s.archiveOldest.m[shard] = at
}

// ArchiveLag is the age at now of the oldest pending archive entry of any
// shard (0: none): the checkpoint lag the archive adds.
func (s *Stats) ArchiveLag(now time.Time) time.Duration {
	s.archiveOldest.Lock()
	defer s.archiveOldest.Unlock()
	var lag time.Duration
	for _, at := range s.archiveOldest.m {
		lag = max(lag, now.Sub(at))
	}
	return lag
}
