package processor

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/enc"
	"github.com/lineageflow/lineageflow/lineage"
)

// The event archive (DESIGN.md, "Archive"): every event that passes
// decode, guard and dedup, and every dead letter, becomes a pending archive
// entry s/<shard>/a/<seq><sub> in the barrier's synced batch, pinning the
// checkpoint like a window does. The shard's archive drain
// (archivedrain.go) cuts pending entries into Parquet objects and releases
// the pins; the graph drain never waits for it, only the KCL checkpoint
// does.

// ArchiveStore is the object store of the archive (archive/s3store over
// S3 in production). Implementations must be safe for concurrent use and
// return promptly once ctx is done.
type ArchiveStore interface {
	// Put writes body under key, replacing any object there.
	Put(ctx context.Context, key string, body []byte) error
	// Get returns the object under key.
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns, in key order, the keys under prefix that sort after
	// startAfter ("": all).
	List(ctx context.Context, prefix, startAfter string) ([]string, error)
}

// Archive defaults.
const (
	DefaultArchiveMinBytes = 64 << 20
	DefaultArchiveMaxAge   = 5 * time.Minute
)

// ArchiveConfig: the event archive (off when Store is nil).
type ArchiveConfig struct {
	Store ArchiveStore
	// Prefix is prepended to every key ("" or ending in "/").
	Prefix string
	// MinBytes and MaxAge: a shard's pending entries are cut into objects
	// when they hold MinBytes (default 64 MiB) or the oldest is MaxAge old
	// (default 5 min): the checkpoint lag the archive adds.
	MinBytes int64
	MaxAge   time.Duration
	// Backoff is the first retry delay of a failed cut (default 100 ms,
	// doubling up to 10 s).
	Backoff time.Duration
}

const (
	archiveV1       = 1
	archiveKindEv   = 1
	archiveKindDead = 2
)

// arcMode is what the archive does with the record being processed.
type arcMode uint8

const (
	arcNormal arcMode = iota // archived when valid and unique, or a dead letter
	arcSkip                  // in a cut already complete, or not in the cut being reproduced
	arcListed                // in a cut being reproduced: archived whatever dedup says
)

// arcGroup is the pending entries of one barrier: the last one, and the
// pin that holds the checkpoint before the first.
type arcGroup struct {
	last checkpoint.Pos
	pin  string
}

// arcPlan is what a shard taken over from its KCL checkpoint (no local
// state) learned from the cut markers after it: records at or before skip
// are in a complete cut; records up to end are archived iff listed (the
// cuts to reproduce exactly).
type arcPlan struct {
	skip checkpoint.Pos
	end  checkpoint.Pos
	rows map[checkpoint.Pos]struct{}
}

// archiveSide is the shard goroutine's half of the archive.
type archiveSide struct {
	mode arcMode
	plan *arcPlan
	// Entries since the last barrier: keys and values in buf.
	buf    []byte
	items  []arcItem
	bytes  int64
	pin    string // pin of the first entry since the last barrier
	last   checkpoint.Pos
	groups []arcGroup
	d      *archiveDrain
}

type arcItem struct{ k0, k1, v1 int }

func (s *Shard) archiveOn() bool { return s.arc != nil }

// archiveDecide sets the archive's mode for record r.
func (a *archiveSide) decide(r *Record) {
	a.mode = arcNormal
	p := a.plan
	if p == nil {
		return
	}
	pos := checkpoint.Pos{Seq: r.Seq, Sub: r.Sub}
	if p.skip.Seq != "" && pos.Compare(p.skip) <= 0 {
		a.mode = arcSkip
		return
	}
	if p.end.Seq != "" && pos.Compare(p.end) <= 0 {
		if _, ok := p.rows[pos]; ok {
			a.mode = arcListed
		} else {
			a.mode = arcSkip
		}
		return
	}
	a.plan = nil
}

