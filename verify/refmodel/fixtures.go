package refmodel

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"
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

// anyString is the json-unit matcher the OpenLineage integrations'
// expected-event files (testdata/real: Flink) put where a value varies.
const anyString = `"${json-unit.any-string}"`

// FillTemplate makes a real event of an expected-event template: its
// eventTime and runId matchers replaced by t (RFC 3339, UTC,
// milliseconds) and runID; a template without eventTime gets one. The
// rest stays byte for byte.
func FillTemplate(rec []byte, runID string, t time.Time) []byte {
	ts := []byte(`"eventTime":"` + t.UTC().Format("2006-01-02T15:04:05.000Z") + `"`)
	out := bytes.Replace(rec, []byte(`"runId":`+anyString), []byte(`"runId":"`+runID+`"`), 1)
	if m := []byte(`"eventTime":` + anyString); bytes.Contains(out, m) {
		return bytes.Replace(out, m, ts, 1)
	}
	if bytes.Contains(out, []byte(`"eventTime":`)) {
		return out
	}
	return append(append(append([]byte{'{'}, ts...), ','), bytes.TrimPrefix(bytes.TrimSpace(out), []byte("{"))...)
}
