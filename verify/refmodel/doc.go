// Package refmodel is the reference model of the lineage semantics in
// DESIGN.md ("Lineage semantics"): the graph a stream of records must give,
// computed the simplest way, independently of the processor.
//
// It shares no code path with the processor or the fast decoder
// (lineage/decode*.go): records are parsed with encoding/json into
// generic values and validated here. From package lineage it uses only the
// id functions (DatasetID, JobID, EdgeID, NewEdge), Edge.Merge and the
// Vertex/Edge types, which are tested on their own.
//
// # Validity
//
// A record is valid iff it is at most 1 MiB (lineage.DefaultMaxBytes),
// is a JSON object, and is one of:
//
//   - a RunEvent (has "run" or "eventType"): eventTime an RFC 3339 string;
//     run an object whose runId is a non-empty string; job an object whose
//     namespace and name are non-empty strings; eventType absent or one of
//     START RUNNING COMPLETE ABORT FAIL OTHER; inputs and outputs absent, or
//     arrays of objects whose namespace and name are non-empty strings.
//   - a DatasetEvent (no "run" nor "eventType", has "dataset"): eventTime as
//     above; dataset an object whose namespace and name are non-empty
//     strings.
//   - a JobEvent (none of "run", "eventType", "dataset"; has "job"):
//     eventTime, job, inputs and outputs as for a RunEvent.
//
// A null value is the same as an absent key, everywhere. Keys match
// exactly (case-sensitive); when a key appears twice the last one counts;
// every other key (producer, schemaURL, facets...) is ignored. The compact
// format is not modelled yet.
//
// # Graph
//
//   - Duplicates: a valid record byte-identical to an earlier valid record
//     counts in Duplicates and is otherwise ignored. Invalid records are
//     refused (counted in Invalid) every time they come, before dedup, as
//     in the processor's data path.
//   - A run is keyed by runId; its job is the job of its first event. A
//     later RunEvent of that runId naming another job is refused (counted
//     in Invalid, after dedup) and changes nothing. Its datasets are the
//     union of the inputs and the outputs of all its events.
//   - Guard (lineage.Guard): a record naming a dataset, job or run by a
//     string that is not valid UTF-8 or is over MaxNameBytes, or dated
//     before 1970, is refused like an invalid one; names are normalised to
//     Unicode NFC.
//   - Policy "strict": the run is committed iff its first terminal event
//     (COMPLETE, FAIL, ABORT) in stream order is COMPLETE; its stamps are
//     the eventTimes of all its COMPLETE events. Policy "any": every run is
//     committed and every one of its events stamps it (each RunEvent counts
//     as a COMPLETE).
//   - Streaming runs (policy "strict"): a run one of whose non-terminal
//     events before its first terminal event has a job jobType facet with
//     processingType "STREAMING" (any case) is committed; every event
//     before its first terminal event stamps it (those before the facet
//     too); if that first terminal event is COMPLETE the rules above
//     apply from it on; if it is FAIL or ABORT the run keeps the datasets
//     and stamps of the events before it and gains nothing more.
//   - A committed run R of job J with stamps T gives, for every input I,
//     I -INPUT_TO-> J; for every output O, J -OUTPUTS-> O; for every pair
//     with I != O, I -DERIVES-> O; each edge with firstSeen = min T,
//     lastSeen = max T, lastRunId = R. Edges from all runs and JobEvents are
//     folded with lineage.Edge.Merge.
//   - A JobEvent gives the same three kinds of edges, stamped with its
//     eventTime and lastRunId "".
//   - Column lineage (unless Options.NoColumns): each input field of an
//     output's columnLineage facet in a committed run (any of its events)
//     or a JobEvent gives both DatasetField vertices, FIELD_OF each to its
//     Dataset and input -[COLUMN_DERIVES]-> output, stamped like DERIVES.
//   - Parents: a valid RunEvent whose parent run facet names another job
//     gives Job -[CHILD_OF]-> that job (any outcome), stamped with its
//     eventTime and run. The parent run is the child Run vertex's
//     parentRunId property (latest by eventTime), no edge.
//   - Vertices: the endpoints of all edges, plus the dataset of every
//     DatasetEvent.
//   - Runs (Options.Runs, DESIGN.md "Graph model"): the Run vertex of each
//     recorded run with its properties folded over all its events (one
//     rule per property), its job (job: the Job vertex id) and the ids of
//     the datasets it read and wrote (inputs, outputs: capped lists;
//     inputCount, outputCount), and no edge; "all" (default) records
//     every run, "failed" the runs whose first terminal event is FAIL or
//     ABORT, "none" none.
//   - Symlinks: each identifier of a dataset's symlinks facet gives a
//     DatasetAlias vertex and ALIAS_OF to the dataset, for every valid
//     event. Graph.Lineage() is the graph without runs and aliases.
//   - Times are Unix milliseconds (time.Time.UnixMilli of the parsed
//     eventTime: sub-millisecond digits are dropped).
package refmodel