// archiveEvent adds the pending entry of the event s.ev of record r
// (payload hash sum).
func (s *Shard) archiveEvent(r *Record, sum *[32]byte) {
	a := s.arc
	ev := &s.ev
	k0 := len(a.buf)
	a.buf = checkpoint.AppendArchiveKey(a.buf, s.id, r.Seq, r.Sub)
	k1 := len(a.buf)
	b := a.buf
	b = append(b, archiveV1, archiveKindEv)
	b = enc.AppendString(b, s.prevFull)
	b = enc.AppendVarint(b, r.Arrival.UnixMilli())
	b = enc.AppendVarint(b, ev.Time.UnixMilli())
	b = enc.AppendString(b, string(ev.Type))
	b = enc.AppendUvarint(b, uint64(ev.Kind))
	b = enc.AppendString(b, ev.RunID)
	b = enc.AppendString(b, ev.Job.Namespace)
	b = enc.AppendString(b, ev.Job.Name)
	if ev.Parent != nil {
		b = append(b, 1)
		b = enc.AppendString(b, ev.Parent.RunID)
		b = enc.AppendString(b, ev.Parent.Job.Namespace)
		b = enc.AppendString(b, ev.Parent.Job.Name)
	} else {
		b = append(b, 0)
	}
	b = enc.AppendString(b, ev.Producer)
	b = enc.AppendString(b, ev.SchemaURL)
	ins, outs := ev.Inputs, ev.Outputs
	if ev.Kind == lineage.KindDataset {
		ins, outs = nil, ev.Datasets
	}
	b = appendDatasets(b, ins)
	b = appendDatasets(b, outs)
	b = append(b, sum[:]...)
	b = enc.AppendUvarint(b, uint64(len(r.Data)))
	b = append(b, r.Data...)
	a.buf = b
	a.add(s, k0, k1, r)
	s.st.ArchiveEvents.Add(1)
}

func appendDatasets(b []byte, ds []lineage.Dataset) []byte {
	b = enc.AppendUvarint(b, uint64(len(ds)))
	for i := range ds {
		b = enc.AppendString(b, ds[i].Namespace)
		b = enc.AppendString(b, ds[i].Name)
	}
	return b
}

// archiveDeadLetter adds the pending entry of dead letter d (its raw bytes
// in full, not cut to DeadLetterBytes: the archive keeps the record).
func (s *Shard) archiveDeadLetter(r *Record, reason, detail string) {
	a := s.arc
	k0 := len(a.buf)
	a.buf = checkpoint.AppendArchiveKey(a.buf, s.id, r.Seq, r.Sub)
	k1 := len(a.buf)
	b := a.buf
	b = append(b, archiveV1, archiveKindDead)
	b = enc.AppendString(b, s.prevFull)
	b = enc.AppendVarint(b, r.Arrival.UnixMilli())
	b = enc.AppendString(b, reason)
	b = enc.AppendString(b, detail)
	b = enc.AppendUvarint(b, uint64(len(r.Data)))
	b = append(b, r.Data...)
	a.buf = b
	a.add(s, k0, k1, r)
	s.st.ArchiveDeadLetters.Add(1)
}

func (a *archiveSide) add(s *Shard, k0, k1 int, r *Record) {
	if len(a.items) == 0 {
		a.pin = s.prevFull
	}
	a.items = append(a.items, arcItem{k0: k0, k1: k1, v1: len(a.buf)})
	a.bytes += int64(len(a.buf) - k1)
	a.last = checkpoint.Pos{Seq: r.Seq, Sub: r.Sub}
}

// writeTo adds the entries since the last barrier to batch.
func (a *archiveSide) writeTo(batch *pebble.Batch) {
	for _, it := range a.items {
		_ = batch.Set(a.buf[it.k0:it.k1], a.buf[it.k1:it.v1], nil)
	}
}

// afterCommit pins the checkpoint for the entries the barrier made durable
// and hands them (and the new durable position) to the drain.
func (s *Shard) archiveAfterCommit() {
	a := s.arc
	if len(a.items) > 0 {
		s.pins.Add(a.pin)
		a.groups = append(a.groups, arcGroup{last: a.last, pin: a.pin})
		s.st.ArchivePendingBytes.Add(a.bytes)
	}
	a.d.push(s.durable, a.last, a.bytes, len(a.items) > 0)
	a.buf, a.items, a.bytes = a.buf[:0], a.items[:0], 0
	if cap(a.buf) > 4<<20 {
		a.buf = nil
	}
}

