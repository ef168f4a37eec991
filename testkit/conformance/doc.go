// Package conformance holds the conformance suites of the engine's
// pluggable stores: every implementation of [processor.RunStore],
// [processor.SharedDedup] and [sink.Writer] runs the same suite, the
// in-memory one that the unit tests use (fast) and the real one against its
// stand-in (dynalite, redis, Gremlin Server), so that the fakes the unit
// tests trust behave as the services do on every point the engine relies
// on. Each suite's doc comment states that contract.
//
// Test-only: it imports "testing" and is imported only by _test.go files.
// It imports processor and sink, so those two call the suites from an
// external test package (processor_test, sink_test); processor's in-memory
// stores live in its _test.go files, reached through
// processor/export_conformance_test.go.
package conformance
