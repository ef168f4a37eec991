// Package sink owns the last stage of the flow: it makes batches of
// vertices and edges true in the graph with idempotent, commutative
// upserts, and answers "acknowledged" or an error for each batch.
//
// It owns:
//   - the [Writer] interface and [Batch] (sink.go);
//   - [Neptune], the writer to Amazon Neptune or Gremlin Server over
//     Gremlin websockets (neptune.go), its [Config] (config.go), its
//     traversals (traversal.go), connections (gremlin.go, dialled through
//     package graph, which owns TLS and IAM SigV4), request sizing
//     (chunk.go) and vertex cache (cache.go);
//   - partitioning: vertex v to writer xxhash(v.ID) mod N, edge e to
//     writer xxhash(e.OutV) mod N (partition.go), and each writer's
//     ordered queue (writer.go);
//   - coalescing: merging the queued requests of several batches into one
//     traversal (coalesce.go);
//   - retries: what to do about each error class of [graph.Classify]
//     (errors.go), the retry loop with exponential backoff and full
//     jitter, reconnects and timeouts (retry.go);
//   - its counters, [Stats] (stats.go);
//   - [Memory], the in-memory writer for tests (memory.go).
//
// It must not know Kinesis, KCL, Pebble, the processor, window state, the
// outbox or checkpoints: besides the standard library, gremlin-go and
// xxhash, it imports only packages lineage (the vocabulary: labels and
// property names) and graph (dialing, error classes) of this module. It keeps no batch after WriteBatch
// returns: on an error the caller holds the batch and sends it again.
package sink
