package explorer

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/gremlinproxy"
)

// get fetches base+path and decodes the JSON answer into v (when not nil);
// it returns the status code and the raw body.
func get(t *testing.T, base, path string, v any) (int, []byte) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("GET %s: Content-Type %q, want application/json", short(path), ct)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v in %s", short(path), err, short(string(b)))
		}
	}
	return resp.StatusCode, b
}

func short(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

func q(nodeID string) string { return url.QueryEscape(nodeID) }

func nodesByID(l Lineage) map[string]LineageNode {
	m := map[string]LineageNode{}
	for _, n := range l.Nodes {
		m[n.ID] = n
	}
	return m
}

func TestLineageRoute(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})

	var l Lineage
	if code, b := get(t, hs.URL, "/api/lf/v1/lineage?nodeId="+q(dsNode(fxClean)), &l); code != 200 {
		t.Fatalf("status %d: %s", code, b)
	}
	nodes := nodesByID(l)
	if l.Center != dsNode(fxClean) || len(nodes) != 3 {
		t.Fatalf("depth 1 around clean: center %s nodes %v", l.Center, nodes)
	}
	for _, id := range []string{dsNode(fxClean), jobNode(fxETL), jobNode(fxAgg)} {
		if _, ok := nodes[id]; !ok {
			t.Errorf("depth 1 around clean lacks %s", id)
		}
	}
	if m := nodes[jobNode(fxETL)].More; m.Up != 2 || m.Down != 1 {
		t.Errorf("etl more = %+v, want up 2 (raw, odd) down 1 (long)", m)
	}
	if m := nodes[jobNode(fxAgg)].More; m.Up != 0 || m.Down != 1 {
		t.Errorf("agg more = %+v, want up 0 down 1 (report)", m)
	}
	if len(l.Edges) != 2 {
		t.Errorf("edges %+v, want etl->clean and clean->agg", l.Edges)
	}
	etl := nodes[jobNode(fxETL)]
	if !etl.HasFailedRuns || etl.LastRunState == nil || *etl.LastRunState != "FAIL" {
		t.Errorf("etl run state: failed=%v last=%v, want failed and FAIL", etl.HasFailedRuns, etl.LastRunState)
	}
	if agg := nodes[jobNode(fxAgg)]; agg.HasFailedRuns || agg.LastRunState == nil || *agg.LastRunState != "COMPLETE" {
		t.Errorf("agg run state: %+v", agg)
	}

	// Depth 2 both ways: the whole fixture lineage but the 100 KB dataset
	// (downstream of etl, which is upstream of clean), DERIVES between the
	// datasets found, never the failed run's ghost, never READ/WROTE.
	l = Lineage{}
	get(t, hs.URL, "/api/lf/v1/lineage?nodeId="+q(dsNode(fxClean))+"&up=2&down=2", &l)
	nodes = nodesByID(l)
	for _, id := range []string{dsNode(fxRaw), dsNode(fxOdd), dsNode(fxReport)} {
		if _, ok := nodes[id]; !ok {
			t.Errorf("depth 2 lacks %s", id)
		}
	}
	if _, ok := nodes[dsNode(fxGhost)]; ok {
		t.Errorf("the failed run's WROTE target %s is in the lineage", dsNode(fxGhost))
	}
	types := map[string]int{}
	for _, e := range l.Edges {
		types[e.Type]++
		if e.FirstSeen == nil || e.LastSeen == nil || e.LastRunID == "" {
			t.Errorf("edge %+v lacks its properties", e)
		}
	}
	if types[EdgeDerives] != 2 || types[EdgeInputTo] != 3 || types[EdgeOutputs] != 2 || len(types) != 3 {
		t.Errorf("edge types %v, want 2 DERIVES, 3 INPUT_TO, 2 OUTPUTS and nothing else", types)
	}
	if l.Truncated {
		t.Error("depth 2 of a 9-node graph is truncated")
	}

	// The node cap.
	var capped Lineage
	get(t, hs.URL, "/api/lf/v1/lineage?nodeId="+q(dsNode(fxClean))+"&up=2&down=2&maxNodes=2", &capped)
	if len(capped.Nodes) != 2 || !capped.Truncated {
		t.Errorf("maxNodes=2: %d nodes, truncated %v", len(capped.Nodes), capped.Truncated)
	}

	// The version is stable, and changes with the subgraph.
	var again Lineage
	get(t, hs.URL, "/api/lf/v1/lineage?nodeId="+q(dsNode(fxClean))+"&up=2&down=2", &again)
	if again.Version != l.Version {
		t.Errorf("version changed without a graph change: %s then %s", l.Version, again.Version)
	}
	writeEdge(t, ep, lineage.NewEdge(lineage.EdgeInputTo, lineage.DatasetID(fxReport), lineage.JobID(fxETL), 9000, 9000, "run-new"))
	get(t, hs.URL, "/api/lf/v1/lineage?nodeId="+q(dsNode(fxClean))+"&up=2&down=2", &again)
	if again.Version == l.Version {
		t.Error("version did not change after a new edge in the subgraph")
	}
}

