package processor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
)

// Writer is what the processor needs of the sink ([sink.Writer] satisfies
// it): WriteBatch blocks until every vertex and edge of b is acknowledged
// by the graph, or fails (then nothing is assumed written and the batch is
// sent again). Blocking when the graph is slow is the backpressure the
// shard relies on. It must be safe to call from several goroutines.
type Writer interface {
	WriteBatch(ctx context.Context, b lineage.Batch) error
}

// drainer sends a shard's outbox entries, in order, to the sink. It
// retries a failed WriteBatch with exponential backoff and jitter until it
// succeeds or the drainer stops (nothing is ever dropped), then deletes the
// entry and advances acked.
type drainer struct {
	s *Shard
	w Writer

	mu struct {
		sync.Mutex
		queue []uint64 // unacknowledged outbox sequences, in order
		// cache: the content of outbox entries just written, by
		// sequence, so that their first send need not read and decode
		// them back from Pebble; cached counts its records (at most
		// drainCacheRecords).
		cache  map[uint64]cachedEntry
		cached int
	}
	wake    chan struct{} // an entry was pushed
	space   chan struct{} // an entry was acknowledged
	acked   atomic.Uint64 // every outbox sequence < acked is acknowledged
	blockNs atomic.Int64  // when the shard started waiting for space (0: not waiting)

	goroutine
}

func newDrainer(s *Shard, w Writer) *drainer {
	return &drainer{s: s, w: w, wake: make(chan struct{}, 1), space: make(chan struct{}, 1), goroutine: newGoroutine()}
}

func (d *drainer) start() { d.goroutine.start(d.run) }

func (d *drainer) stop() {
	d.goroutine.stop(func() {
		if d.blockNs.Swap(0) != 0 {
			d.s.st.backpressured.Add(-1)
		}
	})
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// drainCacheRecords bounds the records (vertices + edges) of the outbox
// entries a drainer keeps in memory for their first send (about 150 B a
// record, the strings shared with the shard's: ~2.5 MB a shard, small
// beside the dedup set's recent tier; a catch-up barrier writes ~14,000).
const drainCacheRecords = 1 << 14

// cachedEntry is the content of an outbox entry as written.
type cachedEntry struct {
	bucket int64
	batch  lineage.Batch
}

// push appends newly written (synced) outbox sequences; entries[i], when
// not nil, is the content of seqs[i] (what Pebble holds), kept for its
// first send while the cache has room.
func (d *drainer) push(seqs []uint64, entries []*cachedEntry) {
	if len(seqs) == 0 {
		return
	}
	d.mu.Lock()
	if len(d.mu.queue) == 0 {
		d.acked.Store(seqs[0])
	}
	d.mu.queue = append(d.mu.queue, seqs...)
	for i, e := range entries {
		if e == nil {
			continue
		}
		n := len(e.batch.Vertices) + len(e.batch.Edges)
		if d.mu.cached+n > drainCacheRecords {
			break
		}
		if d.mu.cache == nil {
			d.mu.cache = map[uint64]cachedEntry{}
		}
		d.mu.cache[seqs[i]] = *e
		d.mu.cached += n
	}
	d.mu.Unlock()
	signal(d.wake)
}

// takeCached removes and returns the cached content of entry seq.
func (d *drainer) takeCached(seq uint64) (cachedEntry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.mu.cache[seq]
	if ok {
		delete(d.mu.cache, seq)
		d.mu.cached -= len(e.batch.Vertices) + len(e.batch.Edges)
	}
	return e, ok
}

func (d *drainer) pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.mu.queue)
}

func (d *drainer) snapshotQueue() []uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]uint64(nil), d.mu.queue...)
}

// ackedBelow returns a sequence such that every outbox entry below it is
// acknowledged (and none at or above it is known to be).
func (d *drainer) ackedBelow() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.mu.queue) == 0 {
		return ^uint64(0)
	}
	return d.mu.queue[0]
}

// waitSpace blocks while cap or more entries are unacknowledged: the
// backpressure that stops ProcessRecords, and so KCL's reads.
func (d *drainer) waitSpace(ctx context.Context, cap int) error {
	if d.pending() < cap {
		return nil
	}
	d.blockNs.Store(d.s.cfg.Clock().UnixNano())
	d.s.st.backpressured.Add(1)
	defer func() {
		if d.blockNs.Swap(0) != 0 {
			d.s.st.backpressured.Add(-1)
		}
	}()
	return d.waitPendingBelow(ctx, cap)
}

// waitEmpty blocks until every outbox entry is acknowledged.
func (d *drainer) waitEmpty(ctx context.Context) error { return d.waitPendingBelow(ctx, 1) }

