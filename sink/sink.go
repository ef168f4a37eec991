// Package sink owns the last stage of the flow: it takes sealed windows out
// of the outbox and makes them true in the graph, with idempotent,
// commutative upserts. It never touches window state, Pebble or KCL
// checkpoints; it only answers "acknowledged" or an error for each batch.
package sink

import (
	"context"

	"github.com/lineageflow/lineageflow/lineage"
)

// Batch is the content of one sealed window of one shard: the collapsed
// edges and the vertices they touch. Applying a Batch any number of times,
// in any order relative to other batches, gives the same graph.
type Batch struct {
	// Key identifies the outbox entry ("<shard>/<window start ms>/<seq>");
	// it is for logs and metrics, not for deduplication (writes are
	// idempotent).
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