func TestNodeAndSearchRoutes(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})

	var n NodeDetails
	if code, b := get(t, hs.URL, "/api/lf/v1/node?nodeId="+q(jobNode(fxETL)), &n); code != 200 {
		t.Fatalf("status %d: %s", code, b)
	}
	if len(n.Runs) != 2 || n.Runs[0].RunID != fxRunFail || n.Runs[0].State != "FAIL" ||
		n.Runs[0].ErrorMessage == nil || *n.Runs[0].ErrorMessage != "boom" || n.Runs[1].RunID != fxRunOK {
		t.Errorf("etl runs %+v, want the failed run first, then the complete one", n.Runs)
	}
	if len(n.Inputs) != 2 || len(n.Outputs) != 2 {
		t.Errorf("etl inputs %v outputs %d", n.Inputs, len(n.Outputs))
	}
	if n.FirstSeen == nil || *n.FirstSeen != 1000 || n.LastSeen == nil || *n.LastSeen != 4000 {
		t.Errorf("etl first/last seen %v %v, want 1000 and 4000", n.FirstSeen, n.LastSeen)
	}

	// By alias: lands on the dataset, lists the alias.
	n = NodeDetails{}
	get(t, hs.URL, "/api/lf/v1/node?nodeId="+q("dataset:warehouse:clean_v"), &n)
	if n.ID != dsNode(fxClean) || len(n.Aliases) != 1 || n.Aliases[0].Name != "clean_v" || n.Aliases[0].Type != "VIEW" {
		t.Errorf("node by alias: %+v", n)
	}
	if _, ok := n.Properties["description_ts"]; ok || n.Properties["description"] != "cleaned rows" {
		t.Errorf("clean properties %v", n.Properties)
	}

	// Marquez's dataset route by alias lands on the dataset too.
	var md MQDataset
	if code, b := get(t, hs.URL, "/api/v1/namespaces/warehouse/datasets/clean_v", &md); code != 200 || md.Name != "clean" || md.Namespace != fxNS {
		t.Errorf("Marquez dataset by alias: %d %s", code, short(string(b)))
	}

	type res struct {
		Results []SearchResult `json:"results"`
	}
	var r res
	get(t, hs.URL, "/api/lf/v1/search?q=CLEAN_V", &r)
	if len(r.Results) != 1 || r.Results[0].ID != dsNode(fxClean) || r.Results[0].MatchedAlias == nil || r.Results[0].MatchedAlias.Name != "clean_v" {
		t.Errorf("search by alias: %+v", r.Results)
	}
	r = res{}
	get(t, hs.URL, "/api/lf/v1/search?q="+url.QueryEscape("é 😀"), &r)
	if len(r.Results) != 1 || r.Results[0].ID != dsNode(fxOdd) {
		t.Errorf("search unicode: %+v", r.Results)
	}
	r = res{}
	get(t, hs.URL, "/api/lf/v1/search?q=a&limit=2", &r)
	if len(r.Results) != 2 {
		t.Errorf("limit=2 gave %d results", len(r.Results))
	}
}

