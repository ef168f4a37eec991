package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

// stopping reports whether the worker is stopping (graceful or fatal).
func (w *Worker) stopping() bool {
	return w.ctx.Err() != nil || (w.stop != nil && w.stop.Err() != nil)
}

// retry calls fn until it succeeds, the worker stops, or limit passes,
// with exponential backoff (200 ms doubling to 5 s).
func (w *Worker) retry(limit time.Duration, what string, fn func(ctx context.Context) error) error {
	deadline := time.Now().Add(limit)
	wait := 200 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
		err := fn(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if w.stopping() || time.Now().After(deadline) {
			return err
		}
		w.log.Warn(what+": retrying", "err", err, "in", wait)
		select {
		case <-time.After(wait):
		case <-w.ctx.Done():
		case <-w.stop.Done():
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// parents returns the parent shards of shard (ParentShardId and, for a
// merge, AdjacentParentShardId).
func (w *Worker) parents(ctx context.Context, shard string) ([]string, error) {
	var token *string
	for {
		in := &kinesis.ListShardsInput{NextToken: token}
		if token == nil {
			in.StreamName = aws.String(w.cfg.Stream)
		}
		out, err := w.kin.ListShards(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, sh := range out.Shards {
			if aws.ToString(sh.ShardId) != shard {
				continue
			}
			var ps []string
			for _, p := range []*string{sh.ParentShardId, sh.AdjacentParentShardId} {
				if aws.ToString(p) != "" {
					ps = append(ps, aws.ToString(p))
				}
			}
			return ps, nil
		}
		if out.NextToken == nil {
			return nil, fmt.Errorf("shard %s not in ListShards of %s", shard, w.cfg.Stream)
		}
		token = out.NextToken
	}
}

// loadHandoff loads the handoffs of the shard's parents into it, before
// its first record. For each parent it first waits until the parent's
// lease holds SHARD_END (v1.0.0 waits only for ParentShardId, not for a
// merge's AdjacentParentShardId); a parent without a lease row (never
// leased, or trimmed) is not waited for. A missing handoff is logged and
// counted, and the shard goes on without it. It returns false when the
// worker is stopping (nothing loaded for good: called again next time).
func (p *recordProcessor) loadHandoff() bool {
	w, s := p.w, p.s
	var parents []string
	err := w.retry(2*time.Minute, "handoff: listing the parents of "+s.ID(), func(ctx context.Context) error {
		var err error
		parents, err = w.parents(ctx, s.ID())
		return err
	})
	if err != nil {
		if w.stopping() {
			return false
		}
		w.log.Warn("handoff: parents unknown; starting without their runs", "shard", s.ID(), "err", err)
		p.needHandoff = false
		return true
	}
	type loaded struct {
		parent string
		data   []byte
	}
	var got []loaded
	for _, parent := range parents {
		if !p.waitShardEnd(parent) {
			return false
		}
		var data []byte
		var ok bool
		err := w.retry(2*time.Minute, "handoff: reading the handoff of "+parent, func(ctx context.Context) error {
			var err error
			data, ok, err = w.ho.Get(ctx, parent)
			return err
		})
		switch {
		case err != nil && w.stopping():
			return false
		case err != nil:
			w.log.Warn("handoff: cannot read the parent's runs; starting without them", "shard", s.ID(), "parent", parent, "err", err)
			w.Stats().HandoffsMissing.Add(1)
		case !ok:
			w.log.Warn("handoff: no handoff from the parent (ended before handoffs existed, or expired); its open runs are lost here",
				"shard", s.ID(), "parent", parent)
			w.Stats().HandoffsMissing.Add(1)
		default:
			got = append(got, loaded{parent, data})
		}
	}
	for _, l := range got {
		n, err := s.LoadHandoff(l.parent, l.data)
		if err != nil {
			w.log.Warn("handoff: unreadable; starting without it", "shard", s.ID(), "parent", l.parent, "err", err)
			w.Stats().HandoffsMissing.Add(1)
			continue
		}
		w.log.Info("handoff: runs loaded from the parent", "shard", s.ID(), "parent", l.parent, "runs", n)
	}
	p.needHandoff = false
	return true
}

// waitShardEnd waits until parent's lease checkpoint is SHARD_END (or the
// lease row does not exist). False when the worker is stopping.
func (p *recordProcessor) waitShardEnd(parent string) bool {
	w := p.w
	logged := time.Time{}
	for {
		_, ckpt, found, err := w.lease(w.ctx, parent)
		switch {
		case err == nil && (!found || ckpt == shardEnd):
			return true
		case err != nil:
			w.log.Warn("handoff: reading the parent's lease", "shard", p.s.ID(), "parent", parent, "err", err)
		case time.Since(logged) > 30*time.Second:
			w.log.Info("handoff: waiting for the parent shard to end", "shard", p.s.ID(), "parent", parent, "parent_checkpoint", ckpt)
			logged = time.Now()
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-w.ctx.Done():
		case <-w.stop.Done():
		}
		if w.stopping() {
			return false
		}
	}
}

// shardEnd is the KCL's checkpoint value of a finished shard.
const shardEnd = "SHARD_END"

// handOff writes the shard's runs to the handoff store (shard end, after
// Flush, before Checkpoint(nil)); retried for up to a minute.
func (p *recordProcessor) handOff() error {
	w, s := p.w, p.s
	data := s.HandoffState()
	err := w.retry(time.Minute, "handoff: writing the runs of "+s.ID(), func(ctx context.Context) error {
		return w.ho.Put(ctx, s.ID(), data)
	})
	if err != nil {
		return errors.Join(errors.New("handoff write"), err)
	}
	w.log.Info("handoff: runs written for the children", "shard", s.ID(), "runs", s.runs.len(), "bytes", len(data))
	return nil
}
