package processor

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/window"
)

// Record is one user record of a shard, as KCL hands it over after KPL
// de-aggregation.
type Record struct {
	// Seq is the Kinesis sequence number. The user records of one
	// KPL-aggregated record share it.
	Seq string
	// Sub is the index of the user record among those sharing Seq (0 for
	// a record that was not aggregated).
	Sub uint32
	// Arrival is the ApproximateArrivalTimestamp.
	Arrival time.Time
	Data    []byte
	// Refused, when set, says why the record cannot be read at all (a
	// corrupt KPL aggregate: a *lineage.DecodeError with
	// lineage.ReasonKPLCorrupt): it becomes one dead letter without being
	// decoded.
	Refused error
}

// Shard is the pipeline of one Kinesis shard. All methods but
// [Shard.Backpressured] must be called from one goroutine (KCL's
// ProcessRecords goroutine); the outbox drain runs in a goroutine of its
// own that [Shard.Close] and [Shard.Abandon] stop.
type Shard struct {
	id  string
	cfg PipelineConfig
	db  *pebble.DB
	log *slog.Logger
	st  *Stats
	dec lineage.Decoder
	// guard bounds the names and times of decoded events (lineage.Guard).
	guard lineage.Guard
	ev    lineage.Event
	// peekDec, peekEv decode a batch's records once more before it is
	// processed, to find the runs to load from the run store.
	peekDec lineage.Decoder
	peekEv  lineage.Event
	// rules say what an event means; they write it through em into the
	// window table.
	rules *semantics.Rules
	em    shardEmitter
	emi   semantics.Emitter // &em, converted once
	wm    *window.Watermark
	ids   *semantics.IDs

	// What holds the checkpoint back, and the state behind each pin.
	pins    *checkpoint.Pins
	windows *windowTable // open windows and sealed ones not acknowledged
	runs    *runTable
	dedup   *dedupSet
	dead    deadLetters
	dlq     dlqState // retention of the stored dead letters (budget.go)
	drain   *drainer
	arc     *archiveSide // the event archive (archive.go); nil: off
	shared  sharedBatch  // the shared dedup tier's answer for the current Process call

	resume     checkpoint.Pos // skip records <= resume (set when resumed from Pebble)
	last       checkpoint.Pos // last processed record
	curSeq     string         // sequence number being processed
	prevFull   string         // last sequence number fully processed before curSeq
	durable    string         // last fully processed sequence number in a synced barrier
	maxArrival int64
	nextOutbox uint64
	reported   string // last checkpoint handed to KCL

	resumed     bool // Start resumed from Pebble
	started     bool // a record was processed
	lastBarrier time.Time
	failed      error // a barrier failed: the shard must be abandoned
	batchHint   int   // initial size of the next barrier's batch (the last one's size)
	valBuf      []byte
}

// deadLetters are the records refused since the last barrier, written in
// its batch.
type deadLetters []deadLetter

type deadLetter struct {
	key []byte
	val []byte
}

func (d deadLetters) writeTo(batch *pebble.Batch) {
	for _, x := range d {
		_ = batch.Set(x.key, x.val, nil)
	}
}

func (d *deadLetters) afterCommit() { *d = (*d)[:0] }

// ErrShardFailed is returned by every call after a barrier failed: the
// shard's in-memory state no longer matches Pebble, and the shard must be
// abandoned and restarted from its KCL checkpoint.
var ErrShardFailed = errors.New("processor: shard failed")

