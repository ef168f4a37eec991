package replay

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestFixtureRunsKeepOnePartitionKey checks the committed fixtures against
// the rule DESIGN.md states: all events of one run share one partition key
// (so one shard), because run state is per shard.
func TestFixtureRunsKeepOnePartitionKey(t *testing.T) {
	paths, _ := filepath.Glob("../../testdata/*.ndjson")
	if len(paths) == 0 {
		t.Fatal("no fixtures found in testdata/")
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		s := bufio.NewScanner(f)
		s.Buffer(nil, 4<<20)
		keys := map[string]string{}
		for s.Scan() {
			var ev struct {
				Run struct {
					RunID string `json:"runId"`
				} `json:"run"`
			}
			if json.Unmarshal(s.Bytes(), &ev) != nil || ev.Run.RunID == "" {
				continue
			}
			k := PartitionKey(s.Bytes())
			if prev, ok := keys[ev.Run.RunID]; ok && prev != k {
				t.Errorf("%s: run %s has events keyed %q and %q", p, ev.Run.RunID, prev, k)
			}
			keys[ev.Run.RunID] = k
		}
		f.Close()
		if len(keys) == 0 {
			t.Errorf("%s: no run events", p)
		}
	}
}
