package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/checkpoint"
)

// archiveDrain cuts a shard's pending archive entries into objects, in its
// own goroutine. A cut is: read the entries (at most up to the last fully
// processed sequence number, so a cut never splits a KPL aggregate and two
// cuts never share a first sequence number), record the cut in Pebble
// (synced), put its marker, put one Parquet object per table and date,
// then delete the entries and the recorded cut. A crash anywhere is
// finished by the same cut: from Pebble on resume, from the marker on a
// takeover (archiveTakeOver). Failures are retried for ever.
type archiveDrain struct {
	s   *Shard
	cfg ArchiveConfig

	mu struct {
		sync.Mutex
		durable  string         // last fully processed sequence number in a synced barrier
		batches  []arcBatch     // committed entries not archived, by barrier
		bytes    int64          // their bytes (what Pebble holds)
		forced   []archive.Cut  // cuts to reproduce exactly (takeover), in order
		recorded []byte         // a cut recorded in Pebble before a restart
		done     checkpoint.Pos // every entry at or before it is archived
		hasDone  bool           // done is set
		flush    bool           // cut whatever is committed now (Flush)
		emptyAt  checkpoint.Pos // last entry when a cut found nothing to cut
		emptyDur string
	}
	wake    chan struct{}
	cutDone chan struct{}
	crashAt int           // tests: fail every cut after this step
	crashed atomic.Bool   // tests: a cut failed at crashAt
	hit     chan struct{} // tests: closed when crashed is first set

	goroutine
}

// arcBatch is the entries one barrier committed.
type arcBatch struct {
	last  checkpoint.Pos
	bytes int64
	at    time.Time
}

func newArchiveDrain(s *Shard, cfg ArchiveConfig) *archiveDrain {
	return &archiveDrain{s: s, cfg: cfg, wake: make(chan struct{}, 1), cutDone: make(chan struct{}, 1), hit: make(chan struct{}),
		goroutine: newGoroutine()}
}

func (d *archiveDrain) start() { d.goroutine.start(d.run) }

func (d *archiveDrain) stop() {
	d.goroutine.stop(func() {
		d.mu.Lock()
		d.s.st.ArchivePendingBytes.Add(-d.mu.bytes)
		d.mu.bytes = 0
		d.mu.Unlock()
		d.s.st.setArchiveOldest(d.s.id, time.Time{})
	})
}

// push records a barrier: its durable position, and its entries (last
// one, bytes) if any.
func (d *archiveDrain) push(durable string, last checkpoint.Pos, bytes int64, entries bool) {
	d.mu.Lock()
	d.mu.durable = durable
	if entries {
		at := d.s.cfg.Clock()
		d.mu.batches = append(d.mu.batches, arcBatch{last: last, bytes: bytes, at: at})
		d.mu.bytes += bytes
		if len(d.mu.batches) == 1 {
			d.s.st.setArchiveOldest(d.s.id, at)
		}
	}
	d.mu.Unlock()
	signal(d.wake)
}

// resumed restores what Pebble holds (before start).
func (d *archiveDrain) resumed(last checkpoint.Pos, bytes int64, cut []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bytes > 0 {
		at := d.s.cfg.Clock()
		d.mu.batches = append(d.mu.batches, arcBatch{last: last, bytes: bytes, at: at})
		d.mu.bytes = bytes
		d.s.st.setArchiveOldest(d.s.id, at)
	}
	d.mu.recorded = cut
}

// reproduce sets the cuts a takeover must write again exactly (before start).
func (d *archiveDrain) reproduce(cuts []archive.Cut) {
	d.mu.Lock()
	d.mu.forced = cuts
	d.mu.Unlock()
}

// archivedThrough returns the position through which every entry is archived.
func (d *archiveDrain) archivedThrough() (checkpoint.Pos, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.done, d.mu.hasDone
}

// idle reports whether nothing is left to archive.
func (d *archiveDrain) idle() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.mu.batches) == 0 && len(d.mu.forced) == 0 && d.mu.recorded == nil
}

