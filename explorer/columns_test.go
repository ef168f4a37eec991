package explorer

import (
	"sort"
	"strings"
	"testing"
)

// TestColumnLineageRoute reads the fixture's field lineage (raw.id
// -IDENTITY-> clean.id -AGGREGATION-> report.total) through
// /api/lf/v1/column-lineage, and checks it against the Marquez route, which
// walks the same way.
func TestColumnLineageRoute(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	read := func(query string) ColumnLineage {
		t.Helper()
		var cl ColumnLineage
		if code, b := get(t, hs.URL, "/api/lf/v1/column-lineage?"+query, &cl); code != 200 {
			t.Fatalf("GET column-lineage?%s: %d %s", query, code, b)
		}
		return cl
	}
	fieldIDs := func(cl ColumnLineage) string {
		var ids []string
		for _, f := range cl.Fields {
			ids = append(ids, f.ID)
		}
		sort.Strings(ids)
		return strings.Join(ids, " ")
	}
	edges := func(cl ColumnLineage) string {
		var es []string
		for _, e := range cl.Edges {
			tt, td := "nil", "nil"
			if e.TransformationType != nil {
				tt = *e.TransformationType
			}
			if e.TransformationDescription != nil {
				td = *e.TransformationDescription
			}
			es = append(es, e.Origin+" -> "+e.Destination+" "+tt+" "+td)
		}
		sort.Strings(es)
		return strings.Join(es, "; ")
	}
	const raw, clean, total = "datasetField:ns1:raw:id", "datasetField:ns1:clean:id", "datasetField:ns1:report:total"

	// A dataset, default depth 1: its field and the field it comes from.
	cl := read("nodeId=" + q("dataset:ns1:clean"))
	if cl.Center != "dataset:ns1:clean" || fieldIDs(cl) != clean+" "+raw || edges(cl) != raw+" -> "+clean+" IDENTITY copied" {
		t.Errorf("clean at depth 1: center %q fields %q edges %q", cl.Center, fieldIDs(cl), edges(cl))
	}
	for _, f := range cl.Fields {
		if f.ID == raw && (f.Namespace != "ns1" || f.Dataset != "raw" || f.Field != "id") {
			t.Errorf("field %s: %+v", raw, f)
		}
	}
	// Named by an alias: the dataset's own id is the centre.
	if cl := read("nodeId=" + q("dataset:warehouse:clean_v")); cl.Center != "dataset:ns1:clean" || fieldIDs(cl) != clean+" "+raw {
		t.Errorf("clean by its alias: center %q fields %q", cl.Center, fieldIDs(cl))
	}
	// One field, both ways.
	cl = read("nodeId=" + q(clean) + "&depth=2&downstream=true")
	wantEdges := clean + " -> " + total + " AGGREGATION count; " + raw + " -> " + clean + " IDENTITY copied"
	if cl.Center != clean || fieldIDs(cl) != clean+" "+raw+" "+total || edges(cl) != wantEdges {
		t.Errorf("clean.id both ways: center %q fields %q edges %q", cl.Center, fieldIDs(cl), edges(cl))
	}
	// Depth 0: the fields alone, no edge.
	if cl := read("nodeId=" + q("dataset:ns1:clean") + "&depth=0"); fieldIDs(cl) != clean || len(cl.Edges) != 0 {
		t.Errorf("clean at depth 0: fields %q edges %q", fieldIDs(cl), edges(cl))
	}
	// A known dataset without fields: empty lists, not null.
	if code, b := get(t, hs.URL, "/api/lf/v1/column-lineage?nodeId="+q(dsNode(fxGhost)), nil); code != 200 || !strings.Contains(string(b), `"fields":[]`) || !strings.Contains(string(b), `"edges":[]`) {
		t.Errorf("ghost: %d %s", code, b)
	}

	// The same walk as the Marquez route.
	var mq struct {
		Graph []MQFieldNode `json:"graph"`
	}
	get(t, hs.URL, "/api/v1/column-lineage?nodeId="+q(clean)+"&depth=2&withDownstream=true", &mq)
	if lf := columnLineageOf(clean, mq.Graph); fieldIDs(lf) != fieldIDs(cl) || edges(lf) != edges(cl) {
		t.Errorf("Marquez route: fields %q edges %q, ours: %q %q", fieldIDs(lf), edges(lf), fieldIDs(cl), edges(cl))
	}

	for path, want := range map[string]int{
		"nodeId=" + q(clean) + "&downstream=maybe":   400,
		"nodeId=" + q(clean) + "&depth=99":           400,
		"nodeId=":                                    400,
		"nodeId=" + q("datasetField:ns1:clean:nope"): 404,
		"nodeId=" + q("dataset:ns1:nope"):            404,
	} {
		var e errorBody
		if code, b := get(t, hs.URL, "/api/lf/v1/column-lineage?"+path, &e); code != want || e.Code != want {
			t.Errorf("GET column-lineage?%s: %d %s, want %d", path, code, b, want)
		}
	}
}
