package sink_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/testkit/conformance"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// The writer conformance suite (testkit/conformance) on the in-memory
// writer the processor's tests use and on the Gremlin writer against
// Gremlin Server, in both traversal shapes, with requests of 7 records so
// that a batch takes several.

func TestWriterConformanceMemory(t *testing.T) {
	t.Parallel() // pure: in-memory stores only
	conformance.Writer(t, func(*testing.T) conformance.Graph { return conformance.MemoryGraph(sink.NewMemory()) })
}

func TestWriterConformanceGremlin(t *testing.T) {
	ep := testenv.Gremlin(t)
	for _, shape := range []string{sink.ShapeFlat, sink.ShapeChained} {
		t.Run("shape="+shape, func(t *testing.T) {
			conformance.Writer(t, func(t *testing.T) conformance.Graph {
				n, err := sink.New(sink.Config{Endpoint: ep, TraversalShape: shape, BatchRecords: 7, RequestTimeout: 10 * time.Second,
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if err := n.Close(context.Background()); err != nil {
						t.Error(err)
					}
				})
				return conformance.GremlinGraph(n, ep)
			})
		})
	}
}
