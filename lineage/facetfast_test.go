package lineage

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

var facetCorpus = []string{
	`{"fields":[{"name":"order_id","type":"long"},{"name":"note","type":"string","description":"free text"}]}`,
	`{"_producer":"p","_schemaURL":"u","fields":[{"name":"a","type":"int","fields":[{"name":"x"}]},null,{"type":"no name"},{"name":"b","type":null,"description":7}]}`,
	`{"fields":[]}`, `{"fields":null}`, `{"fields":{}}`, `{"fields":"x"}`, `{}`, `{"fields":[1]}`, `{"fields":[{"name":"a"},"s"]}`,
	`{"fields":[{"name":"a"}],"fields":[{"name":"b"}]}`, `{"fields":[{"name":"a","name":"b","type":"t","type":null}]}`,
	`{"fields":[{"name":"a<b","type":"t"}]}`, `{"fields":[{"name":"caf\u00e9"}]}`, `{"fields":[{"name":"café","type":"日本"}]}`,
	`{"fields":[{"name":"a\"b"}]}`, `{"fields":[{"name":"a&b"}]}`, "{\"fields\":[{\"name\":\"a\u2028b\"}]}",
	`{"fields":[{"name":"a"}]} x`, `{"fields":[{"name":"a"},]}`, `{"fields":[{"name":"a"}`, ` { "fields" : [ { "name" : "a" , "type" : "t" } ] } `,
	`{"fields":[{"name":"a","n":-0.5e+3,"m":[true,false,null,{}],"o":01}]}`, `{"fields":[{"name":"a","n":1.}]}`, `{"fields":[{"name":"a","n":-}]}`,
	`{"uri":"s3://b","name":"b"}`, `{"uri":null,"name":"b"}`, `{"uri":5,"name":"b"}`, `{"uri":"a","uri":null}`, `{"uri":null,"uri":"a"}`,
	`{"description":"the table"}`, `{"description":"a\nb"}`, `{"datasetVersion":"v1"}`, `{"query":"SELECT * FROM t WHERE a > 1"}`,
	`{"query":"SELECT 1"}`, `{"jobType":"QUERY","processingType":"BATCH","integration":"SPARK"}`, `{"jobType":{"x":1},"integration":"SPARK"}`,
	`{"type":"git","url":"https://github.com/x/y"}`, `{"owners":[{"name":"team:a","type":"TEAM"},{"name":"b"}]}`, `{"owners":[{"type":"x"}]}`,
	`[1]`, `null`, `"s"`, ``, `{"a":"\u0000"}`, "{\"description\":\"\xff\"}", `{"description":"x"}}`,
}

// TestFastInterpretFacet: the one-pass reader gives what encoding/json
// gives, on hand-made facets of every shape and on random mutations of
// them; and it takes the usual ones itself.
func TestFastInterpretFacet(t *testing.T) {
	t.Parallel()
	check := func(kind int, raw []byte) bool {
		t.Helper()
		want := slowInterpretFacet(kind, raw)
		got := interpretFacet(kind, raw)
		if got != want {
			t.Fatalf("kind %d, facet %q: got %+v, want %+v", kind, raw, got, want)
		}
		_, fast := fastInterpretFacet(kind, raw)
		return fast
	}
	fast := 0
	for _, c := range facetCorpus {
		for kind := range fKinds {
			if check(kind, []byte(c)) {
				fast++
			}
		}
	}
	if fast < len(facetCorpus)*fKinds/2 {
		t.Fatalf("only %d of %d on the fast path", fast, len(facetCorpus)*fKinds)
	}
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte(`{}[]",:\ ntrufalse0123456789.-eE<&é` + "\x00\xff")
	for range mutations() {
		b := []byte(facetCorpus[r.IntN(len(facetCorpus))])
		for range 1 + r.IntN(3) {
			if len(b) == 0 {
				break
			}
			i := r.IntN(len(b))
			switch r.IntN(3) {
			case 0:
				b[i] = alphabet[r.IntN(len(alphabet))]
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[i:]...)...)
			}
		}
		check(r.IntN(fKinds), b)
	}
}

