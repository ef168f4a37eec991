// Package processor is the heart of the flow: per Kinesis shard, it decodes
// records, drops duplicates, accumulates runs, turns committed runs into
// edges, collapses them in tumbling windows, makes window state, run state,
// dedup keys, position and outbox durable in one synced Pebble batch per
// barrier, drains the outbox to a [Writer] (the sink), and tells KCL how far it
// may checkpoint.
//
// [Shard] is one shard's pipeline, driven from one goroutine (KCL's
// ProcessRecords goroutine, or a test); it orchestrates the types that own
// the shard's state and its Pebble keys: windowTable (open windows, seal
// groups, their pins; windows.go), runTable (runs.go), dedupSet
// (dedup.go), and the outbox entries it seals ([OutboxEntry], outbox.go).
// A barrier (barrier.go) is a fixed sequence of their writeTo phases, one
// commit, then their afterCommit. The KCL side (source/) drives shards; this
// package imports neither the KCL, the AWS SDK nor the sink.
//
// It owns the Pebble DB of the worker process ([OpenDB] gives it
// window.Merger), the encoding of outbox entries and run state, and the
// position the KCL checkpoint may advance to ([Shard.Checkpoint]; source/
// writes it). It never writes to the graph except through [Writer], never reads the environment, and in the shard pipeline
// never reads the wall clock except through [PipelineConfig.Clock]. See
// DESIGN.md, "Shard lifecycle".
package processor
