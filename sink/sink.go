package sink

import (
	"context"

	"github.com/lineageflow/lineageflow/lineage"
)

// Batch is one chunk of one shard's sealed window ([lineage.Batch]: the
// type lives with the vocabulary so that the processor, which makes
// batches, needs nothing of this package).
type Batch = lineage.Batch

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