// NewShard returns the pipeline of shard id over db, writing to w. Call
// [Shard.Start] before anything else.
func NewShard(id string, db *pebble.DB, w Writer, cfg PipelineConfig) (*Shard, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("shard", id)
	pins := checkpoint.NewPins()
	ids := semantics.NewIDs()
	s := &Shard{
		id: id, cfg: cfg, db: db, st: cfg.Stats, log: log,
		dec:   lineage.Decoder{MaxBytes: cfg.Budgets.MaxRecordBytes},
		guard: lineage.Guard{MaxNameBytes: cfg.Budgets.MaxNameBytes, MaxFuture: cfg.Budgets.MaxEventFuture},
		wm:    window.NewWatermark(cfg.Window.Config),
		ids:   ids,
		rules: semantics.NewRules(cfg.rules(), ids),

		pins:    pins,
		windows: newWindowTable(id, db, pins),
		runs:    newRunTable(id, pins, ids, cfg.Stats),
		dedup:   newDedupSet(id, db, cfg.Stats, log, cfg.Dedup.MaxBytes),
	}
	s.windows.maxKeys, s.windows.spill, s.windows.st = cfg.Budgets.MaxOpenKeys, s.spillTable, cfg.Stats
	s.windows.sizeMs, s.windows.latenessMs = cfg.Window.Size.Milliseconds(), cfg.Window.Lateness.Milliseconds()
	if cfg.Window.Refresh > 0 {
		s.windows.refreshMs, s.windows.seen = cfg.Window.Refresh.Milliseconds(), map[uint64]uint64{}
	}
	s.runs.maxRuns = cfg.Budgets.MaxRuns
	s.em = shardEmitter{s: s, w: s.windows}
	s.emi = &s.em
	if cfg.RunStore.Store != nil {
		s.peekDec = lineage.Decoder{MaxBytes: cfg.Budgets.MaxRecordBytes}
		s.runs.unpinned, s.runs.fetch = true, s.fetchRun
	}
	s.drain = newDrainer(s, w)
	if cfg.Archive.Store != nil {
		s.arc = &archiveSide{d: newArchiveDrain(s, cfg.Archive)}
	}
	return s, nil
}

// ID returns the shard id.
func (s *Shard) ID() string { return s.id }

// Start prepares the shard to process records after the KCL checkpoint
// kclCheckpoint ("" or a sentinel like TRIM_HORIZON when there is none).
// If Pebble holds a position at or after it, the shard resumes from Pebble
// (redelivered records up to that position are skipped); otherwise the
// shard's local state is discarded and everything after kclCheckpoint is
// replayed. It starts the outbox drain.
func (s *Shard) Start(ctx context.Context, kclCheckpoint string) (err error) {
	defer s.recoverFatal(&err)
	if !isSeq(kclCheckpoint) {
		kclCheckpoint = ""
	}
	pos, found, err := s.loadPosition()
	if err != nil {
		return err
	}
	if found && kclCheckpoint != "" && checkpoint.CompareSeq(pos.Last.Seq, kclCheckpoint) >= 0 {
		if err := s.resumeFrom(pos); err != nil {
			return err
		}
		if s.archiveOn() {
			if err := s.archiveResume(); err != nil {
				return fmt.Errorf("processor: resume %s: %w", s.id, err)
			}
		}
		s.reported = kclCheckpoint
		s.resumed = true
		s.log.Info("resumed from local state", "kcl_checkpoint", kclCheckpoint, "local_position", pos.Last.Seq,
			"open_runs", s.runs.len(), "open_windows", len(s.windows.buckets), "outbox", len(s.drain.snapshotQueue()))
	} else {
		if err := s.discardLocal(); err != nil {
			return err
		}
		s.curSeq, s.prevFull, s.durable, s.reported = kclCheckpoint, kclCheckpoint, kclCheckpoint, kclCheckpoint
		if found {
			s.log.Info("local state behind the KCL checkpoint: discarded, replaying", "kcl_checkpoint", kclCheckpoint, "local_position", pos.Last.Seq)
		}
		if s.archiveOn() {
			if err := s.archiveTakeOver(ctx, kclCheckpoint); err != nil {
				return err
			}
		}
	}
	if err := s.countDeadLetters(); err != nil {
		return fmt.Errorf("count dead letters: %w", err)
	}
	s.lastBarrier = s.cfg.Clock()
	s.drain.start()
	if s.archiveOn() {
		s.arc.d.start()
	}
	return nil
}

