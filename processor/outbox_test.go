package processor

import (
	"reflect"
	"testing"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
)

// Moved from checkpoint's TestCodecsRoundTrip with OutboxEntry.
func TestOutboxCodecRoundTrip(t *testing.T) {
	e := OutboxEntry{Pin: "5", Bucket: 10000, Batch: sink.Batch{
		Vertices: []lineage.Vertex{lineage.DatasetVertex(lineage.Dataset{Namespace: "n", Name: "a"})},
		Edges:    []lineage.Edge{lineage.NewEdge("DERIVES", "a", "b", 1, 2, "r"), lineage.NewEdge(lineage.EdgeColumnDerives, "c", "d", 1, 2, "r")},
	}}
	e.Batch.Edges[1].Props = lineage.MakeProps(lineage.StrLWW(lineage.PropTransformationType, "DIRECT/IDENTITY", 7))
	b := AppendOutbox(nil, &e)
	ge, err := DecodeOutbox(b)
	if err != nil || !reflect.DeepEqual(ge, e) {
		t.Fatalf("outbox %+v -> %+v %v", e, ge, err)
	}
	for i := 0; i < len(b); i++ {
		if _, err := DecodeOutbox(b[:i]); err == nil {
			t.Fatalf("truncated outbox at %d decoded", i)
		}
	}
}
