package explorer

import (
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func impactNames(im Impact) string {
	var out []string
	for _, n := range im.Results {
		name := n.Name
		if strings.HasPrefix(name, "long-") {
			name = "long"
		} else if name == fxOdd.Name {
			name = "odd"
		}
		out = append(out, name+"@"+strconv.Itoa(n.Distance))
	}
	return strings.Join(out, ",")
}

// TestImpact lists what is downstream and upstream of a node with
// distance and via, filters by type and namespace, caps with a count,
// takes the time filter, and exports the same rows as CSV.
func TestImpact(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	raw := q(dsNode(fxRaw))
	for _, tc := range []struct{ query, want string }{
		{"nodeId=" + raw + "&depth=4", "etl@1,clean@2,long@2,agg@3,report@4"},
		{"nodeId=" + raw + "&direction=down&depth=2", "etl@1,clean@2,long@2"},
		{"nodeId=" + raw + "&depth=4&type=DATASET", "clean@2,long@2,report@4"},
		{"nodeId=" + raw + "&depth=4&type=JOB&namespace=ns1", "etl@1,agg@3"},
		{"nodeId=" + raw + "&depth=4&asOf=1500", "etl@1,clean@2"},
		{"nodeId=" + q(dsNode(fxReport)) + "&direction=up&depth=4", "agg@1,clean@2,etl@3,raw@4,odd@4"},
	} {
		var im Impact
		if code, b := get(t, hs.URL, "/api/lf/v1/impact?"+tc.query, &im); code != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.query, code, b)
		}
		// The order within one distance is the graph's: compare as sets per distance.
		if got := impactNames(im); !sameSet(got, tc.want) {
			t.Errorf("%s: %s, want %s", tc.query, got, tc.want)
		}
		if im.Count != len(im.Results) || im.Truncated {
			t.Errorf("%s: count %d of %d, truncated %v", tc.query, im.Count, len(im.Results), im.Truncated)
		}
	}
	var im Impact
	get(t, hs.URL, "/api/lf/v1/impact?nodeId="+raw+"&depth=4", &im)
	for _, n := range im.Results {
		if n.Name == "clean" && n.Via != jobNode(fxETL) || n.Name == "agg" && n.Via != dsNode(fxClean) {
			t.Errorf("%s via %s", n.Name, n.Via)
		}
	}
	var capped Impact
	get(t, hs.URL, "/api/lf/v1/impact?nodeId="+raw+"&depth=4&limit=2", &capped)
	if capped.Count != 2 || !capped.Truncated {
		t.Errorf("limit=2: count %d truncated %v", capped.Count, capped.Truncated)
	}

	// CSV: the same rows as the JSON list.
	resp, err := http.Get(hs.URL + "/api/lf/v1/impact?nodeId=" + raw + "&depth=4&format=csv")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Errorf("CSV Content-Type %q", ct)
	}
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(im.Results)+1 || strings.Join(rows[0], ",") != "id,type,namespace,name,distance,via" {
		t.Fatalf("CSV: %d rows, header %v", len(rows), rows[0])
	}
	for i, n := range im.Results {
		want := []string{n.ID, n.Type, n.Namespace, n.Name, strconv.Itoa(n.Distance), n.Via}
		if strings.Join(rows[i+1], "\x00") != strings.Join(want, "\x00") {
			t.Errorf("CSV row %d: %q, want %q", i+1, rows[i+1], want)
		}
	}

	for qs, want := range map[string]string{
		"nodeId=" + raw + "&direction=sideways": "direction=",
		"nodeId=" + raw + "&type=TABLE":         "type=",
		"nodeId=" + raw + "&depth=0":            "depth=",
		"nodeId=" + raw + "&format=xml":         "format=",
		"nodeId=" + raw + "&limit=10001":        "limit=",
		"depth=2":                               "nodeId is required",
	} {
		var e errorBody
		code, _ := get(t, hs.URL, "/api/lf/v1/impact?"+qs, &e)
		if code != http.StatusBadRequest || !strings.Contains(e.Message, want) {
			t.Errorf("%s: %d %q, want 400 with %q", qs, code, e.Message, want)
		}
	}
	var e errorBody
	if code, _ := get(t, hs.URL, "/api/lf/v1/impact?nodeId="+q("dataset:ns1:nope"), &e); code != http.StatusNotFound {
		t.Errorf("unknown node: %d", code)
	}
}

// sameSet compares two comma-separated lists as sets, and their lengths.
func sameSet(a, b string) bool {
	as, bs := strings.Split(a, ","), strings.Split(b, ",")
	if len(as) != len(bs) {
		return false
	}
	m := map[string]int{}
	for _, x := range as {
		m[x]++
	}
	for _, x := range bs {
		if m[x]--; m[x] < 0 {
			return false
		}
	}
	return true
}
