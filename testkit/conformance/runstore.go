package conformance

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/processor"
)

// RunStore runs the [processor.RunStore] conformance suite, each subtest
// on a fresh store from newStore. The contract the processor relies on
// (processor/runstore.go: prefetchRuns, fetchRun, saveRuns):
//
//   - Get reports only what Put made durable: an id never Put is absent
//     from the map (not an error, not an empty value), and the map holds
//     no id that was not asked;
//   - a value Put is read back byte for byte, up to MaxRunItemBytes, and
//     a later Put of the same id replaces it (longer or shorter);
//   - one Put or Get takes any number of items (the processor sends every
//     run changed since the last barrier in one Put, and every unknown
//     runId of a Process call in one Get), present and absent ids mixed;
//   - one id twice in one Put or one Get is refused (DynamoDB refuses
//     it; the processor never sends it, and the in-memory store must not
//     hide it if it did); a Put or Get of nothing is a no-op;
//   - the store copies: the caller may reuse what it Put, and what Get
//     returns is the caller's;
//   - items are independent, and the store is safe for concurrent use
//     (every shard of a worker calls it);
//   - an item past its Expires may still be read (TTL deletes lazily: the
//     processor checks the retention itself) or be gone, never changed;
//   - with ctx done, Put and Get return promptly, and a Put that returns
//     nil has made its items durable (the barrier commits only then).
func RunStore(t *testing.T, newStore func(*testing.T) processor.RunStore) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp := time.Now().Add(72 * time.Hour).Truncate(time.Second)
	item := func(id string, v []byte) processor.RunItem {
		return processor.RunItem{ID: id, Shard: "shardId-000000000001", Value: v, Status: "open", Job: "ns/job", Expires: exp}
	}
	mustPut := func(t *testing.T, s processor.RunStore, items ...processor.RunItem) {
		t.Helper()
		if err := s.Put(ctx, items); err != nil {
			t.Fatalf("Put of %d items: %v", len(items), err)
		}
	}
	mustGet := func(t *testing.T, s processor.RunStore, ids ...string) map[string][]byte {
		t.Helper()
		got, err := s.Get(ctx, ids)
		if err != nil {
			t.Fatalf("Get of %d ids: %v", len(ids), err)
		}
		for id := range got {
			if !slices.Contains(ids, id) {
				t.Fatalf("Get(%q) returned %q, which was not asked", ids, id)
			}
		}
		return got
	}

	t.Run("absent ids are absent", func(t *testing.T) {
		s := newStore(t)
		if got := mustGet(t, s, "never-put", "nor-this"); len(got) != 0 {
			t.Fatalf("Get of ids never Put = %v; want an empty map", got)
		}
	})
	t.Run("round trip", func(t *testing.T) {
		s := newStore(t)
		all := make([]byte, 256)
		for i := range all {
			all[i] = byte(i)
		}
		values := map[string][]byte{
			"0190a3c4-7d7e-7a3e-9c1b-1f2e3d4c5b6a": all,
			"run/with/slashes":                     []byte("x"),
			"rün ünïcode":                          {0},
			"max":                                  bytes.Repeat([]byte{0xAB}, processor.MaxRunItemBytes),
		}
		var items []processor.RunItem
		var ids []string
		for id, v := range values {
			items = append(items, item(id, v))
			ids = append(ids, id)
		}
		mustPut(t, s, items...)
		got := mustGet(t, s, append(ids, "absent")...)
		if len(got) != len(values) {
			t.Fatalf("Get returned %d runs, want the %d Put", len(got), len(values))
		}
		for id, v := range values {
			if !bytes.Equal(got[id], v) {
				t.Fatalf("run %q: Get = %d bytes, want the %d bytes Put", id, len(got[id]), len(v))
			}
		}
	})
	t.Run("put replaces, longer then shorter", func(t *testing.T) {
		s := newStore(t)
		for _, v := range [][]byte{[]byte("short"), bytes.Repeat([]byte("run-state|"), 5000), []byte("shorter again")} {
			it := item("r", v)
			it.Status = "committed"
			mustPut(t, s, it)
			if got := mustGet(t, s, "r"); !bytes.Equal(got["r"], v) {
				t.Fatalf("after Put of %d bytes: Get = %d bytes", len(v), len(got["r"]))
			}
		}
	})
	t.Run("put is idempotent", func(t *testing.T) {
		s := newStore(t)
		for range 2 {
			mustPut(t, s, item("r", []byte("same")))
		}
		if got := mustGet(t, s, "r"); string(got["r"]) != "same" {
			t.Fatalf("after two identical Puts: Get = %q", got["r"])
		}
	})
	t.Run("many items in one call", func(t *testing.T) {
		// More than one request's worth (DynamoDB: 25 per write, 100
		// per read), half of the ids asked absent.
		s := newStore(t)
		const n = 260
		var items []processor.RunItem
		for i := range n {
			items = append(items, item(fmt.Sprintf("run-%04d", i), []byte(fmt.Sprintf("state-%d", i))))
		}
		mustPut(t, s, items...)
		var ids []string
		for i := range n {
			ids = append(ids, fmt.Sprintf("run-%04d", i), fmt.Sprintf("absent-%04d", i))
		}
		got := mustGet(t, s, ids...)
		if len(got) != n {
			t.Fatalf("Get of %d ids = %d runs, want the %d Put", len(ids), len(got), n)
		}
		for i := range n {
			if id := fmt.Sprintf("run-%04d", i); string(got[id]) != fmt.Sprintf("state-%d", i) {
				t.Fatalf("run %s = %q", id, got[id])
			}
		}
	})
	t.Run("one id twice in one put is refused", func(t *testing.T) {
		s := newStore(t)
		if err := s.Put(ctx, []processor.RunItem{item("r", []byte("a")), item("r", []byte("b"))}); err == nil {
			t.Fatal("Put with one id twice returned nil; DynamoDB refuses it")
		}
	})
	t.Run("one id twice in one get is refused", func(t *testing.T) {
		s := newStore(t)
		mustPut(t, s, item("r", []byte("a")))
		if _, err := s.Get(ctx, []string{"r", "x", "r"}); err == nil {
			t.Fatal("Get with one id twice returned nil; DynamoDB refuses it")
		}
	})
	t.Run("empty calls", func(t *testing.T) {
		s := newStore(t)
		if err := s.Put(ctx, nil); err != nil {
			t.Fatalf("Put of no items: %v", err)
		}
		if got, err := s.Get(ctx, nil); err != nil || len(got) != 0 {
			t.Fatalf("Get of no ids = %v, %v; want nothing, nil", got, err)
		}
	})
	t.Run("caller owns the bytes", func(t *testing.T) {
		s := newStore(t)
		in := []byte("abcdefghijklmnop")
		mustPut(t, s, item("r", in))
		in[0] = 'X' // the store must have copied
		got := mustGet(t, s, "r")
		got["r"][1] = 'Y' // and must hand out a copy
		if again := mustGet(t, s, "r"); string(again["r"]) != "abcdefghijklmnop" {
			t.Fatalf("Get = %q; want the bytes as Put, untouched by the caller", again["r"])
		}
	})
	t.Run("concurrent callers", func(t *testing.T) {
		// Eight shards of one worker at once, each writing and reading
		// its own runs in turn.
		s := newStore(t)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for g := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for round := range 3 {
					var items []processor.RunItem
					var ids []string
					for i := range 10 {
						id := fmt.Sprintf("g%d-run%d", g, i)
						items = append(items, item(id, []byte(fmt.Sprintf("%d/%d", round, i))))
						ids = append(ids, id)
					}
					if err := s.Put(ctx, items); err != nil {
						errs[g] = err
						return
					}
					got, err := s.Get(ctx, ids)
					if err != nil {
						errs[g] = err
						return
					}
					for i, id := range ids {
						if want := fmt.Sprintf("%d/%d", round, i); string(got[id]) != want {
							errs[g] = fmt.Errorf("round %d: run %s = %q, want %q", round, id, got[id], want)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("expired items are read back or gone", func(t *testing.T) {
		s := newStore(t)
		it := item("old", []byte("old state"))
		it.Expires = time.Now().Add(-time.Hour)
		mustPut(t, s, it)
		if v, ok := mustGet(t, s, "old")["old"]; ok && string(v) != "old state" {
			t.Fatalf("expired run read back as %q; want its value or nothing", v)
		}
	})
	t.Run("done context", func(t *testing.T) {
		s := newStore(t)
		mustPut(t, s, item("before", []byte("v")))
		done, cancel := context.WithCancel(ctx)
		cancel()
		start := time.Now()
		err := s.Put(done, []processor.RunItem{item("during", []byte("w"))})
		got, gerr := s.Get(done, []string{"before"})
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("Put and Get with a done context took %v", d)
		}
		if err == nil { // then it must be durable
			if got := mustGet(t, s, "during"); string(got["during"]) != "w" {
				t.Fatalf("Put with a done context returned nil but Get = %q", got["during"])
			}
		}
		if gerr == nil && string(got["before"]) != "v" {
			t.Fatalf("Get with a done context returned nil but %q", got["before"])
		}
		if got := mustGet(t, s, "before"); string(got["before"]) != "v" {
			t.Fatalf("after calls with a done context: Get = %q, want the earlier value", got["before"])
		}
	})
}
