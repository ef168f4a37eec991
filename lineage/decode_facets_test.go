package lineage

import (
	"fmt"
	"math/rand/v2"
	"strings"
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

// mutate changes one to three bytes of b at random (replaced, removed or
// inserted from alphabet).
func mutate(r *rand.Rand, b []byte) []byte {
	alphabet := []byte(`{}[]",:\ ntrufalse0123456789.-eE<&é` + "\x00\xff")
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
	return b
}

// TestInterpretFacet: the scanner reads facets as encoding/json does, on
// hand-made facets of every shape and on random mutations of them.
func TestInterpretFacet(t *testing.T) {
	t.Parallel()
	given := 0 // facets that give a value: the test compares something
	check := func(kind int, raw []byte) {
		t.Helper()
		want := refInterpretFacet(kind, raw)
		if got := interpretFacet(kind, raw); got != want {
			t.Fatalf("kind %d, facet %q: got %+v, want %+v", kind, raw, got, want)
		}
		if want.ok != [3]bool{} {
			given++
		}
	}
	for _, c := range facetCorpus {
		for kind := range fKinds {
			check(kind, []byte(c))
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		check(r.IntN(fKinds), mutate(r, []byte(facetCorpus[r.IntN(len(facetCorpus))])))
	}
	if given < 1000 {
		t.Fatalf("only %d facets gave a value", given)
	}
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
	// "fields" under case folding (U+017F folds to s), merged, emptied by null, failed by another type
	`{"fields":{"a":{"inputFields":[{"namespace":"n","name":"x","field":"f"}]}},"FIELDS":{"b":{"inputFields":[{"namespace":"n","name":"y","field":"g"}]}}}`,
	`{"fieldſ":{"a":{"inputFields":[{"namespace":"n","name":"x","field":"f"}]}}}`, "{\"field\u017f\":{\"a\":{\"inputFields\":[{\"namespace\":\"n\",\"name\":\"x\",\"field\":\"f\"}]}}}",
	`{"fields":{"b":{"inputFields":[{"namespace":"n","name":"x","field":"f"}]}},"fields":null,"fields":{"a":{"inputFields":[{"namespace":"n","name":"y","field":"g"}]}}}`,
	`{"fields":7,"fields":{"a":{"inputFields":[{"namespace":"n","name":"x","field":"f"}]}}}`,
	// escaped and invalid UTF-8 names; two spellings of one name (the last wins)
	`{"fi\u0065lds":{"caf\u00e9":{"inputFields":[{"namespace":"n","name":"x","field":"f\u00e9"}]}}}`,
	"{\"fields\":{\"a\xff\":{\"inputFields\":[{\"namespace\":\"n\",\"name\":\"x\",\"field\":\"f\"}]},\"a\\ufffd\":{\"inputFields\":[]}}}",
	`{"fields":{"a":{"inputFields":[{"namespace":"n","name":"x","field":"f"}]},"\u0061":{"inputFields":[{"namespace":"n","name":"y","field":"g"}]}}}`,
	`{"fields":{"a":{"inputFields":[{"namespace":"n","name":"x","field":"f","transformations":[{"type":"DIRECT","subtype":"A<B","description":"x\u2028y"},null]}]}}}`,
}

// TestColumnEdges: the scanner reads columnLineage facets as
// encoding/json does, on hand-made facets and random mutations.
func TestColumnEdges(t *testing.T) {
	t.Parallel()
	out := Dataset{Namespace: "ns", Name: "out"}
	given := 0
	check := func(raw []byte) {
		t.Helper()
		c := ColumnLineage{Output: out, Raw: raw}
		prefix := []FieldEdge{{InField: "keep"}}
		want := refEdges(c, append([]FieldEdge(nil), prefix...))
		got := c.Edges(append([]FieldEdge(nil), prefix...))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("facet %q:\ngot  %v\nwant %v", raw, got, want)
		}
		if len(want) > 1 {
			given++
		}
	}
	for _, c := range columnCorpus {
		check([]byte(c))
	}
	r := rand.New(rand.NewPCG(8, 9))
	for range 200000 {
		check(mutate(r, []byte(columnCorpus[r.IntN(len(columnCorpus))])))
	}
	if given < 20000 {
		t.Fatalf("only %d facets gave pairs", given)
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

// TestAliases: the scanner reads symlinks facets as encoding/json does,
// on hand-made facets and random mutations.
func TestAliases(t *testing.T) {
	t.Parallel()
	d := Dataset{Namespace: "ns", Name: "ds"}
	given := 0
	check := func(raw []byte) {
		t.Helper()
		prefix := []Alias{{Type: "keep"}}
		want := refAliasesOf(append([]Alias(nil), prefix...), d, raw)
		got := aliasesOf(append([]Alias(nil), prefix...), d, raw)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("facet %q:\ngot  %v\nwant %v", raw, got, want)
		}
		if len(want) > 1 {
			given++
		}
	}
	for _, c := range aliasCorpus {
		check([]byte(c))
	}
	r := rand.New(rand.NewPCG(10, 11))
	for range 200000 {
		check(mutate(r, []byte(aliasCorpus[r.IntN(len(aliasCorpus))])))
	}
	if given < 5000 {
		t.Fatalf("only %d facets gave aliases", given)
	}
}

var runFacetCorpus = []string{
	`{"message":"boom","programmingLanguage":"JAVA","stackTrace":"a\n\tb"}`, `{"message":null}`, `{"message":7}`, `{"message":""}`,
	`{"message":"a","message":null}`, `{"message":null,"message":"b"}`, `{"message":"caf\u00e9 \ud800"}`, "{\"message\":\"\xff\"}",
	`{"nominalStartTime":"2026-01-01T00:00:00Z","nominalEndTime":"2026-01-02T00:00:00"}`, `{"nominalStartTime":"2026-01-01T00:00:00+01:00"}`,
	`{"nominalStartTime":"yesterday","nominalEndTime":null}`, `{"nominalStartTime":"2026-01-01T00:00:00Z","nominalStartTime":5}`,
	`{"nominalEndTime":"2026-01-0\u0032T00:00:00Z"}`, `{"lifecycleStateChange":"DROP"}`, `{"lifecycleStateChange":"DROP","lifecycleStateChange":null}`,
	`{"lifecycleStateChange":{"x":1}}`, `{"lifecycleStateChange":"CRE\u0041TE"}`, `{"message":"x"} x`, `[]`, `null`, `"s"`,
}

// TestRunAndLifecycleFacets: the scanner reads the errorMessage,
// nominalTime and lifecycleStateChange facets as encoding/json does.
func TestRunAndLifecycleFacets(t *testing.T) {
	t.Parallel()
	given := 0
	check := func(raw []byte) {
		t.Helper()
		if got, want := runFacetsOf(raw, raw), refRunFacetsOf(raw, raw); got != want {
			t.Fatalf("facet %q: got %+v, want %+v", raw, got, want)
		} else if want != (RunFacets{}) {
			given++
		}
		if got, want := runFacetsOf(nil, raw), refRunFacetsOf(nil, raw); got != want {
			t.Fatalf("nominalTime %q: got %+v, want %+v", raw, got, want)
		}
		if got, want := lifecycleOf(raw), refLifecycleOf(raw); got != want {
			t.Fatalf("lifecycle %q: got %q, want %q", raw, got, want)
		} else if want != "" {
			given++
		}
	}
	for _, c := range runFacetCorpus {
		check([]byte(c))
	}
	r := rand.New(rand.NewPCG(12, 13))
	for range 100000 {
		check(mutate(r, []byte(runFacetCorpus[r.IntN(len(runFacetCorpus))])))
	}
	if given < 3000 {
		t.Fatalf("only %d facets gave a value", given)
	}
}

var runExtraFacetCorpus = []string{
	`{"name":"spark","version":"3.5.1","openlineageAdapterVersion":"1.40.0","_producer":"p"}`, `{"name":null,"version":7}`,
	`{"name":"a","name":null}`, `{"name":null,"name":"b"}`, `{"externalQueryId":"q-1","source":"bigquery"}`,
	`{"externalQueryId":{"x":1},"source":["s"]}`, `{"externalQueryId":"caf\u00e9 \ud800","source":""}`, "{\"source\":\"\xff\"}",
	`{"name":"` + strings.Repeat("x", MaxRunFacetValue) + `","version":"` + strings.Repeat("y", MaxRunFacetValue+1) + `"}`,
	`{"externalQueryId":"` + strings.Repeat("\u00e9", MaxRunFacetValue/2) + `"}`,
	`{"source":"` + strings.Repeat("\u00e9", MaxRunFacetValue/2+1) + `"}`, `{"name":"x"} x`, `[]`, `null`, `"s"`,
}

// TestRunExtraFacets: the scanner reads the processing_engine and
// externalQuery facets as encoding/json does, wrong shapes ignored and a
// value longer than MaxRunFacetValue dropped and reported.
func TestRunExtraFacets(t *testing.T) {
	t.Parallel()
	given, capped := 0, 0
	check := func(raw []byte) {
		t.Helper()
		var got, want RunFacets
		gc, wc := runExtraFacetsOf(&got, raw, raw), refRunExtraFacetsOf(&want, raw, raw)
		if got != want || gc != wc {
			t.Fatalf("facet %q: got %+v %v, want %+v %v", raw, got, gc, want, wc)
		}
		if want != (RunFacets{}) {
			given++
		}
		if wc {
			capped++
		}
	}
	for _, c := range runExtraFacetCorpus {
		check([]byte(c))
	}
	var f RunFacets
	if runExtraFacetsOf(&f, []byte(runExtraFacetCorpus[0]), []byte(runExtraFacetCorpus[4])) ||
		f.EngineName != (OptStr{"spark", true}) || f.EngineVersion != (OptStr{"3.5.1", true}) ||
		f.AdapterVersion != (OptStr{"1.40.0", true}) || f.ExternalQueryID != (OptStr{"q-1", true}) ||
		f.ExternalQuerySource != (OptStr{"bigquery", true}) {
		t.Fatalf("facets: %+v", f)
	}
	f = RunFacets{}
	if !runExtraFacetsOf(&f, []byte(runExtraFacetCorpus[8]), nil) || len(f.EngineName.V) != MaxRunFacetValue || f.EngineVersion.Ok {
		t.Fatalf("cap: %+v", f)
	}
	f = RunFacets{}
	if runExtraFacetsOf(&f, nil, []byte(runExtraFacetCorpus[9])) || !f.ExternalQueryID.Ok {
		t.Fatalf("cap at 1 KiB exactly: %+v", f)
	}
	r := rand.New(rand.NewPCG(14, 15))
	for range 50000 {
		check(mutate(r, []byte(runExtraFacetCorpus[r.IntN(len(runExtraFacetCorpus))])))
	}
	if given < 2000 || capped < 100 {
		t.Fatalf("only %d facets gave a value, %d capped", given, capped)
	}
}

// FuzzFacetsAgreeWithEncodingJSON holds every facet reader to its
// encoding/json reference on the same bytes.
func FuzzFacetsAgreeWithEncodingJSON(f *testing.F) {
	for _, corpus := range [][]string{facetCorpus, columnCorpus, aliasCorpus, runFacetCorpus, runExtraFacetCorpus} {
		for _, c := range corpus {
			f.Add(0, []byte(c))
		}
	}
	f.Add(0, []byte(`[{"type":"DIRECT","subtype":"IDENTITY","description":"copied"},null,{"type":"x\u00e9"}]`))
	f.Fuzz(func(t *testing.T, kind int, raw []byte) {
		kind = ((kind % fKinds) + fKinds) % fKinds
		if got, want := interpretFacet(kind, raw), refInterpretFacet(kind, raw); got != want {
			t.Fatalf("kind %d, facet %q: got %+v, want %+v", kind, raw, got, want)
		}
		d := Dataset{Namespace: "ns", Name: "ds"}
		c := ColumnLineage{Output: d, Raw: raw}
		if got, want := c.Edges(nil), refEdges(c, nil); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("column facet %q:\ngot  %v\nwant %v", raw, got, want)
		}
		if got, want := aliasesOf(nil, d, raw), refAliasesOf(nil, d, raw); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("symlinks facet %q:\ngot  %v\nwant %v", raw, got, want)
		}
		gt, gd := transformations(raw)
		if wt, wd := refTransformations(raw); gt != wt || gd != wd {
			t.Fatalf("transformations %q: got (%q, %q), want (%q, %q)", raw, gt, gd, wt, wd)
		}
		if got, want := lifecycleOf(raw), refLifecycleOf(raw); got != want {
			t.Fatalf("lifecycle facet %q: got %q, want %q", raw, got, want)
		}
		if got, want := runFacetsOf(raw, raw), refRunFacetsOf(raw, raw); got != want {
			t.Fatalf("run facets %q: got %+v, want %+v", raw, got, want)
		}
		var got, want RunFacets
		if gc, wc := runExtraFacetsOf(&got, raw, raw), refRunExtraFacetsOf(&want, raw, raw); got != want || gc != wc {
			t.Fatalf("processing_engine/externalQuery %q: got %+v %v, want %+v %v", raw, got, gc, want, wc)
		}
	})
}