// archiveRelease releases the pins of the barriers whose entries are all
// archived.
func (s *Shard) archiveRelease() {
	a := s.arc
	done, ok := a.d.archivedThrough()
	if !ok {
		return
	}
	n := 0
	for _, g := range a.groups {
		if g.last.Compare(done) > 0 {
			break
		}
		s.pins.Release(g.pin)
		n++
	}
	a.groups = a.groups[n:]
}

// archiveResume restores the pending entries and a recorded cut (resume
// from Pebble): one pin group per run of entries with the same pin.
func (s *Shard) archiveResume() error {
	a := s.arc
	prefix := checkpoint.ArchivePrefix(s.id)
	var bytes int64
	var last checkpoint.Pos
	err := s.scan(prefix, func(k, v []byte) error {
		if len(v) < 2 || v[0] != archiveV1 {
			return fmt.Errorf("archive entry %x: %w", k, checkpoint.ErrCorrupt)
		}
		r := enc.NewReader(v[2:], checkpoint.ErrCorrupt)
		pin := r.String()
		if err := r.Err(); err != nil {
			return err
		}
		pos := checkpoint.ArchiveKeyPos(prefix, k)
		if n := len(a.groups); n > 0 && a.groups[n-1].pin == pin {
			a.groups[n-1].last = pos
		} else {
			a.groups = append(a.groups, arcGroup{last: pos, pin: pin})
			s.pins.Add(pin)
		}
		bytes += int64(len(v))
		last = pos
		return nil
	})
	if err != nil {
		return err
	}
	var cut []byte
	cp := checkpoint.ArchiveCutPrefix(s.id)
	err = s.scan(cp, func(k, v []byte) error {
		if cut != nil {
			return fmt.Errorf("archive: two recorded cuts: %w", checkpoint.ErrCorrupt)
		}
		cut = append([]byte(nil), v...)
		return nil
	})
	if err != nil {
		return err
	}
	s.st.ArchivePendingBytes.Add(bytes)
	a.d.resumed(last, bytes, cut)
	return nil
}

// archiveTakeOver reads the cut markers of the shard after the KCL
// checkpoint kcl (a start without local state) and plans what to skip and
// what to reproduce.
func (s *Shard) archiveTakeOver(ctx context.Context, kcl string) error {
	// Retried briefly: Start runs in the KCL's Initialize, which must
	// return before the lease's failover time (default 10 s).
	wait := 200 * time.Millisecond
	deadline := time.Now().Add(archiveTakeOverRetry)
	for {
		err := s.archiveTakeOverOnce(ctx, kcl)
		if err == nil || ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return err
		}
		s.st.ArchiveErrors.Add(1)
		s.log.Warn("archive: reading the cut markers failed; retrying", "err", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		wait = min(wait*2, 2*time.Second)
	}
}

// archiveTakeOverRetry bounds the retries of the markers' read at start.
const archiveTakeOverRetry = 5 * time.Second

