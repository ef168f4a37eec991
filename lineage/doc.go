// Package lineage is the vocabulary shared by every stage of the flow: the
// lineage event model (what producers send), the graph model (what Neptune
// stores, and the name of every graph label and property: writers and
// readers name them from here), and the pure functions that turn names into
// vertex and edge ids and window keys (allocation-free: they run per table
// entry at every barrier).
//
// It owns decoding and validation of OpenLineage RunEvent/DatasetEvent/JobEvent
// JSON (spec 2-0-2) and of the project's compact format (see
// docs/compact-event.schema.json). It performs no I/O and holds no state.
package lineage
