package processor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/window"
)

func appendVarint(dst []byte, v int64) []byte { return binary.AppendVarint(dst, v) }

// barrier writes one synced Pebble batch with the window deltas, the
// outbox entries of the windows sealed now (all open ones if sealAll), run
// state, dedup keys, dead letters and the position. boundary says the last
// processed record ends its sequence number (all sub-records processed).
func (s *Shard) barrier(ctx context.Context, sealAll, boundary bool) error {
	if s.failed != nil {
		return s.failed
	}
	start := time.Now()
	var sealing []int64
	for b := range s.buckets {
		if sealAll || s.wm.Sealed(b) {
			sealing = append(sealing, b)
		}
	}
	sort.Slice(sealing, func(i, j int) bool { return sealing[i] < sealing[j] })
	if len(sealing) > 0 {
		if err := s.drain.waitSpace(ctx, s.cfg.OutboxCap); err != nil {
			return err
		}
	}
	isSealing := func(b int64) bool {
		i := sort.Search(len(sealing), func(i int) bool { return sealing[i] >= b })
		return i < len(sealing) && sealing[i] == b
	}

	batch := s.db.NewBatch()
	defer func() { _ = batch.Close() }()

	// Window deltas: blind merges for windows that stay open. Entries of
	// sealing windows are folded in memory with what Pebble holds, keyed
	// by store key; a sealing window Pebble holds nothing of (opened and
	// sealed between two barriers, the common case) needs no store keys,
	// no iterator and no range deletion.
	sealedStored := map[int64]map[[32]byte]window.Entry{}
	sealedMem := map[int64][]window.Entry{}
	s.tab.Range(func(k window.Key, p window.Props) {
		e := window.EntryOf(k, p)
		if isSealing(k.Bucket) {
			if !s.buckets[k.Bucket].stored {
				sealedMem[k.Bucket] = append(sealedMem[k.Bucket], e)
				return
			}
			m := sealedStored[k.Bucket]
			if m == nil {
				m = map[[32]byte]window.Entry{}
				sealedStored[k.Bucket] = m
			}
			m[k.StoreKey()] = e
			return
		}
		sk := k.StoreKey()
		s.keyBuf = checkpoint.AppendWindowKey(s.keyBuf[:0], s.id, k.Bucket, &sk)
		s.valBuf = window.AppendEntry(s.valBuf[:0], &e)
		_ = batch.Merge(s.keyBuf, s.valBuf, nil)
		s.buckets[k.Bucket].stored = true
	})
	for b, st := range s.buckets {
		if st.dirty && !isSealing(b) {
			s.keyBuf = checkpoint.AppendBucketMetaKey(s.keyBuf[:0], s.id, b)
			_ = batch.Set(s.keyBuf, []byte(st.pin), nil)
			st.meta = true
		}
	}
	var newOutbox []uint64
	for _, b := range sealing {
		n, err := s.seal(batch, b, sealedStored[b], sealedMem[b], &newOutbox)
		if err != nil {
			return s.fail(err)
		}
		if n > 0 {
			s.groups = append(s.groups, sealGroup{last: newOutbox[len(newOutbox)-1], pin: s.buckets[b].pin})
		} else {
			s.pins.Release(s.buckets[b].pin)
		}
	}

	// Runs.
	s.expireRuns()
	for _, id := range s.dropRuns {
		s.keyBuf = checkpoint.AppendRunKey(s.keyBuf[:0], s.id, id)
		_ = batch.Delete(s.keyBuf, nil)
	}
	for _, r := range s.dirtyRuns {
		r.dirty = false
		if s.runs[r.id] != r {
			continue
		}
		s.valBuf = appendRun(s.valBuf[:0], r)
		s.keyBuf = checkpoint.AppendRunKey(s.keyBuf[:0], s.id, r.id)
		_ = batch.Set(s.keyBuf, s.valBuf, nil)
	}

	// Dedup keys and their expiry.
	for i := range s.dedupNew {
		d := &s.dedupNew[i]
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], uint64(d.arrival))
		s.keyBuf = checkpoint.AppendDedupKey(s.keyBuf[:0], s.id, &d.h)
		_ = batch.Set(s.keyBuf, v[:], nil)
		s.keyBuf = checkpoint.AppendExpiryKey(s.keyBuf[:0], s.id, d.arrival, &d.h)
		_ = batch.Set(s.keyBuf, nil, nil)
	}
	if err := s.expireDedup(); err != nil {
		return s.fail(fmt.Errorf("dedup expiry: %w", err))
	}
	for i := range s.dedupExpired {
		d := &s.dedupExpired[i]
		s.keyBuf = checkpoint.AppendDedupKey(s.keyBuf[:0], s.id, &d.h)
		_ = batch.Delete(s.keyBuf, nil)
		s.keyBuf = checkpoint.AppendExpiryKey(s.keyBuf[:0], s.id, d.arrival, &d.h)
		_ = batch.Delete(s.keyBuf, nil)
	}
	for _, d := range s.dead {
		_ = batch.Set(d.key, d.val, nil)
	}

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

	if err := batch.Commit(pebble.Sync); err != nil {
		return s.fail(fmt.Errorf("barrier commit: %w", err))
	}

	// Durable: update the in-memory view.
	s.durable = durable
	for _, b := range sealing {
		delete(s.buckets, b)
	}
	for _, st := range s.buckets {
		st.dirty = false
	}
	s.tab.Reset()
	s.dirtyRuns = s.dirtyRuns[:0]
	s.dropRuns = s.dropRuns[:0]
	s.dedupNew = s.dedupNew[:0]
	s.dedupExpired = s.dedupExpired[:0]
	s.evictDedup()
	s.dead = s.dead[:0]
	s.st.WindowsSealed.Add(int64(len(sealing)))
	s.st.OutboxWritten.Add(int64(len(newOutbox)))
	s.drain.push(newOutbox)
	s.lastBarrier = s.cfg.Clock()
	s.st.observeBarrier(time.Since(start))
	return nil
}

