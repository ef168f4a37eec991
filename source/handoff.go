package source

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
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
// leased, or trimmed) is not waited for. A failure to list the parents or
// to read a handoff is retried for ever (readHandoff): the child processes
// nothing and the worker is not ready meanwhile, since going on without the
// parent's open runs loses their edges. A handoff that does not exist
// (the parent ended before handoffs existed, or it expired) or cannot be
// decoded is logged and counted (HandoffsMissing), and the shard goes on
// without it: retrying cannot bring it. It returns false when the worker
// is stopping or the lease was lost (nothing loaded for good: called again
// next time).
func (p *recordProcessor) loadHandoff() bool {
	w, s := p.w, p.s
	var parents []string
	if !p.readHandoff(s.ID(), "", func(ctx context.Context) error {
		var err error
		parents, err = w.parents(ctx, s.ID())
		return err
	}) {
		return false
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
		if !p.readHandoff(s.ID(), parent, func(ctx context.Context) error {
			var err error
			data, ok, err = w.ho.Get(ctx, parent)
			return err
		}) {
			return false
		}
		if !ok && w.cfg.Pipeline.RunStore.Store != nil {
			// Normal with a run store: the parent wrote its runs there
			// (its last barrier, before SHARD_END) and no handoff; the
			// child loads the runs it meets from the store.
			continue
		}
		if !ok {
			w.log.Warn("handoff: no handoff from the parent (ended before handoffs existed, or expired); its open runs are lost here",
				"shard", s.ID(), "parent", parent)
			w.Stats().HandoffsMissing.Add(1)
			continue
		}
		got = append(got, loaded{parent, data})
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

// handoffWait is a child shard retrying a read (HandoffBlocked).
type handoffWait struct {
	parent   string // "": listing the shard's parents
	since    time.Time
	failures int
}

// defaultHandoffRetryMax caps the pause between two handoff reads
// (workerOptions.handoffRetryMax).
const defaultHandoffRetryMax = 5 * time.Second

// readHandoff calls fn (a read for child shard's handoff from parent)
// until it succeeds, with exponential backoff (200 ms doubling to
// defaultHandoffRetryMax), never giving up: meanwhile the shard is registered as
// waiting (Stats.HandoffsWaiting, HandoffBlocked: the worker is not ready)
// and every failure is counted. It returns false when the worker is
// stopping or this processor's lease was lost (checked every 30 s through
// the lease table when there is one).
func (p *recordProcessor) readHandoff(child, parent string, fn func(ctx context.Context) error) bool {
	w := p.w
	what := "handoff: reading the handoff of " + parent
	if parent == "" {
		what = "handoff: listing the parents of " + child
	}
	wait := 200 * time.Millisecond
	waiting := false
	defer func() {
		if waiting {
			w.mu.Lock()
			delete(w.mu.waits, child)
			w.mu.Unlock()
			w.Stats().HandoffsWaiting.Add(-1)
		}
	}()
	lastOwnerCheck := time.Now()
	for {
		ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
		err := fn(ctx)
		cancel()
		if err == nil {
			if waiting {
				w.log.Info(what+": read after failures; going on", "shard", child)
			}
			return true
		}
		if w.stopping() || p.lost.Load() {
			return false
		}
		w.Stats().HandoffReadFails.Add(1)
		w.mu.Lock()
		if w.mu.waits == nil {
			w.mu.waits = map[string]handoffWait{}
		}
		hw, ok := w.mu.waits[child]
		if !ok {
			hw = handoffWait{parent: parent, since: time.Now()}
		}
		hw.parent = parent
		hw.failures++
		w.mu.waits[child] = hw
		w.mu.Unlock()
		if !waiting {
			waiting = true
			w.Stats().HandoffsWaiting.Add(1)
		}
		w.log.Warn(what+": retrying (the shard waits: going on without it would lose the parent's open runs)",
			"shard", child, "err", err, "in", wait, "failures", hw.failures)
		if w.ddb != nil && p.s != nil && time.Since(lastOwnerCheck) >= 30*time.Second {
			lastOwnerCheck = time.Now()
			if owner, oerr := w.leaseOwner(w.ctx, child); oerr == nil && owner != w.cfg.WorkerID {
				w.log.Warn("lease lost while waiting for a handoff; abandoning the shard here", "shard", child, "owner", owner)
				p.abandonLost()
				return false
			}
		}
		select {
		case <-time.After(wait):
		case <-w.ctx.Done():
		case <-w.stop.Done():
		}
		wait = min(2*wait, w.opts.handoffRetryMax)
	}
}

// HandoffBlocked returns nil unless a child shard is waiting for a
// parent's handoff (or its list of parents) that it cannot read; then
// which, since when and how many failures (not the error text, which may
// name a host: it is in the log). For /readyz: such a worker is not ready.
func (w *Worker) HandoffBlocked() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.mu.waits) == 0 {
		return nil
	}
	shards := make([]string, 0, len(w.mu.waits))
	for s := range w.mu.waits {
		shards = append(shards, s)
	}
	sort.Strings(shards)
	var msgs []string
	for _, s := range shards {
		hw := w.mu.waits[s]
		what := "the handoff of parent " + hw.parent
		if hw.parent == "" {
			what = "its parent shards (ListShards)"
		}
		msgs = append(msgs, fmt.Sprintf("shard %s waiting for %s: %d failed read(s) since %s",
			s, what, hw.failures, hw.since.UTC().Format(time.RFC3339)))
	}
	return fmt.Errorf("handoff unreadable, retrying (details in the worker log): %s", strings.Join(msgs, "; "))
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
//
// With a run store there is no handoff: the shard's last barrier (Flush)
// wrote its changed runs to the store before SHARD_END, and a child loads
// the runs it meets from there (DESIGN.md, "Shared run store"). Children
// still wait for their parents' SHARD_END (loadHandoff) and still read a
// handoff if one exists (a parent that ran without a store, during a
// rollout).
func (p *recordProcessor) handOff() error {
	w, s := p.w, p.s
	if w.cfg.Pipeline.RunStore.Store != nil {
		w.log.Info("shard end: runs are in the run store (no handoff)", "shard", s.ID(), "runs", s.OpenRuns())
		return nil
	}
	data := s.HandoffState()
	err := w.retry(time.Minute, "handoff: writing the runs of "+s.ID(), func(ctx context.Context) error {
		return w.ho.Put(ctx, s.ID(), data)
	})
	if err != nil {
		return errors.Join(errors.New("handoff write"), err)
	}
	w.log.Info("handoff: runs written for the children", "shard", s.ID(), "runs", s.OpenRuns(), "bytes", len(data))
	return nil
}
