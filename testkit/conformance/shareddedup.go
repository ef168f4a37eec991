package conformance

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/processor"
)

// SharedDedup runs the [processor.SharedDedup] conformance suite, each
// subtest on a fresh store from newStore (an empty key space). The
// contract the processor relies on (processor/shared.go: claimShared,
// countDuplicate):
//
//   - the first claim of a key wins: it gets Prior "" and Count false,
//     and its Owner is what every later claim of the key gets as Prior,
//     in a later call or later in the same call;
//   - a key claimed again by its own Owner (a replay of the record after
//     a crash or a lease move) gets Prior == Owner and Count false: not a
//     duplicate;
//   - a key claimed by another Owner is a duplicate: Prior is the first
//     owner, and Count is true exactly once per duplicate position (the
//     first claim from that Owner told so), false on its replays, so the
//     workers' duplicate counters add up exactly;
//   - Claim sets Prior and Count of every claim, whatever the caller left
//     in them; keys are independent; a Claim of nothing is a no-op;
//   - concurrent claims of one key (two workers at once) have one winner:
//     exactly one claim gets Prior "", and all the others its Owner;
//     concurrent claims of one duplicate position count it once;
//   - with ctx done, Claim returns promptly; if it returns nil its answers
//     hold (on an error the processor trusts none of them).
func SharedDedup(t *testing.T, newStore func(*testing.T) processor.SharedDedup) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := func(s string) [32]byte { return sha256.Sum256([]byte(s)) }
	claim := func(t *testing.T, s processor.SharedDedup, cs ...processor.SharedClaim) []processor.SharedClaim {
		t.Helper()
		if err := s.Claim(ctx, cs); err != nil {
			t.Fatalf("Claim of %d keys: %v", len(cs), err)
		}
		return cs
	}
	check := func(t *testing.T, what string, c processor.SharedClaim, prior string, count bool) {
		t.Helper()
		if c.Prior != prior || c.Count != count {
			t.Fatalf("%s: claim by %s: Prior %q, Count %v; want %q, %v", what, c.Owner, c.Prior, c.Count, prior, count)
		}
	}
	const a, b, c = "shardId-000000000001/49590338271490256608559692538361570959215759890000000001/0",
		"shardId-000000000002/49590338271490256608559692538361570959215759890000000007/0",
		"shardId-000000000002/49590338271490256608559692538361570959215759890000000009/3"

	t.Run("first claim wins", func(t *testing.T) {
		s := newStore(t)
		cs := claim(t, s, processor.SharedClaim{Key: key("one"), Owner: a}, processor.SharedClaim{Key: key("two"), Owner: b})
		check(t, "new key", cs[0], "", false)
		check(t, "new key", cs[1], "", false)
		cs = claim(t, s, processor.SharedClaim{Key: key("one"), Owner: c})
		check(t, "key of a", cs[0], a, true)
	})
	t.Run("same call sees its earlier claims", func(t *testing.T) {
		s := newStore(t)
		cs := claim(t, s, processor.SharedClaim{Key: key("k"), Owner: a}, processor.SharedClaim{Key: key("x"), Owner: c},
			processor.SharedClaim{Key: key("k"), Owner: b})
		check(t, "first", cs[0], "", false)
		check(t, "other key", cs[1], "", false)
		check(t, "second in the same call", cs[2], a, true)
	})
	t.Run("own replay is not a duplicate", func(t *testing.T) {
		s := newStore(t)
		claim(t, s, processor.SharedClaim{Key: key("k"), Owner: a})
		for i := range 3 {
			cs := claim(t, s, processor.SharedClaim{Key: key("k"), Owner: a})
			check(t, fmt.Sprintf("replay %d", i), cs[0], a, false)
		}
	})
	t.Run("a duplicate counts once per position", func(t *testing.T) {
		s := newStore(t)
		claim(t, s, processor.SharedClaim{Key: key("k"), Owner: a})
		check(t, "duplicate", claim(t, s, processor.SharedClaim{Key: key("k"), Owner: b})[0], a, true)
		for i := range 3 { // the duplicate's replays: by its new owner, or its old one finishing
			check(t, fmt.Sprintf("replay %d of the duplicate", i), claim(t, s, processor.SharedClaim{Key: key("k"), Owner: b})[0], a, false)
		}
		check(t, "another duplicate position", claim(t, s, processor.SharedClaim{Key: key("k"), Owner: c})[0], a, true)
		check(t, "the first owner again", claim(t, s, processor.SharedClaim{Key: key("k"), Owner: a})[0], a, false)
	})
	t.Run("claim sets prior and count", func(t *testing.T) {
		s := newStore(t)
		cs := claim(t, s, processor.SharedClaim{Key: key("k"), Owner: a, Prior: "stale", Count: true})
		check(t, "stale fields on a new key", cs[0], "", false)
		claim(t, s, processor.SharedClaim{Key: key("k"), Owner: b})
		cs = claim(t, s, processor.SharedClaim{Key: key("k"), Owner: b, Prior: "stale", Count: true})
		check(t, "stale fields on a counted duplicate", cs[0], a, false)
	})
	t.Run("empty claim", func(t *testing.T) {
		s := newStore(t)
		if err := s.Claim(ctx, nil); err != nil {
			t.Fatalf("Claim of nothing: %v", err)
		}
	})
	t.Run("many keys in one call", func(t *testing.T) {
		s := newStore(t)
		var cs []processor.SharedClaim
		for i := range 500 {
			cs = append(cs, processor.SharedClaim{Key: key(fmt.Sprint(i)), Owner: fmt.Sprintf("s/%d/0", i)})
		}
		claim(t, s, cs...)
		for i := range cs {
			check(t, "new", cs[i], "", false)
			cs[i].Owner = fmt.Sprintf("t/%d/0", i)
		}
		claim(t, s, cs...)
		for i := range cs {
			check(t, "again", cs[i], fmt.Sprintf("s/%d/0", i), true)
		}
	})
	t.Run("concurrent claims have one winner", func(t *testing.T) {
		s := newStore(t)
		const workers, keys = 8, 20
		answers := make([][]processor.SharedClaim, workers)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cs := make([]processor.SharedClaim, keys)
				for k := range cs {
					cs[k] = processor.SharedClaim{Key: key(fmt.Sprint("k", k)), Owner: fmt.Sprintf("shard-%d/%d/0", w, k)}
				}
				<-start
				errs[w] = s.Claim(ctx, cs)
				answers[w] = cs
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		for k := range keys {
			winner := ""
			for w := range workers {
				if answers[w][k].Prior == "" {
					if winner != "" {
						t.Fatalf("key %d: both %s and %s won", k, winner, answers[w][k].Owner)
					}
					winner = answers[w][k].Owner
				}
			}
			if winner == "" {
				t.Fatalf("key %d: no claim won", k)
			}
			for w := range workers {
				c := answers[w][k]
				if c.Owner != winner && (c.Prior != winner || !c.Count) {
					t.Fatalf("key %d: claim by %s: Prior %q, Count %v; want the winner %s, counted", k, c.Owner, c.Prior, c.Count, winner)
				}
			}
		}
	})
	t.Run("concurrent replays of a duplicate count once", func(t *testing.T) {
		s := newStore(t)
		claim(t, s, processor.SharedClaim{Key: key("k"), Owner: a})
		const workers = 8
		counted := make([]bool, workers)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cs := []processor.SharedClaim{{Key: key("k"), Owner: b}}
				<-start
				errs[w] = s.Claim(ctx, cs)
				counted[w] = cs[0].Count
				if errs[w] == nil && cs[0].Prior != a {
					errs[w] = fmt.Errorf("claim Prior %q, want %q", cs[0].Prior, a)
				}
			}()
		}
		close(start)
		wg.Wait()
		n := 0
		for w := range workers {
			if errs[w] != nil {
				t.Fatal(errs[w])
			}
			if counted[w] {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d of %d concurrent claims of one duplicate position counted it, want 1", n, workers)
		}
	})
	t.Run("done context", func(t *testing.T) {
		s := newStore(t)
		claim(t, s, processor.SharedClaim{Key: key("k"), Owner: a})
		done, cancel := context.WithCancel(ctx)
		cancel()
		cs := []processor.SharedClaim{{Key: key("k"), Owner: b}, {Key: key("new"), Owner: b}}
		start := time.Now()
		err := s.Claim(done, cs)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Claim with a done context took %v", d)
		}
		if err == nil {
			check(t, "answered with a done context", cs[0], a, true)
			check(t, "answered with a done context", cs[1], "", false)
		}
	})
}
