// Package processor is the durable shard engine: per Kinesis shard, it
// decodes records, drops duplicates, hands each event and its run to
// semantics.Rules, which say what the event means (this package decides
// none of it), collapses what they write in tumbling windows (through
// shardEmitter, emitter.go, which pins each contribution), makes window
// state, run state, dedup keys, position and outbox durable in one synced
// Pebble batch per barrier, drains the outbox to a [Writer] (the sink), and
// tells KCL how far it may checkpoint.
//
// [Shard] is one shard's pipeline, driven from one goroutine (KCL's
// ProcessRecords goroutine, or a test); it orchestrates the types that own
// the shard's state and its Pebble keys: windowTable (open windows, seal
// groups, their pins; windows.go), runTable (runs.go: semantics.Run values
// with their pins; their encoding in runcodec.go), dedupSet
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
