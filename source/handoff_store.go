package source

import (
	"context"
	"sync"
)

// Handoff carries a parent shard's run state to its children across a
// shard split or merge (DESIGN.md, "Shard lifecycle"); the processor encodes and loads the state ([processor.Shard.HandoffState], [processor.Shard.LoadHandoff]). Run state is per
// shard; when a shard ends, the runs it still holds (open ones and the
// committed or closed ones not yet expired) are written under the
// parent's shard id, and a child that starts without a KCL checkpoint
// loads the runs of its parents before its first record. Put must be
// idempotent (the same parent may be handed off twice).
type Handoff interface {
	// Put stores the encoded runs of shard (replacing any earlier Put).
	Put(ctx context.Context, shard string, runs []byte) error
	// Get returns what Put stored for shard, and false when nothing was.
	Get(ctx context.Context, shard string) ([]byte, bool, error)
}

// MemHandoff is an in-memory [Handoff] (tests, single-process runs).
type MemHandoff struct {
	mu sync.Mutex
	m  map[string][]byte
}

// NewMemHandoff returns an empty in-memory handoff store.
func NewMemHandoff() *MemHandoff { return &MemHandoff{m: map[string][]byte{}} }

// Put implements [Handoff].
func (h *MemHandoff) Put(_ context.Context, shard string, runs []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m[shard] = append([]byte(nil), runs...)
	return nil
}

// Get implements [Handoff].
func (h *MemHandoff) Get(_ context.Context, shard string) ([]byte, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.m[shard]
	return append([]byte(nil), b...), ok, nil
}
