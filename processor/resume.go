package processor

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/window"
)

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
		s.windows.loadPin(k, v)
		return nil
	})
	if err == nil {
		err = s.scan(checkpoint.OutboxPrefix(s.id), func(k, v []byte) error {
			e, err := DecodeOutbox(v)
			if err != nil {
				return err
			}
			seq := checkpoint.OutboxSeq(s.id, k)
			s.windows.loadSealed(seq, e.Pin)
			s.drain.push([]uint64{seq}, nil)
			return nil
		})
	}
	if err == nil {
		rp := checkpoint.RunPrefix(s.id)
		err = s.scan(rp, func(k, v []byte) error {
			return s.runs.load(string(k[len(rp):]), v)
		})
	}
	if err == nil {
		err = s.scan(checkpoint.ExpiryPrefix(s.id), func(k, v []byte) error {
			return s.dedup.load(k)
		})
	}
	// Buckets with window entries but no pin key cannot exist (both are
	// written in the same batch); check it cheaply.
	if err == nil {
		wp := checkpoint.WindowPrefix(s.id)
		err = s.scanKeys(wp, s.windows.checkStored)
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

// OpenDB opens the worker's Pebble DB in dir ([checkpoint.Open]) with the
// processor's merge operator, [window.Merger]: the window entries a
// barrier writes are blind merges of deltas. Every process that opens a
// worker's DB (the worker, dead-letter listing, tests) opens it here.
func OpenDB(dir string, o checkpoint.Options) (*pebble.DB, error) {
	o.Merger = window.Merger
	return checkpoint.Open(dir, o)
}