// seal appends to batch the outbox entries of window bucket (what Pebble
// holds folded with the in-memory deltas mem) and deletes the window.
// Entries of a window Pebble holds nothing of (bucket not stored) come in
// memOnly instead.
func (s *Shard) seal(batch *pebble.Batch, bucket int64, mem map[[32]byte]window.Entry, memOnly []window.Entry, out *[]uint64) (int, error) {
	bs := s.buckets[bucket]
	var vertices map[string]lineage.Vertex
	var edges []lineage.Edge
	vertices = map[string]lineage.Vertex{}
	add := func(e *window.Entry) {
		if e.Kind == window.KindVertex {
			vertices[e.Out] = e.Vertex()
		} else {
			edges = append(edges, e.Edge())
		}
	}
	if !bs.stored {
		edges = make([]lineage.Edge, 0, len(memOnly))
		for i := range memOnly {
			add(&memOnly[i])
		}
		if bs.meta {
			s.keyBuf = checkpoint.AppendBucketMetaKey(s.keyBuf[:0], s.id, bucket)
			_ = batch.Delete(s.keyBuf, nil)
		}
		return s.sealOut(batch, bucket, edges, vertices, out), nil
	}
	prefix := checkpoint.BucketPrefix(s.id, bucket)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: checkpoint.PrefixEnd(prefix)})
	if err != nil {
		return 0, err
	}
	for it.First(); it.Valid(); it.Next() {
		var e window.Entry
		if _, err := window.DecodeEntry(it.Value(), &e); err != nil {
			_ = it.Close()
			return 0, fmt.Errorf("window entry %x: %w", it.Key(), err)
		}
		var sk [32]byte
		copy(sk[:], it.Key()[len(prefix):])
		if m, ok := mem[sk]; ok {
			e.Merge(m)
			delete(mem, sk)
		}
		add(&e)
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	for _, e := range mem {
		add(&e)
	}
	_ = batch.DeleteRange(prefix, checkpoint.PrefixEnd(prefix), nil)
	_ = batch.Delete(checkpoint.BucketMetaKey(s.id, bucket), nil)
	return s.sealOut(batch, bucket, edges, vertices, out), nil
}

// sealOut writes the outbox entries of a sealed window.
func (s *Shard) sealOut(batch *pebble.Batch, bucket int64, edges []lineage.Edge, vertices map[string]lineage.Vertex, out *[]uint64) int {
	pin := s.buckets[bucket].pin
	n := 0
	for _, b := range chunk(edges, vertices, s.cfg.ChunkRecords) {
		seq := s.nextOutbox
		s.nextOutbox++
		entry := checkpoint.OutboxEntry{Pin: pin, Bucket: bucket, Batch: b}
		s.valBuf = checkpoint.AppendOutbox(s.valBuf[:0], &entry)
		_ = batch.Set(checkpoint.OutboxKey(s.id, seq), s.valBuf, nil)
		*out = append(*out, seq)
		s.st.EdgesEmitted.Add(int64(len(b.Edges)))
		s.st.VerticesEmitted.Add(int64(len(b.Vertices)))
		n++
	}
	return n
}

// chunk cuts a sealed window into batches of at most max records, each
// edge in the same batch as its two endpoint vertices (mergeE needs them),
// vertices first. Vertices no edge touches (DatasetEvents) come last.
func chunk(edges []lineage.Edge, vertices map[string]lineage.Vertex, max int) []sink.Batch {
	sort.Slice(edges, func(i, j int) bool { return edges[i].ID < edges[j].ID })
	var out []sink.Batch
	var cur sink.Batch
	in := map[string]bool{}
	used := map[string]bool{}
	flush := func() {
		if len(cur.Vertices)+len(cur.Edges) > 0 {
			out = append(out, cur)
		}
		cur = sink.Batch{}
		clear(in)
	}
	for _, e := range edges {
		need := 1
		if !in[e.OutV] {
			need++
		}
		if !in[e.InV] && e.InV != e.OutV {
			need++
		}
		if len(cur.Vertices)+len(cur.Edges)+need > max {
			flush()
		}
		for _, id := range []string{e.OutV, e.InV} {
			if !in[id] {
				if v, ok := vertices[id]; ok {
					cur.Vertices = append(cur.Vertices, v)
				}
				in[id] = true
				used[id] = true
			}
		}
		cur.Edges = append(cur.Edges, e)
	}
	var rest []string
	for id := range vertices {
		if !used[id] {
			rest = append(rest, id)
		}
	}
	sort.Strings(rest)
	for _, id := range rest {
		if len(cur.Vertices)+len(cur.Edges)+1 > max {
			flush()
		}
		cur.Vertices = append(cur.Vertices, vertices[id])
	}
	flush()
	return out
}

