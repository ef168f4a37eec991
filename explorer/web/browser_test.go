package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/lineageflow/lineageflow/explorer/web"
)

// chromiumPath finds headless Chromium (Debian's `chromium` package):
// LINEAGEFLOW_CHROMIUM, else chromium / chromium-browser / google-chrome on
// PATH. Without one the browser tests skip, or fail under
// LINEAGEFLOW_REQUIRE_STANDINS=1 (CI).
func chromiumPath(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("LINEAGEFLOW_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") == "1" {
		tb.Fatal("no Chromium found (LINEAGEFLOW_REQUIRE_STANDINS=1): apt-get install chromium, or set LINEAGEFLOW_CHROMIUM")
	}
	tb.Skip("no Chromium found: apt-get install chromium, or set LINEAGEFLOW_CHROMIUM")
	return ""
}

// newBrowser starts a headless Chromium of its own (stopped at the end of
// the test) and returns a context for one tab.
func newBrowser(tb testing.TB) context.Context {
	tb.Helper()
	// Not tb.TempDir: Chromium's helpers may still write to the profile as
	// the browser exits, which makes TempDir's own cleanup fail.
	profile, err := os.MkdirTemp("", "lineageflow-chromium-")
	if err != nil {
		tb.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(tb)),
		chromedp.NoSandbox,
		chromedp.WindowSize(1400, 900),
		chromedp.Flag("disable-gpu", true),
		chromedp.UserDataDir(profile),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	tb.Cleanup(func() {
		cancelB()
		cancelA()
		_ = os.RemoveAll(profile)
	})
	if err := chromedp.Run(ctx); err != nil { // starts the browser
		tb.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// uiServer serves the UI and the given API handler on 127.0.0.1:0, the way
// `lineageflow serve` mounts them.
func uiServer(tb testing.TB, api http.Handler) *httptest.Server {
	tb.Helper()
	mux := http.NewServeMux()
	mux.Handle("/api/", api)
	mux.Handle("/", web.Handler())
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv
}

// run runs chromedp actions with a deadline.
func run(tb testing.TB, ctx context.Context, d time.Duration, what string, actions ...chromedp.Action) {
	tb.Helper()
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := chromedp.Run(c, actions...); err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

// waitJS polls a JavaScript condition until it is true or the deadline passes.
func waitJS(tb testing.TB, ctx context.Context, d time.Duration, what, expr string) {
	tb.Helper()
	if os.Getenv("LINEAGEFLOW_WEB_TRACE") != "" {
		start := time.Now()
		defer func() { tb.Logf("%s: %v", what, time.Since(start)) }()
	}
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := chromedp.Run(c, chromedp.Poll(expr, nil, chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		var dump string
		_ = chromedp.Run(ctx, chromedp.Evaluate(`JSON.stringify({url: location.href, list: [...document.querySelectorAll('#nodelist li')].map(l => l.dataset.nodeId), banner: document.getElementById('banner').textContent, errors: (window.__lf||{}).errors})`, &dump))
		tb.Fatalf("%s: %v (page: %s)", what, err, dump)
	}
}

// clickUntil clicks the element sel (by JavaScript, found afresh on every
// try) until done is true: a live update may replace a list item between
// finding a button and clicking it, and such a click is lost.
func clickUntil(tb testing.TB, ctx context.Context, d time.Duration, what, sel, done string) {
	tb.Helper()
	waitJS(tb, ctx, d, what, `(() => { if (`+done+`) return true; const b = document.querySelector(`+jsStr(sel)+`); if (b) b.click(); return false; })()`)
}

// shot writes a PNG of the page to $LINEAGEFLOW_WEB_SHOTS/<name>.png when
// that variable is set (to look at what a test saw).
func shot(tb testing.TB, ctx context.Context, name string) {
	tb.Helper()
	dir := os.Getenv("LINEAGEFLOW_WEB_SHOTS")
	if dir == "" {
		return
	}
	var png []byte
	run(tb, ctx, 10*time.Second, "screenshot", chromedp.CaptureScreenshot(&png))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func jsStr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r > 0x7e:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func cssStr(s string) string { return jsStr(s) }

// visibleNodes is the node ids of the accessible list, in its order.
func visibleNodes(tb testing.TB, ctx context.Context) []string {
	tb.Helper()
	var ids []string
	run(tb, ctx, 5*time.Second, "read node list", chromedp.Evaluate(`[...document.querySelectorAll('#nodelist li')].map(l => l.dataset.nodeId)`, &ids))
	return ids
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type pos struct{ X, Y float64 }

func positions(tb testing.TB, ctx context.Context) map[string]pos {
	tb.Helper()
	var m map[string]pos
	run(tb, ctx, 5*time.Second, "read positions", chromedp.Evaluate(`Object.fromEntries(__lf.cy.nodes().map(n => [n.id(), {X: n.position().x, Y: n.position().y}]))`, &m))
	return m
}

func viewport(tb testing.TB, ctx context.Context) (zoom, px, py float64) {
	tb.Helper()
	var v struct{ Z, X, Y float64 }
	run(tb, ctx, 5*time.Second, "read viewport", chromedp.Evaluate(`({Z: __lf.cy.zoom(), X: __lf.cy.pan().x, Y: __lf.cy.pan().y})`, &v))
	return v.Z, v.X, v.Y
}

// demoEstate: ingest -> raw.orders -> clean -> clean.orders -> agg (failed runs) -> agg.daily.
func demoEstate() *fakeGraph {
	g := newFakeGraph()
	ingest := g.addNode("JOB", "etl", "ingest")
	raw := g.addNode("DATASET", "s3://lake", "raw.orders")
	clean := g.addNode("JOB", "etl", "clean")
	co := g.addNode("DATASET", "s3://lake", "clean.orders")
	agg := g.addNode("JOB", "etl", "agg")
	daily := g.addNode("DATASET", "s3://lake", "agg.daily")
	g.addEdge("OUTPUTS", ingest, raw)
	g.addEdge("INPUT_TO", raw, clean)
	g.addEdge("OUTPUTS", clean, co)
	g.addEdge("INPUT_TO", co, agg)
	g.addEdge("OUTPUTS", agg, daily)
	g.addEdge("DERIVES", raw, co)
	g.addEdge("DERIVES", co, daily)
	n := g.node(agg)
	n.Failed = true
	n.Runs = []map[string]any{
		{"runId": "run-ok", "state": "COMPLETE", "startedAt": 1764000000000, "endedAt": 1764000060000, "durationMs": 60000},
		{"runId": "run-bad", "state": "FAIL", "startedAt": 1763990000000, "endedAt": 1763990001000, "durationMs": 1000, "errorMessage": "boom"},
	}
	n.Props["owners"] = `[{"name":"team:data","type":"TEAM"}]`
	c := g.node(co)
	c.Props["schema"] = `[{"name":"order_id","type":"BIGINT","description":"the order"},{"name":"amount","type":"DECIMAL"}]`
	c.Props["description"] = "Cleaned orders"
	g.columns[co] = map[string]map[string]any{"order_id": {"namespace": "s3://lake", "dataset": "raw.orders", "field": "id"}}
	return g
}

// TestUIAgainstFakeAPI walks the UI in real headless Chromium against a fake
// of the API (exact control of the graph): search, lineage at depth 1,
// expand, details with failed runs, live edge without moving old nodes,
// deep link, dataset-only view, error banner when the graph is down.
func TestUIAgainstFakeAPI(t *testing.T) {
	g := demoEstate()
	srv := uiServer(t, g.api())
	ctx := newBrowser(t)
	const d = 10 * time.Second

	// Search with the keyboard.
	run(t, ctx, d, "open", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`#search-input`, chromedp.ByQuery))
	run(t, ctx, d, "type", chromedp.SendKeys(`#search-input`, "clean.ord", chromedp.ByQuery))
	waitJS(t, ctx, d, "search results", `document.querySelectorAll('#search-results li[role=option][data-node-id]').length === 1`)
	run(t, ctx, d, "enter", chromedp.SendKeys(`#search-input`, "\r", chromedp.ByQuery))
	co := dsID("s3://lake", "clean.orders")
	waitJS(t, ctx, d, "lineage of clean.orders", `__lf.ready && document.querySelector('#nodelist li[data-node-id=`+cssStr(co)+`]') !== null`)

	// Depth 1 up and down: its jobs, not the datasets beyond.
	nodes := visibleNodes(t, ctx)
	for _, want := range []string{co, jobID("etl", "clean"), jobID("etl", "agg")} {
		if !has(nodes, want) {
			t.Errorf("depth 1: %s not shown (%v)", want, nodes)
		}
	}
	if raw := dsID("s3://lake", "raw.orders"); has(nodes, raw) || len(nodes) != 3 {
		t.Errorf("depth 1 shows %v, want exactly clean.orders and its two jobs", nodes)
	}
	var href string
	run(t, ctx, d, "url", chromedp.Location(&href))
	u, _ := url.Parse(href)
	if u.Query().Get("node") != co || u.Query().Get("up") != "1" || u.Query().Get("down") != "1" {
		t.Errorf("URL %s does not hold the state", href)
	}

	// Expand the upstream job by its "N more" button.
	clean := jobID("etl", "clean")
	clickUntil(t, ctx, d, "expand clean", `#nodelist li[data-node-id=`+cssStr(clean)+`] button[data-act=expand]`, `__lf.state().x.length > 0`)
	raw := dsID("s3://lake", "raw.orders")
	waitJS(t, ctx, d, "raw.orders after expanding clean", `document.querySelector('#nodelist li[data-node-id=`+cssStr(raw)+`]') !== null`)

	// Details of the job with a failed run: badge and run list; its failed
	// run is not an edge.
	agg := jobID("etl", "agg")
	run(t, ctx, d, "select agg", chromedp.Click(`#nodelist li[data-node-id=`+cssStr(agg)+`] button.nb`, chromedp.ByQuery))
	waitJS(t, ctx, d, "details of agg", `document.querySelector('#details-title')?.textContent === 'agg' && document.querySelectorAll('#runs tbody tr').length === 2`)
	shot(t, ctx, "fake-job")
	var failedBadge, owner string
	run(t, ctx, d, "read details",
		chromedp.Evaluate(`document.querySelector('#details [data-failed-runs]')?.dataset.failedRuns || ''`, &failedBadge),
		chromedp.Evaluate(`document.querySelector('#details dl').textContent`, &owner))
	if failedBadge != "1" || !strings.Contains(owner, "team:data") {
		t.Errorf("details of agg: failed-runs badge %q, dl %q", failedBadge, owner)
	}
	var upCls, downCls int
	run(t, ctx, d, "highlight", chromedp.Evaluate(`document.querySelectorAll('#nodelist li.upstream').length`, &upCls), chromedp.Evaluate(`document.querySelectorAll('#nodelist li.downstream').length`, &downCls))
	if upCls < 2 {
		t.Errorf("selecting agg highlights %d upstream nodes, want >= 2 (clean.orders, clean, ...)", upCls)
	}
	// Keyboard on the graph: from agg, ArrowLeft selects its input clean.orders.
	run(t, ctx, d, "focus graph", chromedp.Focus(`#cy`, chromedp.ByQuery), chromedp.KeyEvent(kb.ArrowLeft))
	waitJS(t, ctx, d, "ArrowLeft selects the input", `__lf.state().sel === `+jsStr(co))
	run(t, ctx, d, "select clean.orders", chromedp.Click(`#nodelist li[data-node-id=`+cssStr(co)+`] button.nb`, chromedp.ByQuery))
	waitJS(t, ctx, d, "schema table", `[...document.querySelectorAll('#details table[aria-label=Schema] td')].some(td => td.textContent === 'order_id')`)
	waitJS(t, ctx, d, "column lineage", `document.querySelector('#column-lineage tr[data-field=order_id]')?.textContent.includes('raw.orders.id')`)
	shot(t, ctx, "fake-selected")

	// Live: a new job reading clean.orders appears without reload; old nodes
	// keep their place and the viewport is kept.
	waitJS(t, ctx, d, "animation done", `!__lf.cy.animated()`)
	run(t, ctx, d, "zoom", chromedp.Evaluate(`__lf.cy.stop(true, true); __lf.cy.zoom(0.8); __lf.cy.pan({x: 37, y: 21}); true`, nil))
	before := positions(t, ctx)
	z0, px0, py0 := viewport(t, ctx)
	var marker bool
	run(t, ctx, d, "marker", chromedp.Evaluate(`window.__noReload = true`, &marker))
	audit := g.addNode("JOB", "etl", "audit")
	eid := g.addEdge("INPUT_TO", co, audit)
	waitJS(t, ctx, d, "live edge", `document.querySelector('#edgelist li[data-edge-id=`+cssStr(eid)+`]') !== null && __lf.cy.getElementById(`+jsStr(audit)+`).nonempty()`)
	run(t, ctx, d, "no reload", chromedp.Evaluate(`window.__noReload === true`, &marker))
	if !marker {
		t.Error("the page reloaded for a live update")
	}
	after := positions(t, ctx)
	for id, p := range before {
		if q, ok := after[id]; !ok || q != p {
			t.Errorf("live update moved %s from %v to %v", id, p, q)
		}
	}
	if z, px, py := viewport(t, ctx); z != z0 || px != px0 || py != py0 {
		t.Errorf("live update changed the viewport: zoom %v->%v pan (%v,%v)->(%v,%v)", z0, z, px0, py0, px, py)
	}
	var sel string
	run(t, ctx, d, "selection kept", chromedp.Evaluate(`__lf.state().sel`, &sel))
	if sel != co {
		t.Errorf("selection after live update: %q, want %q", sel, co)
	}

	// Deep link: the same URL in a fresh load gives the same view.
	run(t, ctx, d, "url", chromedp.Location(&href))
	run(t, ctx, d, "reload deep link", chromedp.Navigate(href))
	waitJS(t, ctx, d, "deep link restored", `__lf.ready && document.querySelector('#nodelist li[data-node-id=`+cssStr(raw)+`]') !== null && document.querySelector('#nodelist li.selected[data-node-id=`+cssStr(co)+`]') !== null`)

	// Depth control: up 3 from clean.orders reaches ingest (clean, raw.orders, ingest).
	run(t, ctx, d, "up+", chromedp.Click(`#up-inc`, chromedp.ByQuery), chromedp.Click(`#up-inc`, chromedp.ByQuery))
	waitJS(t, ctx, d, "depth up 3", `new URLSearchParams(location.search).get('up') === '3' && document.querySelector('#nodelist li[data-node-id=`+cssStr(jobID("etl", "ingest"))+`]') !== null`)

	// Dataset-only view: no jobs, DERIVES edges.
	run(t, ctx, d, "dataset-only", chromedp.Click(`#ds-only`, chromedp.ByQuery))
	waitJS(t, ctx, d, "dataset-only view", `[...document.querySelectorAll('#nodelist li')].every(l => l.dataset.nodeId.startsWith('dataset:')) && [...document.querySelectorAll('#edgelist li')].length > 0 && [...document.querySelectorAll('#edgelist li')].every(l => l.dataset.type === 'DERIVES')`)
	run(t, ctx, d, "dataset-only off", chromedp.Click(`#ds-only`, chromedp.ByQuery))

	// The graph goes down: a clear banner; back up: the banner goes.
	g.setDown(true)
	waitJS(t, ctx, d, "error banner", `!document.getElementById('banner').hidden && /unreachable/i.test(document.getElementById('banner').textContent)`)
	shot(t, ctx, "fake-down")
	g.setDown(false)
	g.addNode("JOB", "etl", "after-outage")
	g.addEdge("INPUT_TO", co, jobID("etl", "after-outage"))
	waitJS(t, ctx, d, "banner cleared", `document.getElementById('banner').hidden`)

	// Search with several results: the first is pre-highlighted, the first
	// ArrowDown selects it (not the second), the next the second, Enter opens it.
	run(t, ctx, d, "search again", chromedp.Evaluate(`document.getElementById('search-input').value = ''`, nil),
		chromedp.SendKeys(`#search-input`, "orders", chromedp.ByQuery))
	waitJS(t, ctx, d, "two results", `document.querySelectorAll('#search-results li[data-node-id]').length === 2 && document.getElementById('search-results').classList.contains('pre')`)
	run(t, ctx, d, "arrow down", chromedp.KeyEvent(kb.ArrowDown))
	waitJS(t, ctx, d, "first active", `document.getElementById('search-input').getAttribute('aria-activedescendant') === 'sr-0' && document.getElementById('sr-0').getAttribute('aria-selected') === 'true'`)
	run(t, ctx, d, "arrow down again", chromedp.KeyEvent(kb.ArrowDown))
	waitJS(t, ctx, d, "second active", `document.getElementById('search-input').getAttribute('aria-activedescendant') === 'sr-1' && document.getElementById('sr-1').getAttribute('aria-selected') === 'true'`)
	run(t, ctx, d, "enter", chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, d, "raw.orders opened", `new URLSearchParams(location.search).get('node') === `+jsStr(raw)+` && new URLSearchParams(location.search).get('up') === '1' && __lf.ready`)

	var errs []string
	run(t, ctx, d, "errors", chromedp.Evaluate(`__lf.errors`, &errs))
	if len(errs) > 0 {
		t.Errorf("JavaScript errors: %v", errs)
	}
}

// TestUIBannerWhenGraphDownAtStart: a deep link opened while the graph is
// down (the watch answers 503) shows the banner, then the view once it is up.
func TestUIBannerWhenGraphDownAtStart(t *testing.T) {
	g := demoEstate()
	g.setDown(true)
	down := g.api()
	// The real server refuses the stream with 503 when the graph is down.
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.isDown() && r.URL.Path == "/api/lf/v1/watch" {
			writeJSON(w, 503, map[string]any{"code": 503, "message": "graph unreachable", "error": "graph_unreachable"})
			return
		}
		down.ServeHTTP(w, r)
	})
	srv := uiServer(t, api)
	ctx := newBrowser(t)
	co := dsID("s3://lake", "clean.orders")
	run(t, ctx, 10*time.Second, "open deep link", chromedp.Navigate(srv.URL+"/?node="+url.QueryEscape(co)+"&up=1&down=1"))
	waitJS(t, ctx, 10*time.Second, "banner", `!document.getElementById('banner').hidden && document.getElementById('banner').dataset.error === 'graph_unreachable' && document.getElementById('status').textContent === 'Graph unreachable'`)
	g.setDown(false)
	waitJS(t, ctx, 15*time.Second, "view after recovery", `document.getElementById('banner').hidden && document.querySelector('#nodelist li[data-node-id=`+cssStr(co)+`]') !== null && document.getElementById('status').textContent === 'Live'`)
	// A tap on a node with "more" selects and expands it (clean: 1 more upstream).
	run(t, ctx, 10*time.Second, "tap clean", chromedp.Evaluate(`__lf.cy.getElementById(`+jsStr(jobID("etl", "clean"))+`).emit('tap'); true`, nil))
	waitJS(t, ctx, 10*time.Second, "tap expands", `document.querySelector('#nodelist li[data-node-id=`+cssStr(dsID("s3://lake", "raw.orders"))+`]') !== null`)
	// Enter on the focused graph expands the selected node (agg: 1 more downstream).
	agg := jobID("etl", "agg")
	run(t, ctx, 10*time.Second, "select agg", chromedp.Click(`#nodelist li[data-node-id=`+cssStr(agg)+`] button.nb`, chromedp.ByQuery))
	waitJS(t, ctx, 10*time.Second, "agg selected", `__lf.state().sel === `+jsStr(agg))
	run(t, ctx, 10*time.Second, "enter on graph", chromedp.Focus(`#cy`, chromedp.ByQuery), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, 10*time.Second, "enter expands", `document.querySelector('#nodelist li[data-node-id=`+cssStr(dsID("s3://lake", "agg.daily"))+`]') !== null`)
}
