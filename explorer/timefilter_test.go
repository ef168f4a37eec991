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
