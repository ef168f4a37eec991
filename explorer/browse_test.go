package explorer

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestLandingAndBrowse: the landing page lists namespaces with counts, the
// recently failed jobs with their error and the recently changed nodes; a
// namespace is browsed in pages, sorted and filtered.
func TestLandingAndBrowse(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	var l Landing
	if code, b := get(t, hs.URL, "/api/lf/v1/landing", &l); code != http.StatusOK {
		t.Fatalf("landing: %d %s", code, b)
	}
	var ns1 *NamespaceCount
	for i := range l.Namespaces {
		if l.Namespaces[i].Name == fxNS {
			ns1 = &l.Namespaces[i]
		}
	}
	if ns1 == nil || ns1.Jobs != 2 || ns1.Datasets < 4 {
		t.Errorf("landing namespaces %+v: want ns1 with 2 jobs and at least 4 datasets", l.Namespaces)
	}
	if len(l.RecentlyFailed) != 1 || l.RecentlyFailed[0].ID != jobNode(fxETL) || l.RecentlyFailed[0].RunID != fxRunFail ||
		l.RecentlyFailed[0].ErrorMessage == nil || *l.RecentlyFailed[0].ErrorMessage != "boom" {
		t.Errorf("recently failed %+v: want etl's failed run with \"boom\"", l.RecentlyFailed)
	}
	if len(l.RecentlyChanged) == 0 || l.RecentlyChanged[0].LastSeen != 4000 {
		t.Errorf("recently changed %+v: want the nodes of the edges last seen at 4000 first", l.RecentlyChanged)
	}
	var p BrowsePage
	if code, b := get(t, hs.URL, "/api/lf/v1/browse?namespace=ns1&limit=2&offset=1", &p); code != http.StatusOK {
		t.Fatalf("browse: %d %s", code, b)
	}
	if p.Total != ns1.Jobs+ns1.Datasets || len(p.Results) != 2 || p.Results[0].Name != "clean" || p.Results[1].Name != "etl" {
		t.Errorf("browse ns1 page 2 of 2: %+v", p)
	}
	get(t, hs.URL, "/api/lf/v1/browse?namespace=ns1&type=JOB&sort=-name", &p)
	if p.Total != 2 || p.Results[0].Name != "etl" || p.Results[1].Name != "agg" {
		t.Errorf("browse ns1 jobs by -name: %+v", p)
	}
	get(t, hs.URL, "/api/lf/v1/browse?namespace=ns1&q=EP", &p)
	if p.Total != 1 || p.Results[0].Name != "report" {
		t.Errorf("browse ns1 q=EP: %+v", p)
	}
	get(t, hs.URL, "/api/lf/v1/browse?namespace="+url.QueryEscape(fxOdd.Namespace), &p)
	if p.Total != 1 || p.Results[0].Name != fxOdd.Name {
		t.Errorf("browse %s: %+v", fxOdd.Namespace, p)
	}
	for qs, want := range map[string]string{
		"":                           "namespace is required",
		"namespace=ns1&sort=size":    "sort=",
		"namespace=ns1&type=FIELD":   "type=",
		"namespace=ns1&limit=100000": "limit=",
	} {
		var e errorBody
		code, _ := get(t, hs.URL, "/api/lf/v1/browse?"+qs, &e)
		if code != http.StatusBadRequest || !strings.Contains(e.Message, want) {
			t.Errorf("browse?%s: %d %q, want 400 with %q", qs, code, e.Message, want)
		}
	}
	var nss struct{ Namespaces []NamespaceCount }
	get(t, hs.URL, "/api/lf/v1/namespaces", &nss)
	if len(nss.Namespaces) != len(l.Namespaces) {
		t.Errorf("namespaces: %d, landing %d", len(nss.Namespaces), len(l.Namespaces))
	}
}
