package lineage

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// randTransformations returns a transformations value of a random shape:
// mostly the common one, sometimes with escapes, non-ASCII, other value
// kinds, repeated keys, odd whitespace, or invalid JSON.
func randTransformations(r *rand.Rand) string {
	ws := func() string { return []string{"", "", " ", "\n\t", "\r "}[r.IntN(5)] }
	str := func() string {
		return []string{`"DIRECT"`, `"INDIRECT"`, `"IDENTITY"`, `""`, `"a b, c; d"`, `"esc\"aped"`, `"\u00e9t\u00e9"`, `"été"`, `"tab\there"`, "\"\x7f\"", `"\\"`}[r.IntN(11)]
	}
	val := func() string {
		switch r.IntN(12) {
		case 0:
			return "true"
		case 1:
			return "false"
		case 2:
			return "null"
		case 3:
			return "12"
		case 4:
			return `{"x":1}`
		case 5:
			return `["y"]`
		default:
			return str()
		}
	}
	key := func() string {
		return []string{`"type"`, `"subtype"`, `"description"`, `"masking"`, `"other"`, `"typ\u0065"`, `"Type"`}[r.IntN(7)]
	}
	var b strings.Builder
	b.WriteString(ws() + "[")
	n := r.IntN(4)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(ws() + ",")
		}
		b.WriteString(ws())
		switch r.IntN(12) {
		case 0:
			b.WriteString("null")
			continue
		case 1:
			b.WriteString(`"x"`)
			continue
		}
		b.WriteString("{")
		m := r.IntN(5)
		for j := 0; j < m; j++ {
			if j > 0 {
				b.WriteString(ws() + ",")
			}
			b.WriteString(ws() + key() + ws() + ":" + ws() + val())
		}
		b.WriteString(ws() + "}")
	}
	b.WriteString(ws() + "]" + ws())
	s := b.String()
	switch r.IntN(20) {
	case 0:
		s = s[:r.IntN(len(s)+1)] // truncated
	case 1:
		s += "x"
	case 2:
		s = "{}"
	}
	return s
}

// TestTransformationsMatchesJSON: the scanner reads transformations as
// encoding/json does, for every shape.
func TestTransformationsMatchesJSON(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	given := 0
	for i := 0; i < 20000; i++ {
		raw := randTransformations(r)
		wt, wd := refTransformations([]byte(raw))
		gt, gd := transformations([]byte(raw))
		if gt != wt || gd != wd {
			t.Fatalf("%s: got (%q, %q), want (%q, %q)", raw, gt, gd, wt, wd)
		}
		if wt != "" {
			given++
		}
	}
	if given < 2000 {
		t.Errorf("only %d of 20000 gave a type", given)
	}
	common := `[{"type":"DIRECT","subtype":"IDENTITY","description":"copied","masking":false},{"type":"INDIRECT","subtype":"FILTER"}]`
	if typ, desc := transformations([]byte(common)); typ != "DIRECT/IDENTITY, INDIRECT/FILTER" || desc != "copied" {
		t.Errorf("common shape: (%q, %q)", typ, desc)
	}
}
