package processor

import (
	"context"
	"crypto/sha256"
	"strconv"
	"time"
)

// Shared dedup tier (DESIGN.md, Processor, "Shared dedup tier"). The dedup
// set of dedup.go is per shard and per worker: after a shard moves, its new
// owner does not know the old owner's hashes, so a producer retry that
// straddles the move is written again (harmless: writes are idempotent) and
// not counted as a duplicate (wrong exactly when a rollout compares
// duplicate counts). A [SharedDedup] store (Redis, internal/dedupredis),
// shared by every worker, closes that gap: each batch of records claims the
// SHA-256 of every record once, in one round trip, before the records run
// through the pipeline.
//
// A claim records its owner, the record's position (shard/seq/sub). A key
// already claimed by ANOTHER position is a duplicate; a key claimed by the
// same position is the same record delivered again (a replay after a crash
// or a lease move), not a duplicate: otherwise a record whose first
// processing was lost before its checkpoint would be skipped on replay and
// its lineage lost.
//
// The store never blocks ingestion: a claim that fails or times out
// ([DedupConfig.SharedTimeout]) leaves the batch to the local tier
// alone, counted in [Stats.SharedDedupFallbacks], and [Stats.SharedDedupDegraded]
// says so until a claim succeeds again.

// SharedDedup is a dedup store shared by the workers of one application.
// Implementations must be safe for concurrent use (every shard of a worker
// calls it) and must return promptly once ctx is done.
type SharedDedup interface {
	// Claim records, for each claim whose key is not yet in the store,
	// its Owner (kept for the store's TTL), and sets Prior to the owner
	// already recorded for keys that were ("" for the keys this call
	// recorded), and Count as its doc says. On error no Prior or Count may
	// be trusted.
	Claim(ctx context.Context, claims []SharedClaim) error
}

// SharedClaim is one record's claim on its idempotency key.
type SharedClaim struct {
	// Key is the SHA-256 of the record's bytes (the idempotency key).
	Key [32]byte
	// Owner is the record's position: "<shard>/<seq>/<sub>".
	Owner string
	// Prior is set by [SharedDedup.Claim]: the owner of an earlier claim
	// of the same key, "" if this claim was the first.
	Prior string
	// Count is set by [SharedDedup.Claim]: Prior is another position and
	// no earlier claim from this Owner was told so, i.e. this is the one
	// claim of a duplicate record that counts it. The store remembers the
	// counted positions (for its TTL), so a replay of the record (a moved
	// shard's new owner, or the old owner finishing its batch) does not
	// count it again.
	Count bool
}

// DefaultSharedDedupTimeout bounds one batch's claim.
const DefaultSharedDedupTimeout = 50 * time.Millisecond

// sharedBatch is the shared tier's answer for the records of one Process
// call, by index into recs.
type sharedBatch struct {
	claims []SharedClaim
	idx    []int // recs index -> claims index, -1: not claimed (skipped)
	ok     bool  // the claim succeeded: Prior is valid
}

// claimShared claims the keys of recs (those after the resume position)
// on the shared tier. It never fails: an error means the local tier
// decides alone for this batch.
func (s *Shard) claimShared(ctx context.Context, recs []Record) {
	b := &s.shared
	b.claims = b.claims[:0]
	b.idx = b.idx[:0]
	b.ok = false
	for i := range recs {
		r := &recs[i]
		if s.resume.Seq != "" && s.skipResumed(r) {
			b.idx = append(b.idx, -1)
			continue
		}
		b.idx = append(b.idx, len(b.claims))
		b.claims = append(b.claims, SharedClaim{Key: sha256.Sum256(r.Data), Owner: s.owner(r)})
	}
	if len(b.claims) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Dedup.SharedTimeout)
	start := time.Now()
	err := s.cfg.Dedup.Shared.Claim(cctx, b.claims)
	cancel()
	s.st.observeSharedClaim(time.Since(start))
	s.st.SharedDedupClaims.Add(int64(len(b.claims)))
	if err != nil {
		s.st.SharedDedupFallbacks.Add(int64(len(b.claims)))
		if !s.st.sharedDegraded.Swap(true) {
			s.log.Warn("shared dedup unavailable: the local tier decides alone until it answers again", "err", err)
		}
		return
	}
	if s.st.sharedDegraded.Swap(false) {
		s.log.Info("shared dedup available again")
	}
	b.ok = true
}

// owner is the position of r as a claim owner.
func (s *Shard) owner(r *Record) string {
	buf := make([]byte, 0, len(s.id)+len(r.Seq)+8)
	buf = append(buf, s.id...)
	buf = append(buf, '/')
	buf = append(buf, r.Seq...)
	buf = append(buf, '/')
	buf = strconv.AppendUint(buf, uint64(r.Sub), 10)
	return string(buf)
}

// sharedClaimOf returns the claim of recs[i], nil if there is none.
func (s *Shard) sharedClaimOf(i int) *SharedClaim {
	b := &s.shared
	if i >= len(b.idx) || b.idx[i] < 0 {
		return nil
	}
	return &b.claims[b.idx[i]]
}

// countDuplicate reports whether a duplicate record with claim c is
// counted in Stats.Duplicates. Without an answer from the shared tier the
// local tier decides (and counts) alone. With one, the shared tier counts:
// a record whose key another position owns counts once, on the claim Redis
// gave Count (so replays add nothing across workers); a record the local
// tier saw but the shared tier does not know as a duplicate counts only if
// the shared tier knew nothing of the key (its first copy was claimed while
// Redis was down or has expired there), not if this position owns the key
// (the same record again).
func (s *Shard) countDuplicate(c *SharedClaim) bool {
	switch {
	case c == nil || !s.shared.ok:
		return true
	case s.sharedDuplicate(c):
		return c.Count
	default:
		return c.Prior == ""
	}
}

// sharedDuplicate reports whether the shared tier saw c's key from
// another record.
func (s *Shard) sharedDuplicate(c *SharedClaim) bool {
	return c != nil && s.shared.ok && c.Prior != "" && c.Prior != c.Owner
}