func isSeq(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Process runs recs (in shard order; the sub-records of one aggregated
// record must come in one call) through the pipeline. caughtUp says the
// shard has nothing pending on Kinesis (KCL's MillisBehindLatest == 0):
// the watermark then advances to processing time. Process barriers when
// the in-memory table is full, when a window can be sealed and when the
// barrier interval has passed; a barrier blocks while the outbox is full.
func (s *Shard) Process(ctx context.Context, recs []Record, caughtUp bool) (err error) {
	defer s.recoverFatal(&err)
	if s.failed != nil {
		return s.failed
	}
	if s.cfg.Dedup.Shared != nil {
		s.claimShared(ctx, recs)
	}
	if s.cfg.RunStore.Store != nil {
		if err := s.prefetchRuns(ctx, recs); err != nil {
			return err
		}
	}
	for i := range recs {
		r := &recs[i]
		if s.resume.Seq != "" && s.skipResumed(r) {
			s.st.Skipped.Add(1)
			continue
		}
		s.record(r, s.sharedClaimOf(i))
		deadFull := len(s.dead) >= s.cfg.Budgets.MaxDeadLettersPerBarrier
		if s.windows.full(s.cfg.Budgets.MaxOpenKeys) || deadFull {
			if deadFull {
				s.st.Budget.DeadLetterBarriers.Add(1)
			}
			boundary := i == len(recs)-1 || recs[i+1].Seq != r.Seq
			if err := s.barrier(ctx, false, boundary); err != nil {
				return err
			}
		}
	}
	if caughtUp {
		s.wm.Idle(s.cfg.Clock())
	}
	if s.windows.sealDue(s.wm) || s.cfg.Clock().Sub(s.lastBarrier) >= s.cfg.BarrierInterval {
		return s.barrier(ctx, false, true)
	}
	return nil
}

// Barrier makes everything processed so far durable in one synced Pebble
// batch, sealing the windows the watermark has passed. Call it at a record
// boundary (never between the sub-records of one aggregated record).
func (s *Shard) Barrier(ctx context.Context) (err error) {
	defer s.recoverFatal(&err)
	return s.barrier(ctx, false, true)
}

// Flush seals every open window (whatever the watermark), makes it
// durable, and waits until the outbox is fully acknowledged or ctx ends.
// Used at shard end (TERMINATE) and graceful shutdown.
func (s *Shard) Flush(ctx context.Context) (err error) {
	defer s.recoverFatal(&err)
	if err := s.barrier(ctx, true, true); err != nil {
		return err
	}
	if err := s.drain.waitEmpty(ctx); err != nil {
		return err
	}
	if s.archiveOn() {
		if err := s.arc.d.waitIdle(ctx); err != nil {
			return err
		}
		s.archiveRelease()
	}
	return nil
}

// Checkpoint returns the sequence number KCL may checkpoint now, and
// whether it advanced since the last call: every record at or before it is
// in an acknowledged window, and no open run started at or before it.
func (s *Shard) Checkpoint() (string, bool) {
	s.windows.releaseAcked(s.drain.ackedBelow())
	if s.archiveOn() {
		s.archiveRelease()
	}
	safe := s.pins.Safe(s.durable)
	if s.cfg.UnsafeBreak == UnsafeBreakEarlyCheckpoint {
		safe = s.durable // fault injection: ignore what the sink has not acknowledged
	}
	if safe == "" || checkpoint.CompareSeq(safe, s.reported) <= 0 {
		return s.reported, false
	}
	s.reported = safe
	return safe, true
}

// Backpressured reports whether the shard is blocked on a full outbox and
// since when. Safe to call concurrently.
func (s *Shard) Backpressured() (bool, time.Duration) { return s.drain.blocked() }

// Close stops the outbox drain (entries not acknowledged stay in Pebble).
// It does not barrier: call Barrier or Flush first to keep progress.
func (s *Shard) Close() { s.stopDrains() }

// Abandon stops the shard as a crash would: no barrier, the drains stopped.
func (s *Shard) Abandon() { s.stopDrains() }

func (s *Shard) stopDrains() {
	s.drain.stop()
	if s.archiveOn() {
		s.arc.d.stop()
	}
}

// Drop stops the shard and deletes its local state (lease lost: another
// worker owns the shard now and its state here would be stale).
func (s *Shard) Drop() error {
	s.stopDrains()
	return s.discardLocal()
}

// Resumed reports whether [Shard.Start] resumed from the local Pebble
// state. When it did not, the shard's run state starts empty: a child
// shard must then load its parents' handoffs ([Shard.LoadHandoff]).
func (s *Shard) Resumed() bool { return s.resumed }

// skipResumed reports whether r is at or before the resumed position
// (already processed before a restart).
func (s *Shard) skipResumed(r *Record) bool {
	return (checkpoint.Pos{Seq: r.Seq, Sub: r.Sub}).Compare(s.resume) <= 0
}

// record runs one user record through decode, dedup, runs and window. c is
// its claim on the shared dedup tier (nil: none).
func (s *Shard) record(r *Record, c *SharedClaim) {
	s.started = true
	s.st.Records.Add(1)
	if r.Seq != s.curSeq {
		s.prevFull, s.curSeq = s.curSeq, r.Seq
	}
	s.last = checkpoint.Pos{Seq: r.Seq, Sub: r.Sub}
	arrival := r.Arrival.UnixMilli()
	if arrival > s.maxArrival {
		s.maxArrival = arrival
	}
	if s.arc != nil {
		s.arc.decide(r)
	}
	if r.Refused != nil {
		s.deadLetter(r, r.Refused)
		return
	}
	if err := s.dec.Decode(r.Data, &s.ev); err != nil {
		s.deadLetter(r, err)
		return
	}
	if changed, err := s.guard.Check(&s.dec, &s.ev, r.Arrival); err != nil {
		s.deadLetter(r, err)
		return
	} else if changed {
		s.st.NamesNormalized.Add(1)
	}
	if s.overEventBudget(r) {
		return
	}
	var sum [32]byte
	if c != nil {
		sum = c.Key
	} else {
		sum = sha256.Sum256(r.Data)
	}
	var h [16]byte
	copy(h[:], sum[:16])
	if s.dedup.seen(&h) {
		if s.countDuplicate(c) {
			s.st.Duplicates.Add(1)
		}
		if s.arc != nil && s.arc.mode == arcListed {
			s.archiveEvent(r, &sum)
		}
		return
	}
	if s.sharedDuplicate(c) {
		// Seen by another record, on another shard or worker: a
		// duplicate the local tier could not know. Remembered locally so
		// its next copies here are caught without the shared tier.
		if c.Count {
			s.st.Duplicates.Add(1)
			s.st.SharedDedupDuplicates.Add(1)
		}
		s.dedup.add(h, arrival)
		if s.arc != nil && s.arc.mode == arcListed {
			s.archiveEvent(r, &sum)
		}
		return
	}
	s.dedup.add(h, arrival)
	s.st.Events.Add(1)
	if s.ev.Lenient != 0 {
		s.st.addLenient(s.ev.Lenient)
	}

	ts := arrival
	if s.cfg.Window.TimeSource == TimeEvent {
		// Never after arrival: an event dated ahead (a skewed clock, up to
		// the guard's bound) would hold its window, and the checkpoint
		// pinned by it, open until that time and make every later record
		// late.
		ts = min(s.ev.Time.UnixMilli(), arrival)
	}
	bucket := s.cfg.Window.Bucket(ts)
	if s.wm.Sealed(bucket) {
		s.st.Late.Add(1)
	}
	s.wm.Observe(ts)

	// What the event means (semantics/), pinned and windowed here.
	s.em.cur = nil
	var run *semantics.Run
	if s.ev.Kind == lineage.KindRun {
		cur := s.runs.open(s.ev.RunID, s.ev.Job, s.prevFull)
		if err := semantics.CheckRunJob(&s.ev, &cur.Run); err != nil {
			s.deadLetter(r, err)
			return
		}
		s.em.cur = s.beginRun(cur, arrival)
		run = &s.em.cur.Run
	}
	if s.arc != nil && s.arc.mode != arcSkip {
		s.archiveEvent(r, &sum)
	}
	s.rules.Event(&s.ev, run, bucket, s.emi)
}

func (s *Shard) deadLetter(r *Record, err error) {
	var de *lineage.DecodeError
	reason, field, msg := lineage.Reason("unknown"), "", err.Error()
	if errors.As(err, &de) {
		reason, field, msg = de.Reason, de.Field, de.Msg
	}
	s.st.addInvalid(reason)
	raw := r.Data
	if len(raw) > s.cfg.Budgets.DeadLetterBytes {
		raw = raw[:s.cfg.Budgets.DeadLetterBytes]
	}
	d := checkpoint.DeadLetter{Shard: s.id, Seq: r.Seq, Sub: r.Sub, Arrival: r.Arrival.UTC(), Reason: string(reason),
		Field: field, Message: msg, Size: len(r.Data), Raw: raw}
	s.dead = append(s.dead, deadLetter{key: checkpoint.DLQKey(s.id, r.Seq, r.Sub), val: checkpoint.MarshalDeadLetter(&d)})
	if s.arc != nil && s.arc.mode != arcSkip {
		detail := msg
		if field != "" {
			detail = field + ": " + msg
		}
		s.archiveDeadLetter(r, string(reason), detail)
	}
}

// recoverFatal turns a fatal Pebble error (a panic, see
// checkpoint.FatalError) into a failed shard.
func (s *Shard) recoverFatal(err *error) {
	if p := recover(); p != nil {
		fe, ok := p.(*checkpoint.FatalError)
		if !ok {
			panic(p)
		}
		*err = s.fail(fe)
	}
}

func (s *Shard) fail(err error) error {
	s.failed = fmt.Errorf("%w: %s: %w", ErrShardFailed, s.id, err)
	return s.failed
}
