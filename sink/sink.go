package sink

import (
	"context"

	"github.com/lineageflow/lineageflow/lineage"
)

// Batch is one chunk of one shard's sealed window: the processor cuts a
// sealed window into batches of at most processor.Config.ChunkRecords
// vertices and edges, each edge in the same batch as the endpoint
// vertices the window holds (mergeE needs them), so a window may take
// several batches. A batch holds collapsed edges, their endpoint vertices
// and possibly vertices no edge touches. Applying a Batch any number of
// times, in any order relative to other batches, gives the same graph.
type Batch struct {
	// Key names the batch in logs and errors (the processor sets
	// "<shard>/<window start ms>/<outbox seq>"); the sink does not
	// interpret it, nor use it for deduplication (writes are idempotent).
	Key      string
	Vertices []lineage.Vertex
	Edges    []lineage.Edge
}

// Writer makes batches true in the graph.
//
// WriteBatch blocks until every vertex and edge of b is acknowledged by the
// graph, or returns an error (then nothing is assumed written and the
// caller keeps the batch and sends it again). It blocks, rather than
// queueing without bound, when the graph is slow: that is the backpressure
// the processor relies on. It is safe to call from several goroutines.
type Writer interface {
	WriteBatch(ctx context.Context, b Batch) error
	Close(ctx context.Context) error
}
