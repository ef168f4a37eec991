// Package replay writes recorded or generated lineage events into a Kinesis
// stream the way the OpenLineage Kinesis transport does: keyed by root job
// ([PartitionKey]), optionally KPL-aggregated (a share of the records, see
// package kpl), at a chosen rate. It is the input side of demos, tests and
// benchmarks (the `replay` subcommand).
//
// [Run] creates the stream if asked, then spreads partition keys over
// Config.Concurrency lanes by hash. Each lane sends one PutRecords request
// at a time (at most 500 records, 5 MiB), keeps a failed record in place
// and re-sends it, after a backoff, before any later record of its keys:
// records of one key reach their shard in source order. Throttled records
// (ProvisionedThroughputExceeded) are retried and counted.
//
// A KPL aggregate lands on the shard of its outer partition key (its first
// user record's). Replay therefore aggregates only user records whose keys
// map to one shard (or, when the shard map cannot be read, of one key), so
// every user record lands where its own key would put it.
//
// replay owns no state beyond one Run; it touches nothing but the Kinesis
// stream and the files it is given.
package replay