// TestDecodeEngineAndQueryFacets: a whole record's processing_engine and
// externalQuery run facets reach Event.Run; wrong shapes are ignored and an
// oversize value is dropped and marked LenientCappedRunFacet, never a dead
// letter (the seeds of FuzzDecodeAgreesWithEncodingJSON hold the same
// records to the encoding/json reference).
func TestDecodeEngineAndQueryFacets(t *testing.T) {
	t.Parallel()
	var d Decoder
	var ev Event
	if err := d.Decode([]byte(modelSeeds[0]), &ev); err != nil {
		t.Fatal(err)
	}
	want := RunFacets{EngineName: OptStr{"spark", true}, EngineVersion: OptStr{"3.5.1", true}, AdapterVersion: OptStr{"1.40.0", true},
		ExternalQueryID: OptStr{"q1", true}, ExternalQuerySource: OptStr{"bigquery", true}}
	if ev.Run != want || ev.Lenient != 0 {
		t.Fatalf("run facets %+v lenient %v", ev.Run, ev.Lenient)
	}
	if err := d.Decode([]byte(modelSeeds[1]), &ev); err != nil || ev.Run != (RunFacets{}) || ev.Lenient != 0 {
		t.Fatalf("wrong shapes: %v %+v %v", err, ev.Run, ev.Lenient)
	}
	if err := d.Decode([]byte(modelSeeds[2]), &ev); err != nil || ev.Run != (RunFacets{EngineVersion: OptStr{"1", true}}) || ev.Lenient != LenientCappedRunFacet {
		t.Fatalf("capped: %v %+v %v", err, ev.Run, ev.Lenient)
	}
}