func TestColumnLineage(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	type graph struct {
		Graph []MQFieldNode `json:"graph"`
	}
	ids := func(g graph) map[string]MQFieldNode {
		m := map[string]MQFieldNode{}
		for _, n := range g.Graph {
			m[n.ID] = n
		}
		return m
	}
	var g graph
	if code, b := get(t, hs.URL, "/api/v1/column-lineage?nodeId="+q("datasetField:ns1:clean:id"), &g); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	m := ids(g)
	clean, raw := m["datasetField:ns1:clean:id"], m["datasetField:ns1:raw:id"]
	if len(m) != 2 || len(clean.Data.InputFields) != 1 || clean.Data.InputFields[0].Dataset != "raw" ||
		clean.Data.TransformationType == nil || *clean.Data.TransformationType != "IDENTITY" || raw.ID == "" {
		t.Errorf("upstream column lineage of clean.id: %+v", g.Graph)
	}
	g = graph{}
	get(t, hs.URL, "/api/v1/column-lineage?nodeId="+q("datasetField:ns1:clean:id")+"&withDownstream=true", &g)
	if m := ids(g); len(m) != 3 || len(m["datasetField:ns1:report:total"].InEdges) != 1 {
		t.Errorf("column lineage with downstream: %+v", g.Graph)
	}
	g = graph{}
	get(t, hs.URL, "/api/v1/column-lineage?nodeId="+q("dataset:ns1:clean")+"&depth=0", &g)
	if m := ids(g); len(m) != 1 {
		t.Errorf("fields of clean at depth 0: %+v", g.Graph)
	}
	var e errorBody
	if code, _ := get(t, hs.URL, "/api/v1/column-lineage?nodeId="+q("datasetField:ns1:clean:nope"), &e); code != 404 {
		t.Errorf("unknown field: %d", code)
	}
}

func TestBadInput(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	var e errorBody
	for path, want := range map[string]int{
		"/api/lf/v1/lineage?nodeId=" + q("dataset:ns1:nope"):             404,
		"/api/lf/v1/node?nodeId=" + q("job:ns1:raw"):                     404, // a dataset, not a job
		"/api/v1/lineage?nodeId=" + q("job:nope:nope"):                   404,
		"/api/v1/namespaces/ns1/datasets/nope":                           404,
		"/api/v1/namespaces/nope":                                        404,
		"/api/v1/jobs/runs/nope":                                         404,
		"/api/lf/v1/lineage":                                             400,
		"/api/lf/v1/lineage?nodeId=raw":                                  400,
		"/api/lf/v1/lineage?nodeId=" + q("dataset:"):                     400,
		"/api/lf/v1/lineage?nodeId=" + q("dataset:ns1"):                  400,
		"/api/lf/v1/lineage?nodeId=" + q("dataset:ns1:"):                 400,
		"/api/lf/v1/lineage?nodeId=" + q("table:ns1:raw"):                400,
		"/api/lf/v1/lineage?nodeId=" + q(dsNode(fxRaw)) + "&up=-1":       400,
		"/api/lf/v1/lineage?nodeId=" + q(dsNode(fxRaw)) + "&down=21":     400,
		"/api/lf/v1/lineage?nodeId=" + q(dsNode(fxRaw)) + "&up=x":        400,
		"/api/lf/v1/lineage?nodeId=" + q(dsNode(fxRaw)) + "&maxNodes=0":  400,
		"/api/lf/v1/watch?nodeId=" + q(dsNode(fxRaw)) + "&maxNodes=9999": 400,
		"/api/lf/v1/watch?nodeId=" + q("dataset:ns1:nope"):               404,
		"/api/v1/lineage?nodeId=" + q(dsNode(fxRaw)) + "&depth=99":       400,
		"/api/lf/v1/search":                                              400,
		"/api/v1/search?q=a&filter=table":                                400,
		"/api/lf/v1/nope":                                                404,
	} {
		e = errorBody{}
		code, b := get(t, hs.URL, path, &e)
		if code != want || e.Code != want || e.Message == "" {
			t.Errorf("GET %s: %d %s, want %d with a JSON error", short(path), code, short(string(b)), want)
		}
	}

	// Names with ':', '/', quotes, Unicode and 100 KB round-trip,
	// URL-encoded, to the same vertex on every route.
	for _, d := range []lineage.Dataset{fxOdd, fxLong} {
		var n NodeDetails
		if code, b := get(t, hs.URL, "/api/lf/v1/node?nodeId="+q(dsNode(d)), &n); code != 200 || n.Name != d.Name || n.Namespace != d.Namespace {
			t.Errorf("node %s: %d %s", short(dsNode(d)), code, short(string(b)))
		}
		var l Lineage
		if code, _ := get(t, hs.URL, "/api/lf/v1/lineage?nodeId="+q(dsNode(d)), &l); code != 200 || l.Center != dsNode(d) {
			t.Errorf("lineage %s: %d center %s", short(dsNode(d)), code, short(l.Center))
		}
		var md MQDataset
		path := "/api/v1/namespaces/" + url.PathEscape(d.Namespace) + "/datasets/" + url.PathEscape(d.Name)
		if code, b := get(t, hs.URL, path, &md); code != 200 || md.Name != d.Name || md.Namespace != d.Namespace {
			t.Errorf("GET %s: %d %s", short(path), code, short(string(b)))
		}
	}
}

