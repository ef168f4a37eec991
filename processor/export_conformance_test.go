package processor

// The in-memory stores of this package's tests, for the conformance suites
// (testkit/conformance imports processor, so only the external test
// package processor_test may call it).

// NewMemRunStore returns the in-memory RunStore the unit tests use.
func NewMemRunStore() RunStore { return newMemRunStore() }

// NewFakeSharedDedup returns the in-memory SharedDedup the unit tests use.
func NewFakeSharedDedup() SharedDedup { return &fakeShared{} }