func (s *Shard) archiveTakeOverOnce(ctx context.Context, kcl string) error {
	cfg := &s.cfg.Archive
	keys, err := cfg.Store.List(ctx, archive.CutPrefix(cfg.Prefix, s.id), archive.CutsAfter(cfg.Prefix, s.id, kcl))
	if err != nil {
		return fmt.Errorf("processor: %s: list archive cuts: %w", s.id, err)
	}
	s.arc.plan = nil
	s.arc.d.reproduce(nil)
	if len(keys) == 0 {
		return nil
	}
	p := &arcPlan{rows: map[checkpoint.Pos]struct{}{}}
	var forced []archive.Cut
	for _, k := range keys {
		b, err := cfg.Store.Get(ctx, k)
		if err != nil {
			return fmt.Errorf("processor: %s: read archive cut %s: %w", s.id, k, err)
		}
		c, err := archive.UnmarshalCut(b)
		if err != nil {
			return fmt.Errorf("processor: %s: archive cut %s: %w", s.id, k, err)
		}
		firstSeq, _, _ := archive.ParsePos(c.First)
		lastSeq, lastSub, _ := archive.ParsePos(c.Last)
		last := checkpoint.Pos{Seq: lastSeq, Sub: lastSub}
		if kcl != "" && checkpoint.CompareSeq(firstSeq, kcl) <= 0 {
			// Started at or before the checkpoint: complete (an
			// unfinished cut pins the checkpoint before its first
			// record), its records after the checkpoint are archived.
			if last.Compare(p.skip) > 0 {
				p.skip = last
			}
			continue
		}
		for _, r := range c.Rows {
			seq, sub, err := archive.ParsePos(r)
			if err != nil {
				return fmt.Errorf("processor: %s: archive cut %s: %w", s.id, k, err)
			}
			p.rows[checkpoint.Pos{Seq: seq, Sub: sub}] = struct{}{}
		}
		p.end = last
		forced = append(forced, c)
	}
	s.arc.plan = p
	s.arc.d.reproduce(forced)
	s.log.Info("archive: taking over cuts after the checkpoint", "kcl_checkpoint", kcl,
		"complete_through", p.skip.Seq, "to_reproduce", len(forced))
	return nil
}

// archiveRow decodes a pending event entry.
func decodeArchiveEntry(shard string, pos checkpoint.Pos, v []byte, ev *archive.Row, dl *archive.DeadLetterRow) (kind byte, err error) {
	if len(v) < 2 || v[0] != archiveV1 {
		return 0, checkpoint.ErrCorrupt
	}
	kind = v[1]
	r := enc.NewReader(v[2:], checkpoint.ErrCorrupt)
	_ = r.String() // pin
	arrival := time.UnixMilli(r.Varint()).UTC()
	switch kind {
	case archiveKindEv:
		*ev = archive.Row{Shard: shard, Sequence: pos.Seq, SubSequence: int64(pos.Sub), ArrivalTime: arrival}
		ev.EventTime = time.UnixMilli(r.Varint()).UTC()
		ev.EventType = r.String()
		ev.Kind = lineage.EventKind(r.Uvarint()).String()
		ev.RunID = r.String()
		ev.JobNamespace = r.String()
		ev.JobName = r.String()
		if r.Byte() == 1 {
			ev.ParentRunID = r.String()
			ns, name := r.String(), r.String()
			ev.ParentJob = ns + "/" + name
		}
		ev.Producer = r.String()
		ev.SchemaURL = r.String()
		ev.Inputs = readDatasets(&r)
		ev.Outputs = readDatasets(&r)
		var sum [32]byte
		for i := range sum {
			sum[i] = r.Byte()
		}
		ev.IdempotencyKey = hex.EncodeToString(sum[:])
		var ok bool
		if ev.Event, ok = lastBytes(&r); !ok {
			return 0, checkpoint.ErrCorrupt
		}
	case archiveKindDead:
		*dl = archive.DeadLetterRow{Shard: shard, Sequence: pos.Seq, SubSequence: int64(pos.Sub), ArrivalTime: arrival}
		dl.Reason = r.String()
		dl.Detail = r.String()
		var ok bool
		if dl.Record, ok = lastBytes(&r); !ok {
			return 0, checkpoint.ErrCorrupt
		}
	default:
		return 0, checkpoint.ErrCorrupt
	}
	return kind, r.Err()
}

// lastBytes reads the length-prefixed bytes that end an entry (copied:
// the entry's memory is Pebble's).
func lastBytes(r *enc.Reader) ([]byte, bool) {
	n := r.Uvarint()
	rest := r.Rest()
	if !r.OK() || uint64(len(rest)) != n {
		return nil, false
	}
	return append([]byte(nil), rest...), true
}

func readDatasets(r *enc.Reader) []string {
	n := r.Uvarint()
	if n > uint64(r.Len()) {
		_ = r.String() // fails the reader
		return nil
	}
	out := make([]string, 0, n)
	for i := uint64(0); i < n && r.OK(); i++ {
		ns, name := r.String(), r.String()
		out = append(out, ns+"/"+name)
	}
	return out
}