func TestGraphDown(t *testing.T) {
	if raceEnabled {
		t.Skip("gremlin-go v3.7.4 races on connection state after a drop; run without -race")
	}
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	u, err := url.Parse(ep)
	if err != nil {
		t.Fatal(err)
	}
	px, err := gremlinproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close) // after the server's cleanup: close our side first
	_, hs := newTestServer(t, px.URL(), Config{RequestTimeout: 2 * time.Second})
	var h map[string]string
	if code, _ := get(t, hs.URL, "/api/lf/v1/health", &h); code != 200 || h["graph"] != "ok" {
		t.Fatalf("health before the cut: %d %v", code, h)
	}
	px.Refuse(true)
	px.Drop()
	for _, path := range []string{
		"/api/lf/v1/lineage?nodeId=" + q(dsNode(fxClean)),
		"/api/lf/v1/node?nodeId=" + q(dsNode(fxClean)),
		"/api/v1/namespaces/ns1/jobs/etl",
	} {
		var e errorBody
		code, b := get(t, hs.URL, path, &e)
		if code != 503 || e.Code != 503 || e.Error != ClassUnreachable {
			t.Errorf("GET %s with the graph down: %d %s, want 503 %s", path, code, b, ClassUnreachable)
		}
		if strings.Contains(string(b), "127.0.0.1") || strings.Contains(string(b), px.Addr()) {
			t.Errorf("error answer names a host: %s", b)
		}
	}
	h = nil
	if code, _ := get(t, hs.URL, "/api/lf/v1/health", &h); code != 503 || h["error"] != ClassUnreachable {
		t.Errorf("health with the graph down: %d %v", code, h)
	}
	// Back up: answers again without a restart.
	px.Refuse(false)
	waitLineage(t, hs.URL)

	// A stalled graph: 503 graph_timeout after RequestTimeout, then back.
	px.Stall(true)
	var e errorBody
	if code, b := get(t, hs.URL, "/api/lf/v1/node?nodeId="+q(dsNode(fxClean)), &e); code != 503 || e.Error != ClassTimeout {
		t.Errorf("stalled graph: %d %s, want 503 %s", code, b, ClassTimeout)
	}
	px.Stall(false)
	waitLineage(t, hs.URL)

	// A request on a connection the server dropped unnoticed gets no
	// answer either (seen under load: gremlin-go wrote it to a dead
	// socket). Held open here with Stall, and new connections refused:
	// the read times out and is told apart from a slow graph by the dial
	// that follows, so it is graph_unreachable.
	px.Stall(true)
	px.Refuse(true)
	e = errorBody{}
	if code, b := get(t, hs.URL, "/api/lf/v1/node?nodeId="+q(dsNode(fxClean)), &e); code != 503 || e.Error != ClassUnreachable {
		t.Errorf("no answer and no new connection: %d %s, want 503 %s", code, b, ClassUnreachable)
	}
	px.Refuse(false)
	px.Stall(false)
	waitLineage(t, hs.URL)
}

