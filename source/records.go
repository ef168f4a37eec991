package source

// The KCL record processor: one per leased shard, adapting KCL calls to a
// processor.Shard.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lineageflow/lineageflow/processor"
	kcl "github.com/vmware/vmware-go-kcl-v2/clientlibrary/interfaces"
)

type factory struct{ w *Worker }

func (f *factory) CreateProcessor() kcl.IRecordProcessor { return &recordProcessor{w: f.w} }

// recordProcessor adapts one KCL shard consumer to a [Shard].
type recordProcessor struct {
	w    *Worker
	s    *processor.Shard
	recs []processor.Record
	// lost: the lease guard or the lease watcher (lease.go) saw another
	// owner. v1.0.0 gives such a processor no Shutdown; it stops
	// processing and never checkpoints.
	lost atomic.Bool
	// busy is held by every KCL call (ProcessRecords, Shutdown) for its
	// whole length, I/O included (the shard's Process, sink waits, the
	// lease guard's read, the KCL checkpoint, handoff reads and their
	// retries): the lease watcher abandons the shard only between calls,
	// and only with TryLock, so only the KCL's calls on this shard ever
	// wait for busy. Taken before Worker.mu, never after.
	busy sync.Mutex
	// needHandoff: the shard started without local state; its parents'
	// handoffs (if it has parents) are loaded before its first record.
	needHandoff bool
}

func (p *recordProcessor) Initialize(in *kcl.InitializationInput) {
	w := p.w
	seq := ""
	if in.ExtendedSequenceNumber != nil && in.ExtendedSequenceNumber.SequenceNumber != nil {
		seq = *in.ExtendedSequenceNumber.SequenceNumber
	}
	w.mu.Lock()
	old := w.mu.shards[in.ShardId]
	w.mu.Unlock()
	if old != nil {
		// The KCL gives a lost lease's processor no Shutdown: stop the
		// stale pipeline now (waiting for its drain goroutine, so not
		// under w.mu); Start below decides on the local state.
		old.Abandon()
	}
	s, err := processor.NewShard(in.ShardId, w.db, w.cfg.Sink, w.cfg.Pipeline)
	if err == nil {
		err = s.Start(w.ctx, seq)
	}
	if err != nil {
		w.fatal(fmt.Errorf("initialize %s: %w", in.ShardId, err))
		return
	}
	w.mu.Lock()
	w.mu.shards[in.ShardId] = s
	w.mu.procs[in.ShardId] = p
	w.mu.Unlock()
	w.Stats().shardStarted(in.ShardId, time.Now())
	p.s = s
	p.needHandoff = !s.Resumed()
	w.log.Info("shard started", "shard", in.ShardId, "kcl_checkpoint", seq)
}

func (p *recordProcessor) ProcessRecords(in *kcl.ProcessRecordsInput) {
	p.busy.Lock()
	defer p.busy.Unlock()
	if p.s == nil || p.lost.Load() || p.w.ctx.Err() != nil {
		// Never acknowledge what we did not process: without a checkpoint
		// the records come back to the next owner.
		return
	}
	// Done here, not in Initialize: the KCL renews the lease only after
	// Initialize returns, and loading may wait for a parent.
	if p.needHandoff && !p.loadHandoff() {
		return // stopping: nothing processed, nothing checkpointed
	}
	// The KCL passed every record through unchanged (deagg.go): the
	// de-aggregation is done here, where a corrupt aggregate can become a
	// dead letter.
	p.recs = appendUserRecords(p.recs[:0], in.Records)
	// Caught up: an empty read with nothing behind. MillisBehindLatest
	// alone is not enough: kinesalite always reports 0, even on a full
	// batch with more records pending, which would advance the watermark
	// to processing time while the shard is still catching up.
	caughtUp := in.MillisBehindLatest == 0 && len(in.Records) == 0
	p.w.Stats().observeRead(p.s.ID(), in.MillisBehindLatest, len(p.recs), time.Now())
	if err := p.s.Process(p.w.ctx, p.recs, caughtUp); err != nil {
		if p.w.ctx.Err() == nil {
			p.w.fatal(err)
		}
		return
	}
	p.checkpoint(in.Checkpointer)
}

func (p *recordProcessor) checkpoint(c kcl.IRecordProcessorCheckpointer) {
	seq, ok := p.s.Checkpoint()
	if !ok {
		return
	}
	if !p.ownsLease() {
		p.s.CheckpointNotWritten() // try again (if still the owner)
		return
	}
	if err := c.Checkpoint(&seq); err != nil {
		p.w.log.Warn("KCL checkpoint failed (retried at the next batch)", "shard", p.s.ID(), "seq", seq, "err", err)
		p.s.CheckpointNotWritten()
		return
	}
	p.w.Stats().observeCheckpoint(p.s.ID(), time.Now())
}

func (p *recordProcessor) Shutdown(in *kcl.ShutdownInput) {
	p.busy.Lock()
	defer p.busy.Unlock()
	if p.s == nil || p.lost.Load() {
		return
	}
	s, w := p.s, p.w
	defer func() {
		w.mu.Lock()
		if w.mu.shards[s.ID()] == s {
			delete(w.mu.shards, s.ID())
			delete(w.mu.procs, s.ID())
		}
		w.mu.Unlock()
	}()
	switch in.ShutdownReason {
	case kcl.TERMINATE:
		// Shard end: everything must be in the graph before the
		// mandatory Checkpoint(nil), or children never start.
		if err := s.Flush(w.ctx); err != nil {
			w.log.Error("shard end: flush failed; not checkpointing", "shard", s.ID(), "err", err)
			s.Close()
			return
		}
		s.Close()
		if !p.ownsLease() {
			w.log.Warn("shard end: lease lost; the new owner will checkpoint SHARD_END", "shard", s.ID())
			return
		}
		// The runs the shard still holds go to its children (handoff.go)
		// before SHARD_END lets them start.
		if err := p.handOff(); err != nil {
			w.log.Error("shard end: run handoff failed; not checkpointing SHARD_END (the shard is replayed)", "shard", s.ID(), "err", err)
			return
		}
		if err := in.Checkpointer.Checkpoint(nil); err != nil {
			w.log.Error("shard end checkpoint failed", "shard", s.ID(), "err", err)
		}
	case kcl.ZOMBIE:
		if err := s.Drop(); err != nil {
			w.log.Warn("drop local state", "shard", s.ID(), "err", err)
		}
	default: // REQUESTED
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.ShutdownGrace)
		defer cancel()
		if err := s.Flush(ctx); err != nil {
			w.log.Warn("graceful shutdown: outbox not drained in time; checkpointing what is safe", "shard", s.ID(), "err", err)
		}
		p.checkpoint(in.Checkpointer)
		s.Close()
	}
	w.log.Info("shard stopped", "shard", s.ID(), "reason", aws.ToString(kcl.ShutdownReasonMessage(in.ShutdownReason)))
}
