package explorer

import (
	"net/http"
	"strings"
	"testing"
)

// TestNeighbors pages and searches a node's neighbours in each direction.
func TestNeighbors(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	etl := q(jobNode(fxETL))
	var p NeighborPage
	if code, b := get(t, hs.URL, "/api/lf/v1/neighbors?nodeId="+etl, &p); code != http.StatusOK {
		t.Fatalf("%d %s", code, b)
	}
	if p.Total != 2 || p.Results[0].Name != "clean" || !strings.HasPrefix(p.Results[1].Name, "long-") || p.Direction != "down" {
		t.Errorf("etl down: %+v", p)
	}
	get(t, hs.URL, "/api/lf/v1/neighbors?nodeId="+etl+"&direction=up&limit=1&offset=1", &p)
	if p.Total != 2 || len(p.Results) != 1 || p.Results[0].Name != "raw" {
		t.Errorf("etl up, page 2 of 1: %+v", p)
	}
	get(t, hs.URL, "/api/lf/v1/neighbors?nodeId="+etl+"&q=CLE", &p)
	if p.Total != 1 || p.Results[0].ID != dsNode(fxClean) {
		t.Errorf("etl down q=CLE: %+v", p)
	}
	get(t, hs.URL, "/api/lf/v1/neighbors?nodeId="+etl+"&asOf=2500&stale=show", &p)
	if p.Total != 1 || p.Results[0].Name != "clean" {
		t.Errorf("etl down asOf 2500: %+v", p)
	}
	var e errorBody
	if code, _ := get(t, hs.URL, "/api/lf/v1/neighbors?nodeId="+etl+"&direction=x", &e); code != http.StatusBadRequest || !strings.Contains(e.Message, "direction=") {
		t.Errorf("bad direction: %d %q", code, e.Message)
	}
}