// waitLineage polls until the lineage of clean answers again.
func waitLineage(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var l Lineage
		code, _ := get(t, base, "/api/lf/v1/lineage?nodeId="+q(dsNode(fxClean)), &l)
		if code == 200 && len(l.Nodes) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 200 within 20s of the graph coming back (last %d)", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMarquezRunEngineAndQueryFacets: a run's processing_engine and
// externalQuery facets, kept as Run vertex properties, come back as
// OpenLineage run facets in Marquez's run objects (by id, in a job's
// runs, the facets route) and in the explorer's run details; a run
// without them has neither.
func TestMarquezRunEngineAndQueryFacets(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	want := `{"externalQuery":{"externalQueryId":"job_42","source":"bigquery"},` +
		`"processing_engine":{"name":"spark","openlineageAdapterVersion":"1.40.0","version":"3.5.1"}}`
	pick := func(f map[string]json.RawMessage) string {
		out := map[string]json.RawMessage{}
		for _, k := range []string{"processing_engine", "externalQuery"} {
			if v, ok := f[k]; ok {
				out[k] = v
			}
		}
		b, _ := json.Marshal(out)
		return string(b)
	}
	var run struct {
		Facets map[string]json.RawMessage `json:"facets"`
	}
	if code, b := get(t, hs.URL, "/api/v1/jobs/runs/"+fxRunFail, &run); code != 200 || pick(run.Facets) != want {
		t.Errorf("run by id: %d %s", code, short(string(b)))
	}
	run.Facets = nil
	if code, b := get(t, hs.URL, "/api/v1/jobs/runs/"+fxRunFail+"/facets", &run); code != 200 || pick(run.Facets) != want {
		t.Errorf("run facets route: %d %s", code, short(string(b)))
	}
	var runs struct {
		Runs []struct {
			ID     string                     `json:"id"`
			Facets map[string]json.RawMessage `json:"facets"`
		} `json:"runs"`
	}
	if code, b := get(t, hs.URL, "/api/v1/namespaces/"+fxNS+"/jobs/etl/runs", &runs); code != 200 || len(runs.Runs) != 2 {
		t.Fatalf("job runs: %d %s", code, short(string(b)))
	}
	for _, r := range runs.Runs {
		if got := pick(r.Facets); (r.ID == fxRunFail) != (got == want) || (r.ID != fxRunFail && got != "{}") {
			t.Errorf("job runs: run %s facets %s", r.ID, got)
		}
	}
	var n NodeDetails
	if code, b := get(t, hs.URL, "/api/lf/v1/node?nodeId="+q(jobNode(fxETL)), &n); code != 200 || len(n.Runs) != 2 {
		t.Fatalf("node: %d %s", code, short(string(b)))
	}
	s := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	r := n.Runs[0]
	if r.RunID != fxRunFail || s(r.ProcessingEngine) != "spark" || s(r.ProcessingEngineVersion) != "3.5.1" ||
		s(r.OpenlineageAdapterVersion) != "1.40.0" || s(r.ExternalQueryID) != "job_42" || s(r.ExternalQuerySource) != "bigquery" {
		t.Errorf("explorer run details %+v", r)
	}
	if r := n.Runs[1]; r.ProcessingEngine != nil || r.ExternalQueryID != nil {
		t.Errorf("run without the facets %+v", r)
	}
}
