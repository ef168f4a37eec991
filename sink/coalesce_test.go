package sink

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// allVertices is one batch that writes every vertex of w (and no edge), so
// that later batches find their endpoints in the vertex cache and go
// straight to their edges.
func (w workload) allVertices() Batch { return Batch{Key: "vertices", Vertices: w.vertices} }

// TestCoalesceQueued: edge requests of several batches that wait in one
// writer's queue are sent as one merged request; every batch is
// acknowledged, the graph equals the reference fold, and the records saved
// are exactly the duplicate edge ids among the merged batches.
func TestCoalesceQueued(t *testing.T) {
	checkNoLeaks(t)
	w := genWorkload(21, 12, 30, 8, 2) // few vertices: many edges repeat across batches
	g := newFakeGraph()
	n := fakeSink(t, g, func(c *Config) {
		c.Writers = 1
		c.InFlightPerWriter = len(w.batches) + 1
		c.BatchRecords = 100_000
		c.MaxRequestBytes = 4 << 20
		c.WriteBufferSize = 8 << 20
	})
	writeAll(t, n, []Batch{w.allVertices()}, 0)

	// Batch 0's edge request stalls on the graph until every other batch's
	// edge request is queued behind it.
	release, stalled := make(chan struct{}), make(chan struct{})
	var edgeCalls int
	var mu sync.Mutex
	g.fault = func(_ int, _ int, edges bool) error {
		if !edges {
			return nil
		}
		mu.Lock()
		edgeCalls++
		first := edgeCalls == 1
		mu.Unlock()
		if first {
			close(stalled)
			<-release
		}
		return nil
	}
	errs := make(chan error, len(w.batches))
	go func() { errs <- n.WriteBatch(context.Background(), w.batches[0]) }()
	<-stalled
	for _, b := range w.batches[1:] {
		go func() { errs <- n.WriteBatch(context.Background(), b) }()
	}
	waitFor(t, "every other edge request queued", func() bool { return len(n.writers[0].queue) == len(w.batches)-1 })
	close(release)
	for range w.batches {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	vs, es := g.dump()
	w.checkGraph(t, vs, es)
	if edgeCalls != 2 {
		t.Fatalf("%d edge requests, want 2 (batch 0's, then all the queued ones merged)", edgeCalls)
	}
	ids, all := map[string]bool{}, 0
	for _, b := range w.batches[1:] {
		for _, e := range b.Edges {
			ids[e.ID] = true
			all++
		}
	}
	st := n.Stats()
	if want := uint64(all - len(ids)); st.Coalesced != want || want == 0 {
		t.Fatalf("coalesced %d records, want %d (the repeated edge ids among batches 1..%d)", st.Coalesced, want, len(w.batches)-1)
	}
	t.Logf("%d batches: %d edge requests, %d records saved by merging", len(w.batches), edgeCalls, st.Coalesced)
}

// TestCoalesceCancelledMember: a batch whose ctx ends while its edges wait
// in the queue is answered with its ctx error and left out; the other
// batches of the group are still written.
func TestCoalesceCancelledMember(t *testing.T) {
	checkNoLeaks(t)
	w := genWorkload(22, 3, 10, 8, 2)
	g := newFakeGraph()
	n := fakeSink(t, g, func(c *Config) { c.Writers = 1; c.InFlightPerWriter = 8 })
	writeAll(t, n, []Batch{w.allVertices()}, 0)
	release, stalled := make(chan struct{}), make(chan struct{})
	var once sync.Once
	g.fault = func(_ int, _ int, edges bool) error {
		if edges {
			once.Do(func() { close(stalled); <-release })
		}
		return nil
	}
	first := make(chan error, 1)
	go func() { first <- n.WriteBatch(context.Background(), w.batches[0]) }()
	<-stalled
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() { cancelled <- n.WriteBatch(ctx, w.batches[1]) }()
	waitFor(t, "batch 1 queued", func() bool { return len(n.writers[0].queue) == 1 })
	kept := make(chan error, 1)
	go func() { kept <- n.WriteBatch(context.Background(), w.batches[2]) }()
	waitFor(t, "batch 2 queued", func() bool { return len(n.writers[0].queue) == 2 })
	cancel()
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-kept; err != nil {
		t.Fatal(err)
	}
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled batch: err = %v, want context.Canceled", err)
	}
	_, es := g.dump()
	got := map[string]lineage.Edge{}
	for _, e := range es {
		got[e.ID] = e
	}
	for _, b := range []Batch{w.batches[0], w.batches[2]} {
		for _, e := range b.Edges {
			if _, ok := got[e.ID]; !ok {
				t.Fatalf("edge %s of an acknowledged batch is not in the graph", e.ID)
			}
		}
	}
}

// TestRealCoalesce: batches written concurrently, as shards sealing the
// same window do, with a coalescing wait: Gremlin Server's graph equals
// the reference fold, and merging saved records.
func TestRealCoalesce(t *testing.T) {
	ep := testenv.Gremlin(t)
	checkNoLeaks(t)
	forShapes(t, func(t *testing.T, shape string) {
		ns := testNS(t)
		w := genWorkloadNS(ns, 23, 16, 30, 10, 3)
		n := realSink(t, ep, func(c *Config) {
			c.TraversalShape = shape
			c.Writers = 2
			c.InFlightPerWriter = len(w.batches)
			c.BatchRecords = 400
			c.CoalesceWait = 2 * time.Second
		})
		var wg sync.WaitGroup
		errs := make([]error, len(w.batches))
		for i, b := range w.batches {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = n.WriteBatch(context.Background(), b) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		vs, es := dumpGraph(t, ep, ns)
		w.checkGraph(t, vs, es)
		st := n.Stats()
		sent := 0
		for _, b := range w.batches {
			sent += len(b.Edges)
		}
		t.Logf("%d batches, %d edges in them: %d requests, %d records sent, %d saved by merging", len(w.batches), sent, st.Requests, st.Records, st.Coalesced)
		if st.Coalesced == 0 {
			t.Fatal("nothing merged although every batch was queued within the coalescing wait")
		}
	})
}
