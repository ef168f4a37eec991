package explorer

import (
	"io"
	"net/http"
	"net/url"
	"testing"
)

func TestSmoke(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	for _, p := range []string{
		"/api/lf/v1/lineage?nodeId=" + url.QueryEscape(dsNode(fxClean)) + "&up=2&down=2",
		"/api/lf/v1/node?nodeId=" + url.QueryEscape(jobNode(fxETL)),
		"/api/lf/v1/search?q=cle",
		"/api/lf/v1/health",
	} {
		resp, err := http.Get(hs.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("%s -> %d %s", p, resp.StatusCode, b)
	}
}

func TestSmokeMarquez(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	for _, p := range []string{
		"/api/v1/namespaces",
		"/api/v1/namespaces/ns1/datasets",
		"/api/v1/namespaces/ns1/jobs/etl",
		"/api/v1/namespaces/ns1/jobs/etl/runs",
		"/api/v1/jobs/runs/" + fxRunFail,
		"/api/v1/lineage?nodeId=" + url.QueryEscape(dsNode(fxReport)) + "&depth=2",
		"/api/v1/search?q=e",
	} {
		resp, err := http.Get(hs.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(b) > 1500 {
			b = b[:1500]
		}
		t.Logf("%s -> %d %s", p, resp.StatusCode, b)
	}
}