// loadPosition reads the shard's position, if any.
func (s *Shard) loadPosition() (checkpoint.Position, bool, error) {
	v, closer, err := s.db.Get(checkpoint.PosKey(s.id))
	if errors.Is(err, pebble.ErrNotFound) {
		return checkpoint.Position{}, false, nil
	}
	if err != nil {
		return checkpoint.Position{}, false, fmt.Errorf("processor: read position of %s: %w", s.id, err)
	}
	defer closer.Close()
	p, err := checkpoint.DecodePosition(v)
	if err != nil {
		return p, false, fmt.Errorf("processor: position of %s: %w", s.id, err)
	}
	return p, true, nil
}

// discardLocal deletes every key of the shard (not its dead letters).
func (s *Shard) discardLocal() error {
	p := checkpoint.ShardPrefix(s.id)
	if err := s.db.DeleteRange(p, checkpoint.PrefixEnd(p), pebble.Sync); err != nil {
		return fmt.Errorf("processor: discard local state of %s: %w", s.id, err)
	}
	return nil
}

// resumeFrom rebuilds the in-memory state from Pebble.
func (s *Shard) resumeFrom(pos checkpoint.Position) error {
	s.resume, s.last = pos.Last, pos.Last
	s.curSeq, s.prevFull, s.durable, s.reported = pos.Last.Seq, pos.Durable, pos.Durable, ""
	if pos.Last.Seq == pos.Durable {
		s.prevFull = pos.Durable
	}
	if pos.WMSet {
		s.wm.Restore(pos.Watermark)
	}
	s.maxArrival, s.nextOutbox = pos.MaxArrival, pos.NextOutbox
	err := s.scan(checkpoint.BucketMetaPrefix(s.id), func(k, v []byte) error {
		b := int64(binary.BigEndian.Uint64(k[len(checkpoint.BucketMetaPrefix(s.id)):]))
		s.buckets[b] = &bucketState{pin: string(v), stored: true, meta: true}
		s.pins.Add(string(v))
		return nil
	})
	if err == nil {
		err = s.scan(checkpoint.OutboxPrefix(s.id), func(k, v []byte) error {
			e, err := checkpoint.DecodeOutbox(v)
			if err != nil {
				return err
			}
			seq := checkpoint.OutboxSeq(s.id, k)
			s.groups = append(s.groups, sealGroup{last: seq, pin: e.Pin})
			s.pins.Add(e.Pin)
			s.drain.push([]uint64{seq})
			return nil
		})
	}
	if err == nil {
		rp := checkpoint.RunPrefix(s.id)
		err = s.scan(rp, func(k, v []byte) error {
			id := string(k[len(rp):])
			r, err := s.decodeRun(id, v)
			if err != nil {
				return err
			}
			s.runs[id] = r
			if r.status == runOpen && !r.handoff {
				s.pins.Add(r.pin)
			}
			return nil
		})
	}
	if err == nil {
		xp := checkpoint.ExpiryPrefix(s.id)
		err = s.scan(xp, func(k, v []byte) error {
			var d dedupItem
			rest := k[len(xp):]
			if len(rest) != 24 {
				return checkpoint.ErrCorrupt
			}
			d.arrival = int64(binary.BigEndian.Uint64(rest[:8]))
			copy(d.h[:], rest[8:])
			s.dedup[d.h] = struct{}{}
			s.dedupFIFO = append(s.dedupFIFO, d)
			s.evictDedup() // everything loaded is durable
			return nil
		})
	}
	// Buckets with window entries but no pin key cannot exist (both are
	// written in the same batch); check it cheaply.
	if err == nil {
		wp := checkpoint.WindowPrefix(s.id)
		err = s.scanKeys(wp, func(k []byte) error {
			if _, ok := s.buckets[checkpoint.BucketFromWindowKey(s.id, k)]; !ok {
				return fmt.Errorf("window entry %x without a bucket pin", k)
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("processor: resume %s: %w", s.id, err)
	}
	return nil
}

func (s *Shard) scan(prefix []byte, fn func(k, v []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: checkpoint.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if err := fn(bytes.Clone(it.Key()), it.Value()); err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

func (s *Shard) scanKeys(prefix []byte, fn func(k []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: checkpoint.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	var last int64 = -1 << 63
	for it.First(); it.Valid(); it.Next() {
		b := checkpoint.BucketFromWindowKey(s.id, it.Key())
		if b == last {
			continue
		}
		last = b
		if err := fn(it.Key()); err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}
