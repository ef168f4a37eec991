// Package gen produces deterministic, realistic lineage test input: the
// records a Kinesis stream fed by the OpenLineage Spark integration would
// carry, with the faults the processor must survive (producer retries,
// failed and aborted runs, clock skew, malformed records).
//
// Output is a pure function of [Config] (math/rand/v2 PCG seeded with
// Config.Seed; never the wall clock): the same Config gives byte-identical
// records on every run and every machine. [Stream] produces records one at
// a time in roughly constant memory, so it serves million-record runs;
// [Generate] collects them in a slice for small fixtures.
//
// What the stream looks like:
//
//   - Config.Pipelines independent Spark/Glue applications (root jobs), each
//     with a multi-hop chain of datasets (raw -> staging -> marts) in
//     namespaces such as s3://datalake-raw, glue://catalog,
//     jdbc://warehouse...; some names hold '/', ':', '|', quotes and
//     Unicode, and one pair of datasets differs only by where a '/' sits
//     between namespace and name.
//   - Each application run is a parent run (application START, terminal
//     event) whose SQL-execution child runs carry the run.facets.parent
//     facet. Every record of an application run has the partition key
//     "run:<ns>/<app>" of the root job, as the OpenLineage Kinesis
//     transport does. Applications re-run many times, so the same edges
//     repeat.
//   - A child run sends START (inputs), sometimes RUNNING (may add an input;
//     a few are OTHER or carry no eventType), and then COMPLETE (outputs;
//     sometimes two COMPLETE events with different eventTimes), or FAIL /
//     ABORT (often naming outputs: ghost lineage bait), or, rarely, nothing
//     at all (a vanished driver). A run never sends conflicting terminal
//     events; its events are in stream order START..RUNNING..terminal.
//   - A few JobEvents (design-time lineage, key "job:<ns>/<name>") and
//     DatasetEvents (key "dataset:<ns>/<name>").
//   - Producer retries ([Record].Duplicate): byte-identical copies of an
//     earlier valid record of the same partition key, later in the stream.
//     Malformed records are never duplicated.
//   - Malformed records ([Record].Malformed, see [MalformedKinds]). They
//     name datasets in the s3://datalake-quarantine namespace and fresh run
//     ids, so lineage that leaks from one of them shows up as an extra
//     vertex.
package gen
