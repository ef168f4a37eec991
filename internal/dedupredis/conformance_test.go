package dedupredis

import (
	"testing"

	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/testkit/conformance"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// TestSharedDedupConformanceRedis runs the shared dedup conformance suite
// (testkit/conformance) on the Redis store against the stand-in, a key
// space of its own per subtest.
func TestSharedDedupConformanceRedis(t *testing.T) {
	url := testenv.Redis(t)
	conformance.SharedDedup(t, func(t *testing.T) processor.SharedDedup { return newStore(t, url, testPrefix(t)) })
}
