// Package window owns time in the flow: which 10-second tumbling window a
// record belongs to, the per-shard watermark that decides when a window is
// sealed, and the in-memory table of edge and vertex deltas collected
// between two barriers, with the value codec and the Pebble merge operator
// ([Merger]) that folds those deltas with [lineage.Edge.Merge] semantics.
//
// It performs no I/O and knows nothing of Kinesis, Pebble keys, the
// checkpoint, runs or the sink; the processor decides when to flush and
// seal, and hands [Merger] to checkpoint.Open. Nothing in it reads the wall
// clock: callers pass timestamps (and, for idle shards, the processing
// time from an injected clock).
package window
