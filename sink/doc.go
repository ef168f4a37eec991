// Package sink owns the last stage of the flow: it makes batches of
// vertices and edges true in the graph with idempotent, commutative
// upserts, and answers "acknowledged" or an error for each batch.
//
// It owns:
//   - the [Writer] interface and [Batch] (sink.go);
//   - [Neptune], the writer to Amazon Neptune or Gremlin Server over
//     Gremlin websockets (neptune.go), its [Config] (config.go), its
//     traversals (traversal.go), connections (gremlin.go), IAM SigV4
//     handshakes (sigv4.go), request sizing (chunk.go) and vertex cache
//     (cache.go);
//   - partitioning: vertex v to writer xxhash(v.ID) mod N, edge e to
//     writer xxhash(e.OutV) mod N (partition.go), and each writer's
//     ordered queue (writer.go);
//   - coalescing: merging the queued requests of several batches into one
//     traversal (coalesce.go);
//   - retries: error classes (errors.go), the retry loop with exponential
//     backoff and full jitter, reconnects and timeouts (retry.go);
//   - its counters, [Stats] (stats.go);
//   - [Memory], the in-memory writer for tests (memory.go).
//
// It must not know Kinesis, KCL, Pebble, the processor, window state, the
// outbox or checkpoints: besides the standard library, gremlin-go, the
// AWS SDK (credentials and SigV4 signing) and xxhash, it imports only
// package lineage of this module. It keeps no batch after WriteBatch
// returns: on an error the caller holds the batch and sends it again.
package sink
