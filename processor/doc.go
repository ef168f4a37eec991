// Package processor is the heart of the flow: per Kinesis shard, it decodes
// records, drops duplicates, accumulates runs, turns committed runs into
// edges, collapses them in tumbling windows, makes window state, run state,
// position and outbox durable in one synced Pebble batch per barrier, drains
// the outbox to a [sink.Writer], and tells KCL how far it may checkpoint.
//
// [Shard] is one shard's pipeline, driven from one goroutine (KCL's
// ProcessRecords goroutine, or a test); [Worker] wires shards to KCL.
//
// It owns the Pebble DB of the worker process and the KCL checkpoint. It
// never writes to the graph except through sink.Writer, and never reads
// the wall clock except through Config.Clock. See DESIGN.md, "Processor".
package processor
