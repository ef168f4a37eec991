package refmodel

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// SplitNDJSON splits a fixture into its records: one per '\n'-terminated
// line (the last line may lack its '\n'). Records are kept byte for byte.
func SplitNDJSON(data []byte) [][]byte {
	lines := bytes.Split(data, []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	return lines
}

// LoadFixture reads the fixture dir/name.ndjson and its expected graph
// dir/name.expected.json (dir is the repository's testdata directory).
func LoadFixture(dir, name string) (records [][]byte, want *Graph, err error) {
	data, err := os.ReadFile(filepath.Join(dir, name+".ndjson"))
	if err != nil {
		return nil, nil, fmt.Errorf("refmodel: fixture: %w", err)
	}
	exp, err := os.ReadFile(filepath.Join(dir, name+".expected.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("refmodel: fixture: %w", err)
	}
	want = &Graph{}
	if err := want.UnmarshalJSON(exp); err != nil {
		return nil, nil, err
	}
	return SplitNDJSON(data), want, nil
}