// waitPendingBelow blocks until fewer than n entries are unacknowledged,
// woken by each acknowledgement.
func (d *drainer) waitPendingBelow(ctx context.Context, n int) error {
	for d.pending() >= n {
		select {
		case <-d.space:
		case <-ctx.Done():
			return ctx.Err()
		case <-d.ctx.Done():
			return fmt.Errorf("processor: %s: outbox drain stopped", d.s.id)
		}
	}
	return nil
}

func (d *drainer) blocked() (bool, time.Duration) {
	ns := d.blockNs.Load()
	if ns == 0 {
		return false, 0
	}
	return true, d.s.cfg.Clock().Sub(time.Unix(0, ns))
}

func (d *drainer) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		var seq uint64
		have := len(d.mu.queue) > 0
		if have {
			seq = d.mu.queue[0]
		}
		d.mu.Unlock()
		if !have {
			select {
			case <-d.wake:
				continue
			case <-d.ctx.Done():
				return
			}
		}
		if !d.send(seq) {
			return
		}
		d.mu.Lock()
		d.mu.queue = d.mu.queue[1:]
		d.mu.Unlock()
		d.s.st.OutboxAcked.Add(1)
		signal(d.space)
	}
}

// send delivers outbox entry seq until acknowledged; false when stopped.
func (d *drainer) send(seq uint64) bool {
	s := d.s
	key := checkpoint.OutboxKey(s.id, seq)
	backoff := s.cfg.Drain.Backoff
	refused := 0 // consecutive permanent refusals
	for attempt := 0; ; attempt++ {
		err := d.sendOnce(key, seq)
		if err == nil {
			return true
		}
		if d.ctx.Err() != nil {
			return false
		}
		s.st.SinkErrors.Add(1)
		if isPermanent(err) {
			refused++
		} else {
			refused = 0
		}
		if refused >= s.cfg.Drain.ParkAfter {
			perr := d.isolate(key, seq, attempt+1)
			if perr == nil {
				return true
			}
			s.log.Error("isolating the refused items of an outbox entry failed; retrying it", "outbox_seq", seq, "err", perr)
		}
		if attempt < 3 || attempt%20 == 0 {
			s.log.Warn("outbox entry not acknowledged; retrying", "outbox_seq", seq, "attempt", attempt+1, "err", err)
		}
		wait := backoff/2 + time.Duration(rand.Int64N(int64(backoff)))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-d.ctx.Done():
			t.Stop()
			return false
		}
		if backoff *= 2; backoff > s.cfg.Drain.BackoffMax {
			backoff = s.cfg.Drain.BackoffMax
		}
	}
}

func (d *drainer) sendOnce(key []byte, seq uint64) (err error) {
	s := d.s
	defer func() {
		if p := recover(); p != nil {
			fe, ok := p.(*checkpoint.FatalError)
			if !ok {
				panic(p)
			}
			err = fe
		}
	}()
	// The first send of an entry written by this process takes its
	// content from memory (the same as Pebble holds); a retry, or an
	// entry from before a restart, reads it back.
	c, ok := d.takeCached(seq)
	if !ok {
		v, closer, err := s.db.Get(key)
		if err != nil {
			return fmt.Errorf("read outbox entry: %w", err)
		}
		e, err := DecodeOutbox(v)
		closer.Close()
		if err != nil {
			return fmt.Errorf("decode outbox entry: %w", err)
		}
		c = cachedEntry{bucket: e.Bucket, batch: e.Batch}
	}
	c.batch.Key = fmt.Sprintf("%s/%d/%d", s.id, c.bucket, seq)
	if err := d.w.WriteBatch(d.ctx, c.batch); err != nil {
		return err
	}
	// The delete need not be synced: an entry that comes back after a
	// crash is sent again, and writes are idempotent.
	if err := s.db.Delete(key, pebble.NoSync); err != nil {
		return fmt.Errorf("delete outbox entry: %w", err)
	}
	return nil
}

// permanent is implemented by sink errors that know whether sending the
// same batch again can succeed (sink.Error).
type permanent interface{ Permanent() bool }

func isPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p) && p.Permanent()
}

// goroutine is the lifecycle of a shard's background loop (the graph
// drain, the archive drain): run once by start, cancelled and waited for
// once by stop, whether or not it was started. run must close done.
type goroutine struct {
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	started bool
	once    sync.Once
}

func newGoroutine() goroutine {
	ctx, cancel := context.WithCancel(context.Background())
	return goroutine{ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

func (g *goroutine) start(run func()) {
	g.started = true
	go run()
}

// stop cancels the loop, waits for it if it was started, then runs after;
// only the first call does anything.
func (g *goroutine) stop(after func()) {
	g.once.Do(func() {
		g.cancel()
		if g.started {
			<-g.done
		}
		after()
	})
}
