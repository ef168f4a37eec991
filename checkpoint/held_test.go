package checkpoint

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestOpenHeldDirSaysHeldByAnotherWorker: a second open of a data
// directory (a second worker on the same -data-dir) fails naming the
// cause, not "resource temporarily unavailable".
func TestOpenHeldDirSaysHeldByAnotherWorker(t *testing.T) {
	dir := t.TempDir()
	o := Options{Merger: &pebble.Merger{Name: "test", Merge: pebble.DefaultMerger.Merge}}
	db, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = Open(dir, o)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "held by another worker") {
		t.Fatalf("second open: %v, want ErrHeld", err)
	}
}