// waitIdle cuts whatever is committed and waits until it is archived.
func (d *archiveDrain) waitIdle(ctx context.Context) error {
	d.mu.Lock()
	d.mu.flush = true
	d.mu.Unlock()
	signal(d.wake)
	defer func() {
		d.mu.Lock()
		d.mu.flush = false
		d.mu.Unlock()
	}()
	for !d.idle() {
		select {
		case <-d.cutDone:
		case <-ctx.Done():
			return ctx.Err()
		case <-d.ctx.Done():
			return fmt.Errorf("processor: %s: archive drain stopped", d.s.id)
		}
	}
	return nil
}

// cutPlan is the next cut: recorded (from Pebble), forced (a marker to
// reproduce) or the entries up to the durable sequence number.
type cutPlan struct {
	recorded []byte
	forced   *archive.Cut
	through  string // entries with a sequence number <= through
}

// next returns the next cut to make, or how long to wait for one (0: until
// woken).
func (d *archiveDrain) next() (cutPlan, bool, time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.recorded != nil {
		return cutPlan{recorded: d.mu.recorded}, true, 0
	}
	if len(d.mu.forced) > 0 {
		f := &d.mu.forced[0]
		seq, _, _ := archive.ParsePos(f.Last)
		if d.mu.durable != "" && checkpoint.CompareSeq(d.mu.durable, seq) >= 0 {
			return cutPlan{forced: f}, true, 0
		}
		return cutPlan{}, false, 0
	}
	if len(d.mu.batches) == 0 || d.mu.durable == "" {
		return cutPlan{}, false, 0
	}
	if last := d.mu.batches[len(d.mu.batches)-1].last; d.mu.emptyAt.Seq != "" && last.Compare(d.mu.emptyAt) <= 0 &&
		d.mu.durable == d.mu.emptyDur {
		return cutPlan{}, false, 0 // nothing cuttable until the aggregate completes
	}
	age := d.s.cfg.Clock().Sub(d.mu.batches[0].at)
	if d.mu.flush || d.mu.bytes >= d.cfg.MinBytes || age >= d.cfg.MaxAge {
		return cutPlan{through: d.mu.durable}, true, 0
	}
	return cutPlan{}, false, d.cfg.MaxAge - age
}

func (d *archiveDrain) run() {
	defer close(d.done)
	for {
		p, ok, wait := d.next()
		if !ok {
			var t *time.Timer
			var tc <-chan time.Time
			if wait > 0 {
				t = time.NewTimer(wait)
				tc = t.C
			}
			select {
			case <-d.wake:
			case <-tc:
			case <-d.ctx.Done():
			}
			if t != nil {
				t.Stop()
			}
			if d.ctx.Err() != nil {
				return
			}
			continue
		}
		if !d.cutRetrying(p) {
			return
		}
	}
}

// cutRetrying makes cut p until it succeeds; false when stopped.
func (d *archiveDrain) cutRetrying(p cutPlan) bool {
	backoff := d.cfg.Backoff
	for attempt := 0; ; attempt++ {
		err := d.cut(p)
		if err == nil {
			signal(d.cutDone)
			return true
		}
		if d.ctx.Err() != nil {
			return false
		}
		d.s.st.ArchiveErrors.Add(1)
		if attempt < 3 || attempt%20 == 0 {
			d.s.log.Warn("archive cut failed; retrying", "attempt", attempt+1, "err", err)
		}
		wait := backoff/2 + time.Duration(rand.Int64N(int64(backoff)))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-d.ctx.Done():
			t.Stop()
			return false
		}
		if backoff *= 2; backoff > 10*time.Second {
			backoff = 10 * time.Second
		}
		// A cut recorded before the failure is finished as recorded.
		d.mu.Lock()
		if d.mu.recorded != nil {
			p = cutPlan{recorded: d.mu.recorded}
		}
		d.mu.Unlock()
	}
}

