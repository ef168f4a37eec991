package explorer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// TestOpenAPI validates openapi.yaml itself, then real requests and answers
// of a server on the stand-in graph against it (kin-openapi's request and
// response validators: parameters, status codes, JSON schemas with their
// required and nullable fields), covering every documented operation.
func TestOpenAPI(t *testing.T) {
	ctx := context.Background()
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(ctx); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	doc.Servers = openapi3.Servers{{URL: hs.URL}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	ds, job := url.QueryEscape(dsNode(fxClean)), url.QueryEscape(jobNode(fxETL))
	for _, path := range []string{
		"/api/lf/v1/lineage?nodeId=" + ds + "&up=2&down=2",
		"/api/lf/v1/lineage?nodeId=" + ds + "&maxNodes=2",
		"/api/lf/v1/lineage?nodeId=" + ds + "&up=2&down=2&asOf=1500",
		"/api/lf/v1/lineage?nodeId=" + ds + "&asOf=x",
		"/api/lf/v1/impact?nodeId=" + ds + "&depth=3&type=DATASET",
		"/api/lf/v1/impact?nodeId=" + ds + "&depth=3&format=csv",
		"/api/lf/v1/impact?nodeId=" + ds + "&direction=left",
		"/api/lf/v1/landing",
		"/api/lf/v1/neighbors?nodeId=" + job + "&direction=up&q=a&limit=1",
		"/api/lf/v1/namespaces",
		"/api/lf/v1/browse?namespace=ns1&type=JOB&sort=-name&limit=1",
		"/api/lf/v1/browse?namespace=ns1&sort=size",
		"/api/lf/v1/lineage?nodeId=" + ds + "&up=99",
		"/api/lf/v1/lineage?nodeId=" + url.QueryEscape("dataset:ns1:nope"),
		"/api/lf/v1/node?nodeId=" + job,
		"/api/lf/v1/node?nodeId=" + ds,
		"/api/lf/v1/node?nodeId=" + url.QueryEscape("dataset:warehouse:clean_v"),
		"/api/lf/v1/search?q=clean",
		"/api/lf/v1/column-lineage?nodeId=" + ds,
		"/api/lf/v1/column-lineage?nodeId=" + url.QueryEscape("datasetField:ns1:clean:id") + "&depth=2&downstream=true",
		"/api/lf/v1/health",
		"/api/v1/namespaces",
		"/api/v1/namespaces/ns1",
		"/api/v1/namespaces/ns1/datasets?limit=2&offset=1",
		"/api/v1/namespaces/ns1/datasets/clean",
		"/api/v1/namespaces/ns1/datasets/clean/versions",
		"/api/v1/namespaces/ns1/jobs",
		"/api/v1/namespaces/ns1/jobs/etl",
		"/api/v1/namespaces/ns1/jobs/etl/versions",
		"/api/v1/namespaces/ns1/jobs/etl/runs",
		"/api/v1/namespaces/ns1/jobs/agg/runs?limit=1",
		"/api/v1/jobs/runs/" + fxRunFail,
		"/api/v1/jobs/runs/nope",
		"/api/v1/jobs?limit=1",
		"/api/v1/jobs/runs/" + fxRunFail + "/facets",
		"/api/v1/lineage?nodeId=" + job + "&depth=3",
		"/api/v1/column-lineage?nodeId=" + url.QueryEscape("datasetField:ns1:clean:id") + "&withDownstream=true",
		"/api/v1/search?q=e&filter=dataset&sort=name&limit=5",
		"/api/v1/tags",
		"/api/v1/sources",
		"/api/v1/events",
		"/api/v1/events/lineage?limit=5",
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+path, nil)
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Errorf("GET %s: not in openapi.yaml: %v", path, err)
			continue
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		reqErr := openapi3filter.ValidateRequest(ctx, in)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if reqErr != nil && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s: the spec rejects the request (%v) but the server answered %d", path, reqErr, resp.StatusCode)
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode,
			Header: resp.Header, Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		out.SetBodyBytes(body)
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			t.Errorf("GET %s: %d answer does not match openapi.yaml: %v\n%s", path, resp.StatusCode, err, short(string(body)))
		}
		covered[route.Operation.OperationID] = true
	}

	// The watch stream's lineage event carries the Lineage schema.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ev := next(t, openWatch(t, wctx, hs.URL, "nodeId="+ds), "lineage", 10*time.Second)
	var v any
	if err := json.NewDecoder(bytes.NewReader([]byte(ev.data))).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if err := doc.Components.Schemas["Lineage"].Value.VisitJSON(v); err != nil {
		t.Errorf("watch lineage event does not match the Lineage schema: %v", err)
	}
	covered["lfWatch"] = true

	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if !covered[op.OperationID] {
				t.Errorf("%s %s (%s) is documented but not exercised by this test", method, path, op.OperationID)
			}
		}
	}
	if !strings.HasPrefix(hs.URL, "http://127.0.0.1:") {
		t.Fatalf("test server on %s", hs.URL)
	}
}
