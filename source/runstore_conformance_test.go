package source

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/testkit/conformance"
)

// TestRunStoreConformanceDynamo runs the run store conformance suite
// (testkit/conformance) on DynamoRunStore against dynalite, a table per
// subtest, with Parallel 2 so that a call's requests overlap.
func TestRunStoreConformanceDynamo(t *testing.T) {
	if testing.Short() {
		t.Skip("needs dynalite")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := dynaliteClient(t, ctx)
	n := 0
	conformance.RunStore(t, func(t *testing.T) processor.RunStore {
		n++
		s := &DynamoRunStore{Client: client, Table: fmt.Sprintf("runs-conformance-%d-%d", time.Now().UnixNano(), n), App: "app",
			Parallel: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if err := s.EnsureTable(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	})
}