// cut makes one cut.
func (d *archiveDrain) cut(p cutPlan) error {
	s := d.s
	prefix := checkpoint.ArchivePrefix(s.id)
	var c archive.Cut
	var upper []byte
	switch {
	case p.recorded != nil:
		var err error
		if c, err = archive.UnmarshalCut(p.recorded); err != nil {
			return err
		}
		seq, sub, _ := archive.ParsePos(c.Last)
		upper = append(checkpoint.AppendArchiveKey(nil, s.id, seq, sub), 0)
	case p.forced != nil:
		seq, sub, _ := archive.ParsePos(p.forced.Last)
		upper = append(checkpoint.AppendArchiveKey(nil, s.id, seq, sub), 0)
	default:
		upper = append(checkpoint.AppendArchiveKey(nil, s.id, p.through, 0)[:len(prefix)+checkpoint.ArchiveSeqWidth], 0xff, 0xff, 0xff, 0xff, 0xff)
	}
	rows, err := d.read(prefix, upper)
	if err != nil {
		return err
	}
	if len(rows.pos) == 0 {
		if p.recorded == nil && p.forced == nil {
			d.mu.Lock()
			if n := len(d.mu.batches); n > 0 {
				d.mu.emptyAt, d.mu.emptyDur = d.mu.batches[n-1].last, d.mu.durable
			}
			d.mu.Unlock()
			return nil
		}
	}
	objects := rows.objects(d.cfg.Prefix, s.id)
	if p.recorded == nil {
		c = archive.Cut{Shard: s.id, Objects: make([]string, 0, len(objects))}
		for _, o := range objects {
			c.Objects = append(c.Objects, o.key)
		}
		c.Rows = make([]string, len(rows.pos))
		for i, q := range rows.pos {
			c.Rows[i] = archive.FormatPos(q.Seq, q.Sub)
		}
		if p.forced != nil {
			if !sameRows(c.Rows, p.forced.Rows) {
				s.st.ArchiveCutMismatches.Add(1)
				s.log.Error("archive: a cut taken over does not hold the rows its marker lists; writing what the stream gave",
					"first", p.forced.First, "last", p.forced.Last, "marker_rows", len(p.forced.Rows), "rows", len(c.Rows))
			}
			c.First, c.Last = p.forced.First, p.forced.Last
		} else {
			c.First = c.Rows[0]
			c.Last = c.Rows[len(c.Rows)-1]
		}
		seq, sub, _ := archive.ParsePos(c.Last)
		if err := s.db.Set(checkpoint.ArchiveCutKey(s.id, seq, sub), archive.MarshalCut(&c), pebble.Sync); err != nil {
			return fmt.Errorf("record archive cut: %w", err)
		}
		d.mu.Lock()
		d.mu.recorded = archive.MarshalCut(&c)
		d.mu.Unlock()
	} else if !sameRows(c.Objects, keysOf(objects)) {
		return fmt.Errorf("archive: recorded cut %s..%s names other objects than its entries give", c.First, c.Last)
	}
	if d.crashAt == crashAfterRecord {
		d.crash()
		return errArchiveBreak
	}
	lastSeq, lastSub, _ := archive.ParsePos(c.Last)
	ctx := d.ctx
	if err := d.cfg.Store.Put(ctx, archive.CutKey(d.cfg.Prefix, s.id, lastSeq, lastSub), archive.MarshalCut(&c)); err != nil {
		return fmt.Errorf("put archive cut marker: %w", err)
	}
	if d.crashAt == crashAfterMarker {
		d.crash()
		return errArchiveBreak
	}
	for _, o := range objects {
		if err := d.cfg.Store.Put(ctx, o.key, o.body); err != nil {
			return fmt.Errorf("put archive object %s: %w", o.key, err)
		}
	}
	b := s.db.NewBatch()
	_ = b.DeleteRange(prefix, upper, nil)
	_ = b.Delete(checkpoint.ArchiveCutKey(s.id, lastSeq, lastSub), nil)
	err = b.Commit(pebble.NoSync)
	_ = b.Close()
	if err != nil {
		return fmt.Errorf("delete archived entries: %w", err)
	}
	for _, o := range objects {
		s.st.ArchiveObjects[o.table].Add(1)
		s.st.ArchiveBytes[o.table].Add(int64(len(o.body)))
	}
	s.st.ArchiveCuts.Add(1)
	last := checkpoint.Pos{Seq: lastSeq, Sub: lastSub}
	d.mu.Lock()
	d.mu.recorded = nil
	if len(d.mu.forced) > 0 && d.mu.forced[0].Last == c.Last {
		d.mu.forced = d.mu.forced[1:]
	}
	if !d.mu.hasDone || last.Compare(d.mu.done) > 0 {
		d.mu.done, d.mu.hasDone = last, true
	}
	n := 0
	for n < len(d.mu.batches) && d.mu.batches[n].last.Compare(last) <= 0 {
		n++
	}
	d.mu.batches = d.mu.batches[n:]
	d.mu.bytes -= rows.bytes
	s.st.ArchivePendingBytes.Add(-rows.bytes)
	if len(d.mu.batches) == 0 {
		s.st.setArchiveOldest(s.id, time.Time{})
	} else {
		s.st.setArchiveOldest(s.id, d.mu.batches[0].at)
	}
	d.mu.Unlock()
	return nil
}

