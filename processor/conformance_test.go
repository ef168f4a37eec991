package processor_test

import (
	"testing"

	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/testkit/conformance"
)

// The in-memory stores of the unit tests pass the suites the DynamoDB run
// store (source/) and the Redis dedup tier (internal/dedupredis) pass.

func TestRunStoreConformanceMemory(t *testing.T) {
	t.Parallel() // pure: in-memory stores only
	conformance.RunStore(t, func(*testing.T) processor.RunStore { return processor.NewMemRunStore() })
}

func TestSharedDedupConformanceMemory(t *testing.T) {
	t.Parallel() // pure: in-memory stores only
	conformance.SharedDedup(t, func(*testing.T) processor.SharedDedup { return processor.NewFakeSharedDedup() })
}