func FuzzFastInterpretFacet(f *testing.F) {
	for _, c := range facetCorpus {
		f.Add(0, []byte(c))
	}
	f.Fuzz(func(t *testing.T, kind int, raw []byte) {
		kind = ((kind % fKinds) + fKinds) % fKinds
		if got, want := interpretFacet(kind, raw), slowInterpretFacet(kind, raw); got != want {
			t.Fatalf("kind %d, facet %q: got %+v, want %+v", kind, raw, got, want)
		}
	})
}

var columnCorpus = []string{
	`{"fields":{"a":{"inputFields":[{"namespace":"n","name":"x","field":"f","transformations":[{"type":"DIRECT","subtype":"IDENTITY","description":"copied"},{"type":"INDIRECT","subtype":"FILTER"}]},{"namespace":"n","name":"x","field":"g"}],"transformationType":"IDENTITY","transformationDescription":"old style"}}}`,
	`{"fields":{"a":{"transformationType":"IDENTITY","inputFields":[{"namespace":"n","name":"x","field":"f"}],"transformationType":7},"b":{"inputFields":[{"namespace":"n","name":"y","field":"g","transformations":null}],"transformationDescription":"only a description"}}}`,
	`{"fields":{"order_id":{"inputFields":[{"namespace":"s3://raw","name":"orders","field":"order_id"},{"namespace":"s3://raw","name":"orders","field":"id","transformations":[{"type":"DIRECT"}]}]},"country":{"inputFields":[{"namespace":"s3://raw","name":"customers","field":"country"}]}}}`,
	`{"_producer":"p","fields":{"b":{"inputFields":[null,{"namespace":"n","name":"x","field":"f"},{"namespace":"n","name":7,"field":"g"}]},"a":{"inputFields":[{"namespace":"ns","name":"out","field":"a"}]},"":{"inputFields":[{"namespace":"n","name":"x","field":"f"}]}}}`,
	`{"fields":{"a":{"inputFields":[{"namespace":"n","name":"x","field":"f"},1]}}}`, `{"fields":{"a":null,"b":"s","c":{},"d":{"inputFields":null},"e":{"inputFields":{}}}}`,
	`{"fields":null}`, `{"fields":[]}`, `{}`, `{"Fields":{"a":{"inputFields":[{"namespace":"n","name":"x","field":"f"}]}}}`,
	`{"fields":{"a":{"inputFields":[{"namespace":"n","name":"x","field":"f"}]}},"fields":{"b":{"inputFields":[{"namespace":"n","name":"y","field":"g"}]}}}`,
	`{"fields":{"a":{"inputFields":[{"namespace":"n","name":"x","field":"f"}]},"a":{"inputFields":[]}}}`,
	`{"fields":{"a":{"inputFields":[{"namespace":"n","namespace":"m","name":"x","field":"f","field":null}],"inputFields":[{"namespace":"n","name":"z","field":"q"}]}}}`,
	`{"fields":{"a\"b":{"inputFields":[{"namespace":"n","name":"x","field":"f"}]}}}`, `{"fields":{"a":{"inputFields":[{"namespace":"n","name":"x","field":"f"}]}}} x`,
}

