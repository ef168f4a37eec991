// Package checkpoint owns what makes a shard restartable: the Pebble key
// layout of per-shard state, the codec of positions, dead letters, the
// comparison of Kinesis sequence numbers, and [Pins], the bookkeeping that
// says which Kinesis sequence number the KCL checkpoint may safely advance
// to (invariant 4).
//
// It opens the Pebble DB ([Open]) with the merge operator its caller
// passes in [Options], but never decides when to write: the processor
// builds each barrier batch. Outbox entries and window and run values are
// opaque bytes to it (the processor and window encode them). It knows
// nothing of KCL, runs, windows or the sink, and imports none of the
// packages downstream of it in the flow.
package checkpoint
