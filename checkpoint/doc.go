// Package checkpoint owns what makes a shard restartable: the Pebble key
// layout of per-shard state, the codecs of positions, outbox entries and
// dead letters, the comparison of Kinesis sequence numbers, and [Pins], the
// bookkeeping that says which Kinesis sequence number the KCL checkpoint may
// safely advance to (invariant 4).
//
// It opens the Pebble DB ([Open]) but never decides when to write: the
// processor builds each barrier batch. It knows nothing of KCL, runs or the
// sink.
package checkpoint
