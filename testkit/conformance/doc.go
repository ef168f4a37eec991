// Package conformance holds the conformance suites of the engine's
// pluggable stores: every implementation of [processor.RunStore],
// [processor.SharedDedup] and [sink.Writer] runs the same suite, the
// in-memory one that the unit tests use (fast) and the real one against its
// stand-in (dynalite, redis, Gremlin Server), so that the fakes the unit
// tests trust behave as the services do on every point the engine relies
// on. Each suite's doc comment states that contract.
//
// Test-only: it imports "testing" and is imported only by _test.go files
// (processor's in-memory stores are in its _test.go files, so processor
// calls the suites from an external test package, processor_test).
package conformance
