package lineage

import (
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

// TestDecodeAgreesRandomized is a structure-aware complement to
// FuzzDecodeAgreesWithEncodingJSON: it builds records from the fields both
// formats know, with good, empty, null and wrong-typed values, duplicate
// and escaped keys, facets and noise, and holds the fast decoder to the
// reference decoder on each. Seeded, so a failure reproduces.
func TestDecodeAgreesRandomized(t *testing.T) {
	t.Parallel()
	n := 20000
	if testing.Short() {
		n = 2000
	}
	r := rand.New(rand.NewSource(1))
	var d Decoder
	var ev Event
	accepted := 0
	for i := 0; i < n; i++ {
		g := &recordGen{r: r, clean: r.Intn(2) == 0}
		data := []byte(g.top())
		want, wantErr := refDecode(data, 0)
		gotErr := d.Decode(data, &ev)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("record %d %s\nencoding/json: %v\nfast decoder:  %v", i, data, wantErr, gotErr)
		}
		if wantErr != nil {
			var w, g *DecodeError
			if !errors.As(wantErr, &w) || !errors.As(gotErr, &g) || *w != *g {
				t.Fatalf("record %d %s\nencoding/json: %v\nfast decoder:  %v", i, data, wantErr, gotErr)
			}
			continue
		}
		accepted++
		if diff := eventDiff(&ev, &want); diff != "" {
			t.Fatalf("record %d %s\n%s", i, data, diff)
		}
	}
	t.Logf("%d records, %d accepted", n, accepted)
	if accepted < n/20 {
		t.Fatalf("only %d of %d records valid: the generator explores too little", accepted, n)
	}
}

type recordGen struct {
	r     *rand.Rand
	clean bool // only good values: most such records are valid
}

func (g *recordGen) pick(s ...string) string { return s[g.r.Intn(len(s))] }

// good picks from the first n choices in a clean record.
func (g *recordGen) good(n int, s ...string) string {
	if g.clean {
		return s[g.r.Intn(n)]
	}
	return g.pick(s...)
}

// key writes a key, sometimes with an escape that encoding/json undoes.
func (g *recordGen) key(k string) string {
	if g.r.Intn(10) == 0 {
		return `"\u00` + strconv.FormatInt(int64(k[0]), 16) + k[1:] + `"`
	}
	return strconv.Quote(k)
}

// obj writes an object with the given members, each kept with
// probability keep, some duplicated, shuffled, with noise.
func (g *recordGen) obj(keep float64, members map[string]func() string) string {
	var parts []string
	for k, v := range members {
		if g.clean && keep < 0.95 {
			keep = 0.95
		}
		if g.r.Float64() < keep {
			parts = append(parts, g.key(k)+":"+v())
			if g.r.Intn(15) == 0 {
				parts = append(parts, g.key(k)+":"+v())
			}
		}
	}
	if g.r.Intn(3) == 0 {
		parts = append(parts, `"noise":`+g.noise(2))
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return "{" + strings.Join(parts, ",") + "}"
}

func (g *recordGen) noise(depth int) string {
	switch k := g.r.Intn(8); {
	case k == 0 && depth > 0:
		return `{"a":` + g.noise(depth-1) + `,"b":[` + g.noise(depth-1) + `]}`
	case k == 1 && depth > 0:
		return "[" + g.noise(depth-1) + "," + g.noise(depth-1) + "]"
	case k == 2:
		return g.pick("true", "false", "null", "0", "-1.5e3", "12")
	case k == 3:
		return "{}"
	case k == 4:
		return "[]"
	default:
		return g.str()
	}
}

func (g *recordGen) str() string {
	return g.pick(`"s3://bucket"`, `"a/b"`, `"x"`, `"caf\u00e9"`, `"\ud83d\ude00"`, `"\ud800"`, `"q\"uo\\te"`, "\"\xff\"", `"ß|:"`)
}

// val writes a value that should be of JSON type want ('"', '{', '[');
// good writes the right type.
func (g *recordGen) val(good func() string) string {
	if g.clean {
		return good()
	}
	switch g.r.Intn(12) {
	case 0:
		return "null"
	case 1:
		return `""`
	case 2:
		return g.noise(1)
	case 3:
		return g.pick("1", "true", "[]", "{}", `"x"`)
	default:
		return good()
	}
}

func (g *recordGen) s() string { return g.val(g.str) }

func (g *recordGen) when() string {
	return g.val(func() string {
		return g.good(2, `"2026-03-01T10:00:00Z"`, `"2026-03-01T10:00:00.5+01:00"`, `"2026-03-01T10:00:00"`, `"2026-02-30T00:00:00Z"`, `"2026\u002d03-01T10:00:00Z"`)
	})
}

func (g *recordGen) etype() string {
	return g.val(func() string { return g.good(4, `"START"`, `"COMPLETE"`, `"FAIL"`, `"OTHER"`, `"done"`) })
}

func (g *recordGen) named(cols bool) string {
	return g.val(func() string {
		m := map[string]func() string{"namespace": g.s, "ns": g.s, "name": g.s}
		if cols {
			m["facets"] = func() string {
				return g.val(func() string {
					return g.obj(0.7, map[string]func() string{
						"columnLineage": func() string { return g.val(func() string { return `{"fields":{"a":` + g.noise(2) + `}}` }) },
						"schema":        func() string { return g.noise(2) },
					})
				})
			}
		}
		return g.obj(0.85, m)
	})
}

func (g *recordGen) list(cols bool) string {
	return g.val(func() string {
		n := g.r.Intn(4)
		parts := make([]string, n)
		for i := range parts {
			if !g.clean && g.r.Intn(10) == 0 {
				parts[i] = g.noise(1)
			} else {
				parts[i] = g.named(cols)
			}
		}
		return "[" + strings.Join(parts, ",") + "]"
	})
}

func (g *recordGen) parent() string {
	return g.val(func() string {
		return g.obj(0.85, map[string]func() string{
			"run": func() string {
				if g.r.Intn(2) == 0 {
					return g.s()
				}
				return g.val(func() string { return g.obj(0.9, map[string]func() string{"runId": g.s}) })
			},
			"job": func() string { return g.named(false) },
		})
	})
}

func (g *recordGen) top() string {
	compact := g.r.Intn(3) == 0
	m := map[string]func() string{
		"producer": g.s,
		"job":      func() string { return g.named(false) },
	}
	if compact {
		m["v"] = func() string { return g.good(4, "1", "1", "1", "1.0", "2", `"1"`, "1e400", "null") }
		m["type"] = g.etype
		m["time"] = g.when
		m["run"] = g.s
		m["in"] = func() string { return g.list(false) }
		m["out"] = func() string { return g.list(false) }
		m["parent"] = g.parent
	} else {
		m["eventType"] = g.etype
		m["eventTime"] = g.when
		m["run"] = func() string {
			return g.val(func() string {
				return g.obj(0.85, map[string]func() string{
					"runId": g.s,
					"facets": func() string {
						return g.val(func() string {
							return g.obj(0.7, map[string]func() string{"parent": g.parent, "spark_version": func() string { return g.noise(2) }})
						})
					},
				})
			})
		}
		m["inputs"] = func() string { return g.list(false) }
		m["outputs"] = func() string { return g.list(true) }
		m["schemaURL"] = g.s
		if g.r.Intn(4) == 0 {
			m["dataset"] = func() string { return g.named(false) }
		}
	}
	return fmt.Sprint(g.obj(0.85, m))
}
