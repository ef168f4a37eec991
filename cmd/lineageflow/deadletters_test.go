package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// TestReplayParkedWritesAndDeletes: a parked item (a vertex set apart from
// its batch) is listed by -parked, written by -replay-parked to the
// Gremlin Server stand-in, then gone from the list.
func TestReplayParkedWritesAndDeletes(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the Gremlin Server stand-in")
	}
	ep := testenv.Gremlin(t)
	dir := t.TempDir()
	db, err := processor.OpenDB(dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := lineage.Dataset{Namespace: fmt.Sprintf("replay-%d", time.Now().UnixNano()), Name: "parked"}
	v := lineage.DatasetVertex(d)
	p := checkpoint.Parked{Shard: "shardId-000000000001", OutboxSeq: 7, At: time.Now().UTC(), Attempts: 1, Reason: "refused", Vertices: 1,
		Item: v.ID, Entry: processor.AppendOutbox(nil, &processor.OutboxEntry{Batch: lineage.Batch{Vertices: []lineage.Vertex{v}}})}
	if err := db.Set(checkpoint.ParkedItemKey(p.Shard, 7, 0), checkpoint.MarshalParked(&p), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := deadLetters(ctx, []string{"-data-dir", dir, "-replay-parked"}); err == nil {
		t.Error("-replay-parked without -sink accepted")
	}
	if err := deadLetters(ctx, []string{"-data-dir", dir, "-replay-parked", "-sink", "gremlin:" + ep}); err != nil {
		t.Fatal(err)
	}
	snap, err := graph.Dump(ep, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, gv := range snap.Vertices {
		found = found || gv.ID == v.ID
	}
	if !found {
		t.Error("the replayed vertex is not in the graph")
	}
	db, err = processor.OpenDB(dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	if err := checkpoint.ListParked(db, func(checkpoint.Parked) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d parked item(s) left after the replay, want 0", n)
	}
}
