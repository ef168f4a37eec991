package lineage

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSkipDeepNesting: skip keeps the open containers in a word for the
// first 64 levels and in a slice beyond; it agrees with encoding/json on
// both sides of that line and of the nesting limit, and a closer of the
// wrong kind fails at every depth.
func TestSkipDeepNesting(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	nest := func(depth int, wrongAt int) string {
		var open, close strings.Builder
		closers := make([]string, depth)
		for i := 0; i < depth; i++ {
			if r.IntN(2) == 0 {
				open.WriteString(`{"k":`)
				closers[i] = "}"
			} else {
				open.WriteString(`[1,`)
				closers[i] = "]"
			}
		}
		for i := depth - 1; i >= 0; i-- {
			c := closers[i]
			if i == wrongAt {
				c = map[string]string{"}": "]", "]": "}"}[c]
			}
			close.WriteString(c)
		}
		return open.String() + "0" + close.String()
	}
	valid := 0
	for _, depth := range []int{1, 2, 63, 64, 65, 66, 127, 128, 129, 500, maxDepth - 1, maxDepth, maxDepth + 1} {
		for _, wrongAt := range []int{-1, 0, depth / 2, depth - 1, 63, 64, 65} {
			if wrongAt >= depth {
				continue
			}
			data := []byte(nest(depth, wrongAt))
			var s scanner
			s.reset(data)
			s.skip(1)
			s.end()
			if want := json.Valid(data); want != (s.err == nil) {
				t.Fatalf("depth %d, wrong closer at %d: json.Valid %v, scanner error %v", depth, wrongAt, want, s.err)
			} else if want {
				valid++
			}
		}
	}
	if valid != 12 {
		t.Fatalf("%d valid documents, want 12 (one per depth up to the limit)", valid)
	}
}
