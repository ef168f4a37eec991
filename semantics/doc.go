// Package semantics is what an event means for the graph (DESIGN.md,
// "Lineage semantics" and "Graph model"): how a RunEvent folds into its
// run (the union of its datasets and column pairs), when a run commits
// (policy strict or any, streaming runs), which edges a committed run or
// a JobEvent gives (INPUT_TO, OUTPUTS, DERIVES, column lineage) and how
// they are stamped (minC/maxC), which Run vertices (a run has no edge)
// each -runs mode gives, and the aliases, parent hierarchy, facet properties
// and dataset lifecycle of every event.
//
// Contract: [Rules.Event] takes one decoded event, the run it belongs to
// (a [Run] the caller holds and stores) and the window bucket chosen for
// it, and writes what the event makes true through an [Emitter]. It reads
// no clock, holds no I/O, and keeps no checkpoint pin: the caller learns
// of a run's status changes through [Emitter.Transition] and pins each
// window contribution itself from its [Origin]. Whether a record takes
// the refresh lane, and when the window table spills, are the caller's
// decisions behind the Emitter. Scratch buffers live in [Rules]: a
// RunEvent allocates only what its run keeps (new datasets and column
// pairs), plus the dataset lists of a Run vertex (-runs all, a closed run)
// or of a JobEvent.
//
// It imports only the lineage vocabulary and the standard library: never
// Pebble, checkpoint/, window/ or processor/ (imports_test.go checks it).
// The reference model (verify/refmodel) implements the same rules
// independently.
package semantics
