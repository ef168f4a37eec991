package sink

import (
	"context"
	"testing"

	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// TestShadowCountsWhatNeptuneSends: for the same batches, the shadow
// writer counts the requests and records the Neptune sink sends to the real
// Gremlin Server stand-in (vertex cache off), and writes nothing.
func TestShadowCountsWhatNeptuneSends(t *testing.T) {
	ep := testenv.Gremlin(t)
	checkNoLeaks(t)
	ns := testNS(t)
	w := genWorkloadNS(ns, 7, 20, 40, 30, 6)
	mod := func(c *Config) { c.BatchRecords = 50; c.VertexCacheSize = -1; c.Writers = 3 }
	n := realSink(t, ep, mod)
	writeAll(t, n, w.batches, 0)
	cfg := Config{}
	mod(&cfg)
	sh := NewShadow(cfg)
	for _, b := range w.batches {
		if err := sh.WriteBatch(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	got, want := sh.Stats(), n.Stats()
	if got.Batches != want.Batches || got.Requests != want.Requests || got.Records != want.Records || want.Records == 0 {
		t.Fatalf("shadow counted batches/requests/records %d/%d/%d, Neptune sent %d/%d/%d",
			got.Batches, got.Requests, got.Records, want.Batches, want.Requests, want.Records)
	}
	// Nothing written by the shadow: a second namespace stays empty.
	ns2 := testNS(t) + "shadow/"
	w2 := genWorkloadNS(ns2, 8, 5, 10, 10, 3)
	for _, b := range w2.batches {
		if err := sh.WriteBatch(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	if vs, es := dumpGraph(t, ep, ns2); len(vs) != 0 || len(es) != 0 {
		t.Fatalf("shadow wrote %d vertices and %d edges", len(vs), len(es))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sh.WriteBatch(ctx, w2.batches[0]); err == nil {
		t.Fatal("shadow acknowledged a batch with a cancelled context")
	}
}

// TestShadowSimulatesVertexCache: with the vertex cache on (its default
// size) and batches written one at a time (so Neptune merges no requests:
// the one thing the shadow does not simulate), the shadow counts exactly
// the requests, records and cache hits of the Neptune sink on the Gremlin
// Server stand-in. The workload repeats vertices across batches, so the
// cache saves records.
func TestShadowSimulatesVertexCache(t *testing.T) {
	ep := testenv.Gremlin(t)
	checkNoLeaks(t)
	ns := testNS(t)
	w := genWorkloadNS(ns, 9, 20, 40, 40, 6)
	mod := func(c *Config) { c.BatchRecords = 50; c.Writers = 3 }
	n := realSink(t, ep, mod)
	writeAll(t, n, w.batches, 0)
	cfg := Config{}
	mod(&cfg)
	sh := NewShadow(cfg)
	for _, b := range w.batches {
		if err := sh.WriteBatch(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	got, want := sh.Stats(), n.Stats()
	if want.CacheHits == 0 || want.Coalesced != 0 {
		t.Fatalf("Neptune: %d cache hits, %d coalesced records; want some hits and no merge for the test to mean anything",
			want.CacheHits, want.Coalesced)
	}
	if got.Batches != want.Batches || got.Requests != want.Requests || got.Records != want.Records || got.CacheHits != want.CacheHits {
		t.Fatalf("shadow counted batches/requests/records/cache hits %d/%d/%d/%d, Neptune sent %d/%d/%d/%d",
			got.Batches, got.Requests, got.Records, got.CacheHits, want.Batches, want.Requests, want.Records, want.CacheHits)
	}
	t.Logf("%d batches: %d requests, %d records, %d vertices left out by the cache (both)", got.Batches, got.Requests, got.Records, got.CacheHits)
}
