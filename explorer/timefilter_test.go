package explorer

import (
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// The fixture's edges are seen: raw->etl->clean 1000..2000,
// clean->agg->report 2000..3000, odd->etl->long 3000..4000 (Unix ms).
func lineageNames(l Lineage) string {
	var ns []string
	for _, n := range l.Nodes {
		name := n.Name
		if n.Name == fxOdd.Name {
			name = "odd"
		}
		ns = append(ns, name)
	}
	sort.Strings(ns)
	return strings.Join(ns, ",")
}

// TestLineageInTime: asOf before an edge's first sight leaves it (and what
// is only reached through it) out, a later asOf brings it back; a window
// keeps the edges seen in it; stale edges are hidden and counted by
// default and shown with stale=show; bad time parameters are 400s naming
// the parameter.
func TestLineageInTime(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{StaleAfter: 1500 * time.Millisecond})
	c := q(dsNode(fxClean))
	for _, tc := range []struct {
		query, want string
		hidden      bool
	}{
		{"&asOf=1500&stale=show", "clean,etl,raw", true},
		{"&asOf=2500&stale=show", "agg,clean,etl,raw,report", true},
		{"&asOf=" + time.UnixMilli(3600).UTC().Format(time.RFC3339Nano), "agg,clean,report", true}, // stale before 2100 ms: etl->clean (last 2000) is
		{"&asOf=4500", "agg,clean,report", true},
		{"&asOf=4500&stale=show", "agg,clean,etl,odd,raw,report", false},
		{"&since=2500&until=3500&stale=show", "agg,clean,report", true},
		{"&until=1500&stale=show", "clean,etl,raw", true},
	} {
		var l Lineage
		if code, b := get(t, hs.URL, "/api/lf/v1/lineage?nodeId="+c+"&up=2&down=2"+tc.query, &l); code != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.query, code, b)
		}
		if got := lineageNames(l); got != tc.want {
			t.Errorf("%s: nodes %s, want %s", tc.query, got, tc.want)
		}
		if (l.HiddenEdges > 0) != tc.hidden {
			t.Errorf("%s: hiddenEdges %d, want hidden=%v", tc.query, l.HiddenEdges, tc.hidden)
		}
		if l.Time == nil {
			t.Errorf("%s: no time filter echoed", tc.query)
		}
		for _, e := range l.Edges {
			if e.FirstSeen == nil || e.LastSeen == nil {
				t.Errorf("%s: edge %s without seen times", tc.query, e.ID)
			}
		}
	}
	for q, want := range map[string]string{
		"&asOf=yesterday":        "asOf=",
		"&asOf=1000&since=500":   "asOf cannot be combined",
		"&since=3000&until=2000": "since (3000) is after until",
		"&stale=maybe":           "stale=",
	} {
		var e errorBody
		code, _ := get(t, hs.URL, "/api/lf/v1/lineage?nodeId="+c+q, &e)
		if code != http.StatusBadRequest || !strings.Contains(e.Message, want) {
			t.Errorf("%s: %d %q, want 400 with %q", q, code, e.Message, want)
		}
	}
	// A server without a stale age shows every edge and refuses stale=hide.
	_, hs2 := newTestServer(t, ep, Config{})
	var l Lineage
	get(t, hs2.URL, "/api/lf/v1/lineage?nodeId="+c+"&up=2&down=2", &l)
	if got := lineageNames(l); got != "agg,clean,etl,odd,raw,report" || l.HiddenEdges != 0 || l.Time != nil {
		t.Errorf("no filter: %s hidden %d time %v", got, l.HiddenEdges, l.Time)
	}
	var e errorBody
	if code, _ := get(t, hs2.URL, "/api/lf/v1/lineage?nodeId="+c+"&stale=hide", &e); code != http.StatusBadRequest {
		t.Errorf("stale=hide without a stale age: %d", code)
	}
}

// TestMarquezLineageInTime: Marquez's /api/v1/lineage takes the same time
// parameters as an extension: asOf before an edge's first sight leaves it
// out, back to now it is there; without them the answer is every edge
// (stale shown, as Marquez answers) even on a server with a stale age;
// bad time parameters are 400s naming the parameter.
func TestMarquezLineageInTime(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{StaleAfter: 1500 * time.Millisecond})
	c := q(dsNode(fxClean))
	names := func(query string) string {
		t.Helper()
		var g struct {
			Graph []MQNode `json:"graph"`
		}
		if code, b := get(t, hs.URL, "/api/v1/lineage?nodeId="+c+"&depth=2"+query, &g); code != http.StatusOK {
			t.Fatalf("%s: %d %s", query, code, b)
		}
		var ns []string
		for _, n := range g.Graph {
			name := n.ID[strings.LastIndex(n.ID, ":")+1:]
			if strings.Contains(n.ID, fxOdd.Name) {
				name = "odd"
			}
			ns = append(ns, name)
		}
		sort.Strings(ns)
		return strings.Join(ns, ",")
	}
	all := names("")
	for _, n := range []string{"agg", "etl", "odd", "raw", "report"} {
		if !strings.Contains(all, n) {
			t.Fatalf("no time parameters: %s, want every node (missing %s)", all, n)
		}
	}
	// clean->agg is first seen at 2000 ms: as of 1500 it (and what is only
	// reached through it) is absent; as of now it is there.
	if got := names("&asOf=1500&stale=show"); strings.Contains(got, "agg") || strings.Contains(got, "report") || !strings.Contains(got, "etl") {
		t.Errorf("asOf=1500: %s, want no agg/report, etl present", got)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	if got := names("&asOf=" + now + "&stale=show"); got != all {
		t.Errorf("asOf=now: %s, want %s", got, all)
	}
	// stale=hide on this route as on /api/lf/v1: every fixture edge was last
	// seen long before now, so only the node itself is left.
	if got := names("&stale=hide"); strings.Contains(got, "agg") || strings.Contains(got, "etl") {
		t.Errorf("stale=hide: %s, want no stale neighbours", got)
	}
	for q, want := range map[string]string{
		"&asOf=yesterday":      "asOf=",
		"&asOf=1000&since=500": "asOf cannot be combined",
		"&stale=maybe":         "stale=",
	} {
		var e errorBody
		code, _ := get(t, hs.URL, "/api/v1/lineage?nodeId="+c+q, &e)
		if code != http.StatusBadRequest || !strings.Contains(e.Message, want) {
			t.Errorf("%s: %d %q, want 400 with %q", q, code, e.Message, want)
		}
	}
}