func (d *archiveDrain) crash() {
	if !d.crashed.Swap(true) {
		close(d.hit)
	}
}

var errArchiveBreak = errors.New("archive: fault injection")

// Fault injection of the archive's crash tests (archiveDrain.crashAt):
// every cut fails after that step, as if the process died there.
const (
	crashAfterRecord = 1
	crashAfterMarker = 2
)

func sameRows(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// cutRows is the content of a cut read back from Pebble.
type cutRows struct {
	pos    []checkpoint.Pos
	events []archive.Row
	dead   []archive.DeadLetterRow
	bytes  int64
}

func (d *archiveDrain) read(prefix, upper []byte) (cutRows, error) {
	var out cutRows
	it, err := d.s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
	if err != nil {
		return out, err
	}
	for it.First(); it.Valid(); it.Next() {
		pos := checkpoint.ArchiveKeyPos(prefix, it.Key())
		var ev archive.Row
		var dl archive.DeadLetterRow
		kind, err := decodeArchiveEntry(d.s.id, pos, it.Value(), &ev, &dl)
		if err != nil {
			_ = it.Close()
			return out, fmt.Errorf("archive entry %x: %w", it.Key(), err)
		}
		if kind == archiveKindEv {
			out.events = append(out.events, ev)
		} else {
			out.dead = append(out.dead, dl)
		}
		out.pos = append(out.pos, pos)
		out.bytes += int64(len(it.Value()))
	}
	return out, it.Close()
}

// cutObject is one object of a cut.
type cutObject struct {
	table int // 0 events, 1 dead letters
	key   string
	body  []byte
}

func keysOf(os []cutObject) []string {
	out := make([]string, len(os))
	for i := range os {
		out[i] = os[i].key
	}
	return out
}

// objects encodes the rows: one object per table and date (events by
// event date, dead letters by arrival date), keys in order.
func (r *cutRows) objects(prefix, shard string) []cutObject {
	if len(r.pos) == 0 {
		return nil
	}
	first := r.pos[0].Seq
	evDays := map[string][]archive.Row{}
	for _, e := range r.events {
		k := archive.ObjectKey(prefix, archive.EventsTable, e.EventTime, shard, first)
		evDays[k] = append(evDays[k], e)
	}
	dlDays := map[string][]archive.DeadLetterRow{}
	for _, e := range r.dead {
		k := archive.ObjectKey(prefix, archive.DeadLettersTable, e.ArrivalTime, shard, first)
		dlDays[k] = append(dlDays[k], e)
	}
	var out []cutObject
	for k, rows := range evDays {
		var buf bytes.Buffer
		if err := archive.WriteEvents(&buf, rows); err != nil {
			panic(err) // in-memory writer: cannot fail
		}
		out = append(out, cutObject{table: 0, key: k, body: buf.Bytes()})
	}
	for k, rows := range dlDays {
		var buf bytes.Buffer
		if err := archive.WriteDeadLetters(&buf, rows); err != nil {
			panic(err)
		}
		out = append(out, cutObject{table: 1, key: k, body: buf.Bytes()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}