// TestFastColumnEdges: the one-pass reader of columnLineage facets gives
// what encoding/json gives, on hand-made facets and random mutations.
func TestFastColumnEdges(t *testing.T) {
	t.Parallel()
	out := Dataset{Namespace: "ns", Name: "out"}
	check := func(raw []byte) bool {
		t.Helper()
		c := ColumnLineage{Output: out, Raw: raw}
		prefix := []FieldEdge{{InField: "keep"}}
		want := c.slowEdges(append([]FieldEdge(nil), prefix...))
		got := c.Edges(append([]FieldEdge(nil), prefix...))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("facet %q:\ngot  %v\nwant %v", raw, got, want)
		}
		_, fast := c.fastEdges(nil)
		return fast
	}
	fast := 0
	for _, c := range columnCorpus {
		if check([]byte(c)) {
			fast++
		}
	}
	if fast < len(columnCorpus)/2 {
		t.Fatalf("only %d of %d on the fast path", fast, len(columnCorpus))
	}
	r := rand.New(rand.NewPCG(8, 9))
	alphabet := []byte(`{}[]",:\ ntrufalse0123456789.-eE<&é` + "\x00\xff")
	for range mutations() {
		b := []byte(columnCorpus[r.IntN(len(columnCorpus))])
		for range 1 + r.IntN(3) {
			if len(b) == 0 {
				break
			}
			i := r.IntN(len(b))
			switch r.IntN(3) {
			case 0:
				b[i] = alphabet[r.IntN(len(alphabet))]
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[i:]...)...)
			}
		}
		check(b)
	}
}

var aliasCorpus = []string{
	`{"_producer":"p","identifiers":[{"namespace":"hive://metastore","name":"db.orders","type":"TABLE"},{"namespace":"s3://b","name":"orders"}]}`,
	`{"identifiers":[null,{"namespace":"n","name":"x","type":7},{"namespace":"n"},{"namespace":"ns","name":"ds"},{"namespace":"n","name":null}]}`,
	`{"identifiers":[{"namespace":"n","name":"x"},1]}`, `{"identifiers":null}`, `{"identifiers":{}}`, `{"identifiers":[]}`, `{}`,
	`{"identifiers":[{"namespace":"n","name":"x"}],"identifiers":[{"namespace":"n","name":"y"}]}`,
	`{"identifiers":[{"namespace":"n","namespace":"m","name":"x","type":"T","type":null}]}`, `{"Identifiers":[{"namespace":"n","name":"x"}]}`,
	`{"identifiers":[{"namespace":"n\"","name":"x"}]}`, `{"identifiers":[{"namespace":"n","name":"x"}]} x`, `[1]`, `null`,
}

// TestFastAliases: the one-pass reader of symlinks facets gives what
// encoding/json gives, on hand-made facets and random mutations.
func TestFastAliases(t *testing.T) {
	t.Parallel()
	d := Dataset{Namespace: "ns", Name: "ds"}
	check := func(raw []byte) bool {
		t.Helper()
		prefix := []Alias{{Type: "keep"}}
		want := slowAliasesOf(append([]Alias(nil), prefix...), d, raw)
		got := aliasesOf(append([]Alias(nil), prefix...), d, raw)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("facet %q:\ngot  %v\nwant %v", raw, got, want)
		}
		_, fast := fastAliases(nil, d, raw)
		return fast
	}
	fast := 0
	for _, c := range aliasCorpus {
		if check([]byte(c)) {
			fast++
		}
	}
	if fast < len(aliasCorpus)/2 {
		t.Fatalf("only %d of %d on the fast path", fast, len(aliasCorpus))
	}
	r := rand.New(rand.NewPCG(10, 11))
	alphabet := []byte(`{}[]",:\ ntrufalse0123456789.-eE<&é` + "\x00\xff")
	for range mutations() {
		b := []byte(aliasCorpus[r.IntN(len(aliasCorpus))])
		for range 1 + r.IntN(3) {
			if len(b) == 0 {
				break
			}
			i := r.IntN(len(b))
			switch r.IntN(3) {
			case 0:
				b[i] = alphabet[r.IntN(len(alphabet))]
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[i:]...)...)
			}
		}
		check(b)
	}
}

// mutations is how many mutated corpus entries the fast-path tests try
// (fewer with -short).
func mutations() int {
	if testing.Short() {
		return 20000
	}
	return 200000
}
