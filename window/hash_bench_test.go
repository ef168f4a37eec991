package window

import (
	"testing"

	"github.com/lineageflow/lineageflow/lineage"
)

// The hashing a barrier does once per table entry: StoreKey for every
// entry, Edge (its id) for every edge entry sealed.

var (
	benchEdgeKey   = Key{Bucket: 1767225600000, Kind: KindEdge, Label: lineage.EdgeDerives, Out: "dataset:10:s3://lake/raw/orders", In: "dataset:10:s3://lake/mart/orders_daily"}
	benchVertexKey = Key{Bucket: 1767225600000, Kind: KindVertex, Label: lineage.LabelDataset, Out: "dataset:10:s3://lake/raw/orders"}
)

func BenchmarkStoreKeyEdge(b *testing.B) {
	b.ReportAllocs()
	var sink byte
	for i := 0; i < b.N; i++ {
		k := benchEdgeKey.StoreKey()
		sink ^= k[0]
	}
	_ = sink
}

func BenchmarkStoreKeyVertex(b *testing.B) {
	b.ReportAllocs()
	var sink byte
	for i := 0; i < b.N; i++ {
		k := benchVertexKey.StoreKey()
		sink ^= k[0]
	}
	_ = sink
}

func BenchmarkEntryEdge(b *testing.B) {
	b.ReportAllocs()
	e := EntryOf(benchEdgeKey, Props{First: 1, Last: 2, RunID: "r"})
	n := 0
	for i := 0; i < b.N; i++ {
		n += len(e.Edge().ID)
	}
	_ = n
}
