package archive

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Cut is the record of one cut of a shard's pending archive entries: the
// records it holds (first to last, inclusive, in stream order) and the
// objects it writes. A worker records a cut (in its Pebble, and as a
// marker object under CutPrefix) before it puts the cut's objects, so that
// whoever finishes the cut (the same worker after a crash, or another one
// that took the shard over from its KCL checkpoint) writes exactly the same
// objects with the same rows: object keys are derived from the shard and
// First, never from a clock.
type Cut struct {
	Shard string `json:"shard"`
	// First and Last are positions "seq/sub" (sub: the index inside a KPL
	// aggregate). Last's sequence number is always fully processed: a cut
	// never splits an aggregated record.
	First string `json:"first"`
	Last  string `json:"last"`
	// Objects are the keys of the objects of the cut.
	Objects []string `json:"objects"`
	// Rows are the positions of every row (events and dead letters), in
	// stream order.
	Rows []string `json:"rows"`
}

// CutPrefix is the prefix of the markers of shard under the archive's
// prefix.
func CutPrefix(prefix, shard string) string { return prefix + "_cuts/" + shard + "/" }

// CutKey is the key of the marker of the cut of shard ending at (seq, sub):
// markers sort as the stream does.
func CutKey(prefix, shard, seq string, sub uint32) string {
	return fmt.Sprintf("%s%s-%010d.json", CutPrefix(prefix, shard), PadSequence(seq), sub)
}

// CutsAfter is the ListObjectsV2 StartAfter that lists the markers of
// shard whose last record is after sequence number seq (every sub-record
// of seq being at or before it).
func CutsAfter(prefix, shard, seq string) string {
	if seq == "" {
		return ""
	}
	return CutPrefix(prefix, shard) + PadSequence(seq) + "-~"
}

// FormatPos formats a position as Cut holds it.
func FormatPos(seq string, sub uint32) string {
	return seq + "/" + strconv.FormatUint(uint64(sub), 10)
}

// ParsePos parses a position formatted by FormatPos.
func ParsePos(s string) (seq string, sub uint32, err error) {
	i := strings.IndexByte(s, '/')
	if i <= 0 {
		return "", 0, fmt.Errorf("archive: position %q: want seq/sub", s)
	}
	n, err := strconv.ParseUint(s[i+1:], 10, 32)
	if err != nil {
		return "", 0, fmt.Errorf("archive: position %q: %w", s, err)
	}
	return s[:i], uint32(n), nil
}

// MarshalCut encodes c (JSON).
func MarshalCut(c *Cut) []byte {
	b, _ := json.Marshal(c)
	return b
}

// UnmarshalCut decodes a marker and checks its positions.
func UnmarshalCut(b []byte) (Cut, error) {
	var c Cut
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("archive: cut marker: %w", err)
	}
	if _, _, err := ParsePos(c.First); err != nil {
		return c, err
	}
	if _, _, err := ParsePos(c.Last); err != nil {
		return c, err
	}
	return c, nil
}
