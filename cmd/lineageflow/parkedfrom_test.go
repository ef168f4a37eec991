package main

import (
	"testing"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/processor"
)

// A parked item is listed with the report that produced it: its run and
// eventTime.
func TestParkedFromNamesTheReport(t *testing.T) {
	t.Parallel()
	ed := lineage.Edge{ID: "e1", Label: "INPUT_TO", OutV: "a", InV: "b", FirstSeen: 1_700_000_000_000, LastSeen: 1_700_000_001_000, LastRunID: "run-7"}
	v := lineage.Vertex{ID: "v1", Label: "Dataset", Namespace: "ns", Name: "n",
		Props: lineage.MakeProps(lineage.StrLWW(lineage.PropLastRunID, "run-8", 1_700_000_002_000))}
	entry := func(b lineage.Batch) []byte { return processor.AppendOutbox(nil, &processor.OutboxEntry{Batch: b}) }
	for _, c := range []struct {
		p    checkpoint.Parked
		want string
	}{
		{checkpoint.Parked{Item: "e1", Entry: entry(lineage.Batch{Edges: []lineage.Edge{ed}})}, "run run-7 at 2023-11-14T22:13:21.000Z"},
		{checkpoint.Parked{Item: "v1", Entry: entry(lineage.Batch{Vertices: []lineage.Vertex{v}})}, "run run-8 at 2023-11-14T22:13:22.000Z"},
		{checkpoint.Parked{Item: "", Entry: entry(lineage.Batch{Edges: []lineage.Edge{ed}})}, "-"},
		{checkpoint.Parked{Item: "e1", Entry: []byte("garbage")}, "-"},
	} {
		if got := parkedFrom(c.p); got != c.want {
			t.Errorf("parkedFrom(item %q) = %q, want %q", c.p.Item, got, c.want)
		}
	}
}
