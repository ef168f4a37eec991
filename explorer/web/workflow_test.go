package web_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
	cdppage "github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/lineageflow/lineageflow/explorer"
	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// wfEstate is the graph of the workflow tests: an S3 input (full URI
// search), a Glue table (db.table search), two jobs in a namespace of their
// own, a hub job with 40 outputs, an edge first seen two days ago (as of),
// an edge last seen 400 days ago (stale), column lineage over two hops.
type wfEstate struct {
	ns                      string
	in, glue, clean, report lineage.Dataset
	legacy                  lineage.Dataset
	load, rep, hub          lineage.Job
	hubOuts                 []lineage.Dataset
	now                     int64
}

const day = int64(24 * time.Hour / time.Millisecond)

func newWfEstate(t *testing.T, ep string) *wfEstate {
	t.Helper()
	if err := graph.Drop(ep); err != nil { // the landing page lists every namespace
		t.Fatal(err)
	}
	sfx := strconv.FormatInt(time.Now().UnixNano()%1e8, 36)
	e := &wfEstate{ns: "wf-" + sfx, now: time.Now().UnixMilli()}
	e.in = lineage.Dataset{Namespace: "s3://wf-bucket-" + sfx, Name: "sample_data/input_data.parquet"}
	e.glue = lineage.Dataset{Namespace: "arn:aws:glue:us-east-1:123456789012", Name: "table/wf_db_" + sfx + "/wf_table"}
	e.clean = lineage.Dataset{Namespace: e.ns, Name: "orders_clean"}
	e.report = lineage.Dataset{Namespace: e.ns, Name: "orders_report"}
	e.legacy = lineage.Dataset{Namespace: e.ns, Name: "legacy_feed"}
	e.load = lineage.Job{Namespace: e.ns, Name: "load_orders"}
	e.rep = lineage.Job{Namespace: e.ns, Name: "report_orders"}
	e.hub = lineage.Job{Namespace: e.ns, Name: "wide_join"}
	D, J := lineage.DatasetID, lineage.JobID
	var b lineage.Batch
	b.Key = "wf-" + sfx
	for _, d := range []lineage.Dataset{e.in, e.glue, e.clean, e.report, e.legacy} {
		b.Vertices = append(b.Vertices, lineage.DatasetVertex(d))
	}
	for _, j := range []lineage.Job{e.load, e.rep, e.hub} {
		b.Vertices = append(b.Vertices, lineage.JobVertex(j))
	}
	edge := func(label, o, i string, first, last int64) {
		b.Edges = append(b.Edges, lineage.NewEdge(label, o, i, first, last, "run-"+sfx))
	}
	now := e.now
	edge(lineage.EdgeInputTo, D(e.in), J(e.load), now-10*day, now-time.Hour.Milliseconds())
	edge(lineage.EdgeInputTo, D(e.glue), J(e.load), now-10*day, now-time.Hour.Milliseconds())
	edge(lineage.EdgeOutputs, J(e.load), D(e.clean), now-10*day, now-time.Hour.Milliseconds())
	edge(lineage.EdgeInputTo, D(e.clean), J(e.rep), now-2*day, now-time.Hour.Milliseconds())
	edge(lineage.EdgeOutputs, J(e.rep), D(e.report), now-2*day, now-time.Hour.Milliseconds())
	edge(lineage.EdgeInputTo, D(e.legacy), J(e.load), now-500*day, now-400*day)
	edge(lineage.EdgeInputTo, D(e.clean), J(e.hub), now-10*day, now-time.Hour.Milliseconds())
	for i := range 40 {
		d := lineage.Dataset{Namespace: e.ns, Name: fmt.Sprintf("hub_out_%02d", i)}
		e.hubOuts = append(e.hubOuts, d)
		b.Vertices = append(b.Vertices, lineage.DatasetVertex(d))
		edge(lineage.EdgeOutputs, J(e.hub), D(d), now-10*day, now-time.Hour.Milliseconds())
	}
	w, err := sink.New(sink.Config{Endpoint: ep, Writers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.WriteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	// Column lineage as the model writes it: in.a -> clean.b (IDENTITY),
	// clean.b and clean.x -> report.c (AGGREGATION from b, FILTER from x).
	g, closeFn, err := graph.Connect(ep)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	T := gremlingo.T
	field := func(d lineage.Dataset, f string) string {
		id := "field:" + D(d) + "#" + f
		if _, err := g.MergeV(map[any]any{T.Id: id, T.Label: "DatasetField"}).Property("namespace", d.Namespace).
			Property("name", d.Name).Property("field", f).ToList(); err != nil {
			t.Fatal(err)
		}
		if _, err := g.MergeE(map[any]any{T.Label: "FIELD_OF", gremlingo.Direction.Out: id, gremlingo.Direction.In: D(d)}).ToList(); err != nil {
			t.Fatal(err)
		}
		return id
	}
	col := func(o, i, tt string) {
		if _, err := g.MergeE(map[any]any{T.Label: "COLUMN_DERIVES", gremlingo.Direction.Out: o, gremlingo.Direction.In: i}).
			Property("transformationType", tt).Property("transformationDescription", strings.ToLower(tt)).ToList(); err != nil {
			t.Fatal(err)
		}
	}
	a, bb, x, c := field(e.in, "a"), field(e.clean, "b"), field(e.clean, "x"), field(e.report, "c")
	col(a, bb, "DIRECT/IDENTITY")
	col(bb, c, "DIRECT/AGGREGATION")
	col(x, c, "INDIRECT/FILTER")
	return e
}

// failRun writes a failed Run of job j as the model does (its job a
// property, no edge).
func failRun(t *testing.T, ep string, j lineage.Job, runID, msg string, at int64) {
	t.Helper()
	g, closeFn, err := graph.Connect(ep)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	T := gremlingo.T
	if _, err := g.MergeV(map[any]any{T.Id: runVertexID(runID), T.Label: "Run"}).Property("runId", runID).
		Property("jobNamespace", j.Namespace).Property("jobName", j.Name).Property("job", lineage.JobID(j)).Property("state", "FAIL").
		Property("startedAt", at-60000).Property("endedAt", at).Property("durationMs", int64(60000)).
		Property("updatedAt", at).Property("errorMessage", msg).ToList(); err != nil {
		t.Fatal(err)
	}
}

// TestWorkflows walks every "Done when" workflow of the explorer's second
// version in headless Chromium on the real server and the Gremlin
// stand-in: land, browse, open; search by full URI, namespace and Glue
// db.table; a hub past its cap; as of a date; stale edges; impact with
// CSV; a field's lineage over two hops; a live FAIL in the open details.
// LINEAGEFLOW_WEB_SHOTS=dir keeps a screenshot of each.
func TestWorkflows(t *testing.T) {
	ep := testenv.Gremlin(t)
	e := newWfEstate(t, ep)
	failRun(t, ep, e.rep, "wf-fail-old-"+e.ns, "java.lang.OutOfMemoryError: Java heap space while aggregating orders_report", e.now-3*time.Hour.Milliseconds())
	srv := explorerServer(t, ep, explorer.Config{MaxFanOut: 30, StaleAfter: 30 * 24 * time.Hour})
	ctx := newBrowser(t)
	const d = 20 * time.Second
	var t0 = t // the running subtest
	// open starts loading a page and polls (through the navigation, whose
	// lost execution contexts are errors to retry) until it is the new one:
	// chromedp's Navigate sometimes waits in vain for the load event here.
	var open func(path string)
	openAt := func(base, path string) {
		t0.Helper()
		want := base + path
		if os.Getenv("LINEAGEFLOW_WEB_TRACE") != "" {
			start := time.Now()
			defer func() { t0.Logf("open %s: %v", path, time.Since(start)) }()
		}
		_ = chromedp.Run(ctx, chromedp.ActionFunc(func(c context.Context) error {
			_, _, _, _, err := cdppage.Navigate(want).Do(c)
			return err
		}))
		deadline := time.Now().Add(d)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var ok bool
			c, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := chromedp.Run(c, chromedp.Evaluate(`location.href === `+jsStr(want)+` && document.readyState === 'complete' && window.__lf !== undefined`, &ok))
			cancel()
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) {
				t0.Fatalf("open %s: not loaded (%v)", path, err)
			}
			<-tick.C
		}
	}
	open = func(path string) { t0.Helper(); openAt(srv.URL, path) }
	inList := func(id string) string {
		return `document.querySelector('#nodelist li[data-node-id=` + cssStr(id) + `]') !== null`
	}
	search := func(t *testing.T, q string) {
		t.Helper()
		t0 = t
		open("/")
		run(t, ctx, d, "type "+q, chromedp.WaitVisible(`#search-input`, chromedp.ByQuery), chromedp.SendKeys(`#search-input`, q, chromedp.ByQuery))
	}

	t.Run("land, browse a namespace, open a job", func(t *testing.T) {
		t0 = t
		open("/")
		waitJS(t, ctx, d, "landing", `!document.getElementById('landing').hidden && document.querySelector('#landing-namespaces [data-ns=`+cssStr(e.ns)+`]') !== null`)
		waitJS(t, ctx, d, "recently failed", `document.querySelector('#landing-failed li[data-node-id=`+cssStr(nodeOfJob(e.rep))+`]')?.textContent.includes('OutOfMemoryError') === true`)
		waitJS(t, ctx, d, "recently changed", `document.querySelectorAll('#landing-changed li[data-node-id]').length > 0`)
		shot(t, ctx, "wf-landing")
		run(t, ctx, d, "browse", chromedp.Click(`#landing-namespaces [data-ns=`+cssStr(e.ns)+`]`, chromedp.ByQuery))
		waitJS(t, ctx, d, "namespace page", `new URLSearchParams(location.search).get('ns') === `+jsStr(e.ns)+` && document.getElementById('browse-title')?.textContent === `+jsStr(e.ns)+` && /page 1 of 1 \(46\)/.test(document.getElementById('browse-page').textContent)`)
		run(t, ctx, d, "sort", chromedp.SetValue(`#browse-sort`, "type", chromedp.ByQuery), chromedp.Evaluate(`document.getElementById('browse-sort').dispatchEvent(new Event('change'))`, nil))
		waitJS(t, ctx, d, "jobs after datasets", `new URLSearchParams(location.search).get('sort') === 'type' && document.querySelector('#browse-list li:last-child')?.dataset.nodeId?.startsWith('job:') === true`)
		shot(t, ctx, "wf-browse")
		// The page is a deep link: reload it.
		run(t, ctx, d, "reload", chromedp.Reload())
		waitJS(t, ctx, d, "same page after reload", `document.querySelector('#browse-list li[data-node-id=`+cssStr(nodeOfJob(e.load))+`]') !== null`)
		run(t, ctx, d, "open job", chromedp.Click(`#browse-list li[data-node-id=`+cssStr(nodeOfJob(e.load))+`] button`, chromedp.ByQuery))
		waitJS(t, ctx, d, "job lineage", `new URLSearchParams(location.search).get('node') === `+jsStr(nodeOfJob(e.load))+` && __lf.ready && `+inList(nodeOf(e.clean))+` && document.getElementById('landing').hidden`)
	})

	for _, c := range []struct{ name, q, want, matched string }{
		{"search by full URI", e.in.Namespace + "/" + e.in.Name, nodeOf(e.in), "full URI"},
		{"search by namespace", e.ns, "", "namespace"},
		{"search by Glue db.table", strings.TrimPrefix(strings.ReplaceAll(e.glue.Name, "/", "."), "table."), nodeOf(e.glue), "db.table"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t0 = t
			search(t, c.q)
			first := `document.querySelector('#search-results li[data-node-id]')`
			cond := first + `?.querySelector('.matched')?.textContent === ` + jsStr(c.matched)
			if c.want != "" {
				cond += ` && ` + first + `.dataset.nodeId === ` + jsStr(c.want)
			} else {
				cond += ` && ` + first + `.dataset.nodeId.includes(` + jsStr(":"+e.ns+":") + `)`
			}
			waitJS(t, ctx, d, "result", cond)
			shot(t, ctx, "wf-"+strings.ReplaceAll(c.name, " ", "-"))
			var id string
			// A result opens by its exact id (ref), not by its readable one.
			run(t, ctx, d, "first id", chromedp.Evaluate(first+`.dataset.ref || `+first+`.dataset.nodeId`, &id))
			run(t, ctx, d, "enter", chromedp.KeyEvent(kb.Enter))
			waitJS(t, ctx, d, "opened", `new URLSearchParams(location.search).get('node') === `+jsStr(id)+` && __lf.ready`)
		})
	}

	t.Run("open a hub past its cap and add a hidden neighbour", func(t *testing.T) {
		t0 = t
		hub := nodeOfJob(e.hub)
		open("/?node=" + url.QueryEscape(hub) + "&up=1&down=1&sel=" + url.QueryEscape(hub))
		waitJS(t, ctx, d, "hub drawn with 10 more", `__lf.ready && document.querySelectorAll('#nodelist li').length === 32 && document.querySelector('#details [data-act=more-down]')?.textContent.startsWith('10 more downstream') === true`)
		run(t, ctx, d, "open more", chromedp.Click(`#details [data-act=more-down]`, chromedp.ByQuery))
		waitJS(t, ctx, d, "paged list", `document.getElementById('hub-dialog').open && /^40 neighbours · page 1 of 2/.test(document.getElementById('hub-info').textContent) && document.querySelectorAll('#hub-list li').length === 25`)
		run(t, ctx, d, "filter", chromedp.SendKeys(`#hub-q`, "hub_out_3", chromedp.ByQuery))
		waitJS(t, ctx, d, "filtered", `/^10 neighbours/.test(document.getElementById('hub-info').textContent) && document.querySelectorAll('#hub-list li').length === 10`)
		var hidden string
		run(t, ctx, d, "a hidden one", chromedp.Evaluate(`[...document.querySelectorAll('#hub-list li')].find(li => !li.querySelector('button').disabled)?.dataset.nodeId || ''`, &hidden))
		if hidden == "" {
			t.Fatal("every hub_out_3x neighbour is already drawn: none to add")
		}
		shot(t, ctx, "wf-hub-list")
		run(t, ctx, d, "add", chromedp.Click(`#hub-list li[data-node-id=`+cssStr(hidden)+`] button`, chromedp.ByQuery))
		run(t, ctx, d, "close", chromedp.Click(`#hub-close`, chromedp.ByQuery))
		waitJS(t, ctx, d, "added to the view", inList(hidden)+` && new URLSearchParams(location.search).getAll('x').includes(`+jsStr(hidden)+`)`)
		shot(t, ctx, "wf-hub-added")
		// The node cap is a control: 20 nodes leave more of the hub hidden,
		// as many as the API says; the URL keeps it and a reload restores it.
		var l explorer.Lineage
		resp, err := http.Get(srv.URL + "/api/lf/v1/lineage?nodeId=" + url.QueryEscape(hub) + "&up=1&down=1&maxNodes=20")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&l)
		resp.Body.Close()
		if err != nil || len(l.Nodes) == 0 || l.Nodes[0].ID != hub || l.Nodes[0].More.Down <= 10 {
			t.Fatalf("lineage with maxNodes=20: %v %+v", err, l.Nodes)
		}
		more := strconv.FormatInt(l.Nodes[0].More.Down, 10) + " more downstream"
		open("/?node=" + url.QueryEscape(hub) + "&up=1&down=1&sel=" + url.QueryEscape(hub))
		waitJS(t, ctx, d, "10 more again", `__lf.ready && document.querySelector('#details [data-act=more-down]')?.textContent.startsWith('10 more downstream') === true && document.getElementById('max-nodes').value === ''`)
		run(t, ctx, d, "max 20", chromedp.SetValue(`#max-nodes`, "20", chromedp.ByQuery), chromedp.Evaluate(`document.getElementById('max-nodes').dispatchEvent(new Event('change'))`, nil))
		cond := `__lf.ready && new URLSearchParams(location.search).get('max') === '20' && document.querySelectorAll('#nodelist li').length === 20 && document.querySelector('#details [data-act=more-down]')?.textContent.startsWith(` + jsStr(more) + `) === true`
		waitJS(t, ctx, d, more, cond)
		shot(t, ctx, "wf-hub-max")
		run(t, ctx, d, "reload", chromedp.Reload())
		waitJS(t, ctx, d, "restored by the deep link", cond+` && document.getElementById('max-nodes').value === '20'`)
	})

	t.Run("as of a date before an edge's first sight, then now", func(t *testing.T) {
		t0 = t
		clean := nodeOf(e.clean)
		open("/?node=" + url.QueryEscape(clean) + "&up=1&down=1")
		waitJS(t, ctx, d, "report job drawn", `__lf.ready && `+inList(nodeOfJob(e.rep)))
		before := time.UnixMilli(e.now - 5*day).UTC().Format("2006-01-02")
		run(t, ctx, d, "as of", chromedp.Evaluate(`(() => { const i = document.getElementById('asof'); i.value = `+jsStr(before)+`; i.dispatchEvent(new Event('change')); })()`, nil))
		waitJS(t, ctx, d, "gone as of then", `new URLSearchParams(location.search).get('asOf') === `+jsStr(before)+` && __lf.ready && !(`+inList(nodeOfJob(e.rep))+`) && `+inList(nodeOfJob(e.load))+` && /hidden/.test(document.getElementById('hidden-count').textContent)`)
		shot(t, ctx, "wf-as-of")
		run(t, ctx, d, "now", chromedp.Click(`#asof-now`, chromedp.ByQuery))
		waitJS(t, ctx, d, "back now", `!new URLSearchParams(location.search).has('asOf') && __lf.ready && `+inList(nodeOfJob(e.rep)))
		// The edge that came back is clickable: its first and last seen.
		edgeSel := `edge[source = ` + jsStr(nodeOf(e.clean)) + `][target = ` + jsStr(nodeOfJob(e.rep)) + `]`
		run(t, ctx, d, "tap edge", chromedp.Evaluate(`__lf.cy.$(`+jsStr(edgeSel)+`).emit('tap').length`, nil))
		first := time.UnixMilli(e.now - 2*day).UTC().Format("2006-01-02 15:04:05Z")
		waitJS(t, ctx, d, "edge details", `document.querySelector('#edge-details')?.textContent.includes(`+jsStr(first)+`) === true`)
	})

	t.Run("hide stale edges and see the count", func(t *testing.T) {
		t0 = t
		load := nodeOfJob(e.load)
		open("/?node=" + url.QueryEscape(load) + "&up=1&down=1")
		waitJS(t, ctx, d, "stale hidden, counted", `__lf.ready && `+inList(nodeOf(e.in))+` && !(`+inList(nodeOf(e.legacy))+`) && document.getElementById('hidden-count').textContent === '1 stale edges hidden'`)
		shot(t, ctx, "wf-stale-hidden")
		run(t, ctx, d, "show stale", chromedp.Click(`#show-stale`, chromedp.ByQuery))
		waitJS(t, ctx, d, "stale shown", `new URLSearchParams(location.search).get('stale') === 'show' && `+inList(nodeOf(e.legacy))+` && document.getElementById('hidden-count').textContent === ''`)
		run(t, ctx, d, "hide again", chromedp.Click(`#show-stale`, chromedp.ByQuery))
		waitJS(t, ctx, d, "stale hidden again", `!(`+inList(nodeOf(e.legacy))+`)`)
	})

	t.Run("impact filtered to datasets, CSV against the API", func(t *testing.T) {
		t0 = t
		load := nodeOfJob(e.load)
		open("/?node=" + url.QueryEscape(load) + "&up=1&down=1&sel=" + url.QueryEscape(load))
		waitJS(t, ctx, d, "details", `document.querySelector('#details [data-act=impact]') !== null`)
		run(t, ctx, d, "impact", chromedp.Click(`#details [data-act=impact]`, chromedp.ByQuery))
		waitJS(t, ctx, d, "impact list", `!document.getElementById('impact').hidden && document.querySelectorAll('#impact-list tbody tr').length === 44`)
		run(t, ctx, d, "datasets", chromedp.SetValue(`#impact-type`, "DATASET", chromedp.ByQuery), chromedp.Evaluate(`document.getElementById('impact-type').dispatchEvent(new Event('change'))`, nil))
		waitJS(t, ctx, d, "datasets only", `document.querySelectorAll('#impact-list tbody tr').length === 42 && [...document.querySelectorAll('#impact-list tbody tr')].every(r => r.dataset.type === 'DATASET')`)
		shot(t, ctx, "wf-impact")
		var csvText, href string
		run(t, ctx, d, "export", chromedp.Evaluate(`document.getElementById('impact-csv').href`, &href),
			chromedp.Evaluate(`fetch(document.getElementById('impact-csv').href).then(r => r.text())`, &csvText, func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }))
		if !strings.Contains(href, "type=DATASET") || !strings.Contains(href, "format=csv") {
			t.Errorf("CSV link %s: want the filtered list as CSV", href)
		}
		rows, err := csv.NewReader(strings.NewReader(csvText)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(srv.URL + "/api/lf/v1/impact?nodeId=" + url.QueryEscape(load) + "&direction=down&depth=5&type=DATASET")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var api explorer.Impact
		if err := json.NewDecoder(resp.Body).Decode(&api); err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(api.Results)+1 || api.Count != 42 {
			t.Fatalf("CSV has %d rows, the API %d results (count %d); want 42 and a header", len(rows), len(api.Results), api.Count)
		}
		for i, n := range api.Results {
			if rows[i+1][0] != n.ID || rows[i+1][1] != "DATASET" || rows[i+1][4] != strconv.Itoa(n.Distance) || rows[i+1][5] != n.Via {
				t.Errorf("CSV row %d %q, API %+v", i+1, rows[i+1], n)
			}
		}
	})

	t.Run("click a field and follow its lineage two hops", func(t *testing.T) {
		t0 = t
		rep := nodeOf(e.report)
		open("/?node=" + url.QueryEscape(rep) + "&up=1&down=1&sel=" + url.QueryEscape(rep))
		waitJS(t, ctx, d, "column lineage table", `document.querySelector('#column-lineage .field-link[data-field=c]') !== null`)
		run(t, ctx, d, "field c", chromedp.Click(`#column-lineage .field-link[data-field=c]`, chromedp.ByQuery))
		waitJS(t, ctx, d, "field view", `document.querySelectorAll('#field-up tbody tr').length === 3`)
		var rows []string
		run(t, ctx, d, "rows", chromedp.Evaluate(`[...document.querySelectorAll('#field-up tbody tr')].map(r => [...r.cells].map(c => c.textContent).join('|')).sort()`, &rows))
		want := []string{
			"1|orders_clean.b|orders_report.c|DIRECT/AGGREGATION",
			"1|orders_clean.x|orders_report.c|INDIRECT/FILTER",
			"2|" + e.in.Name + ".a|orders_clean.b|DIRECT/IDENTITY",
		}
		if strings.Join(rows, "\n") != strings.Join(want, "\n") {
			t.Errorf("field c comes from:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
		}
		shot(t, ctx, "wf-field")
		// Follow: the hop-1 field opens its own view, used by report.c.
		run(t, ctx, d, "follow b", chromedp.Click(`#field-up button[data-field-id=`+cssStr("datasetField:"+e.ns+":orders_clean:b")+`]`, chromedp.ByQuery))
		waitJS(t, ctx, d, "field b", `document.getElementById('field-title')?.textContent === 'Field orders_clean.b' && document.querySelector('#field-down tbody tr')?.textContent.includes('DIRECT/AGGREGATION') === true`)
	})

	t.Run("a live FAIL updates the open details panel", func(t *testing.T) {
		t0 = t
		load := nodeOfJob(e.load)
		open("/?node=" + url.QueryEscape(load) + "&up=1&down=1&sel=" + url.QueryEscape(load))
		waitJS(t, ctx, d, "no runs yet", `__lf.ready && document.querySelector('#details-title')?.textContent === 'load_orders' && /No runs recorded/.test(document.getElementById('details').textContent)`)
		long := "org.apache.spark.SparkException: Job aborted due to stage failure: " + strings.Repeat("Task 3 in stage 7.0 failed 4 times; ", 8) + "END-OF-ERROR"
		failRun(t, ep, e.load, "wf-live-fail-"+e.ns, long, time.Now().UnixMilli())
		waitJS(t, ctx, d, "failed run in the open panel", `document.querySelector('#runs tr[data-run-state=FAIL]') !== null && document.querySelector('#details .badge-fail') !== null`)
		// The whole error is reachable by keyboard: the expander opens it.
		run(t, ctx, d, "expand", chromedp.Focus(`#runs details summary`, chromedp.ByQuery), chromedp.KeyEvent(kb.Enter))
		waitJS(t, ctx, d, "full error", `document.querySelector('#runs details').open && document.querySelector('#runs .error-full').textContent.endsWith('END-OF-ERROR')`)
		shot(t, ctx, "wf-live-fail")
	})

	t.Run("a node that arrives live is marked, then unmarked", func(t *testing.T) {
		t0 = t
		load := nodeOfJob(e.load)
		open("/?node=" + url.QueryEscape(load) + "&up=1&down=1")
		waitJS(t, ctx, d, "drawn", `__lf.ready && `+inList(nodeOf(e.clean)))
		// A new output of the job, written as the pipeline writes it.
		fresh := lineage.Dataset{Namespace: e.ns, Name: "orders_live_" + strconv.FormatInt(time.Now().UnixNano()%1e6, 36)}
		var b lineage.Batch
		b.Key = "wf-live-" + fresh.Name
		b.Vertices = append(b.Vertices, lineage.DatasetVertex(fresh))
		now := time.Now().UnixMilli()
		b.Edges = append(b.Edges, lineage.NewEdge(lineage.EdgeOutputs, lineage.JobID(e.load), lineage.DatasetID(fresh), now, now, "run-live-"+e.ns))
		w, err := sink.New(sink.Config{Endpoint: ep, Writers: 1})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = w.WriteBatch(wctx, b)
		cancel()
		w.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		id := nodeOf(fresh)
		node := `__lf.cy.getElementById(` + jsStr(id) + `)`
		li := `document.querySelector('#nodelist li[data-node-id=` + cssStr(id) + `]')`
		waitJS(t, ctx, d, "marked on arrival, in the graph and the list", inList(id)+` && `+node+`.hasClass('arrived') && __lf.cy.$('node.arrived').length === 1 && !__lf.cy.getElementById(`+jsStr(nodeOf(e.clean))+`).hasClass('arrived') && `+li+`.classList.contains('arrived') && document.querySelectorAll('#nodelist li.arrived').length === 1 && getComputedStyle(`+li+`.querySelector('.nb'), '::after').content === '"new"'`)
		shot(t, ctx, "wf-live-arrived")
		waitJS(t, ctx, d, "mark gone after a few seconds", node+`.length === 1 && !`+node+`.hasClass('arrived') && !`+li+`.classList.contains('arrived')`)
	})

	t.Run("dark mode toggle", func(t *testing.T) {
		t0 = t
		load := nodeOfJob(e.load)
		open("/?node=" + url.QueryEscape(load) + "&up=1&down=1&sel=" + url.QueryEscape(load))
		waitJS(t, ctx, d, "drawn", `__lf.ready`)
		// Headless Chromium reports a light system theme: one click is dark.
		run(t, ctx, d, "toggle", chromedp.Click(`#theme`, chromedp.ByQuery))
		waitJS(t, ctx, d, "dark", `document.documentElement.dataset.theme === 'dark' && getComputedStyle(document.body).backgroundColor === 'rgb(18, 21, 28)' && __lf.cy.$('node').first().style('color') === 'rgb(230,233,240)'`)
		shot(t, ctx, "wf-dark")
		run(t, ctx, d, "toggle back", chromedp.Click(`#theme`, chromedp.ByQuery), chromedp.Click(`#theme`, chromedp.ByQuery))
		waitJS(t, ctx, d, "system", `document.documentElement.dataset.theme === undefined && getComputedStyle(document.body).backgroundColor === 'rgb(247, 248, 250)'`)
	})

	t.Run("a hub of 81 neighbours is laid out in columns", func(t *testing.T) {
		t0 = t
		// A job with 81 outputs and one input, on a server whose fan-out
		// cap draws them all.
		ns := e.ns + "-hub81"
		hub := lineage.Job{Namespace: ns, Name: "fan_out_81"}
		src := lineage.Dataset{Namespace: ns, Name: "fan_in"}
		var b lineage.Batch
		b.Key = "wf-hub81-" + ns
		b.Vertices = append(b.Vertices, lineage.JobVertex(hub), lineage.DatasetVertex(src))
		now := time.Now().UnixMilli()
		b.Edges = append(b.Edges, lineage.NewEdge(lineage.EdgeInputTo, lineage.DatasetID(src), lineage.JobID(hub), now, now, "run-"+ns))
		for i := range 81 {
			o := lineage.Dataset{Namespace: ns, Name: fmt.Sprintf("fan_out_table_%02d", i)}
			b.Vertices = append(b.Vertices, lineage.DatasetVertex(o))
			b.Edges = append(b.Edges, lineage.NewEdge(lineage.EdgeOutputs, lineage.JobID(hub), lineage.DatasetID(o), now, now, "run-"+ns))
		}
		w, err := sink.New(sink.Config{Endpoint: ep, Writers: 2})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = w.WriteBatch(wctx, b)
		cancel()
		w.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		srv2 := explorerServer(t, ep, explorer.Config{MaxFanOut: 100, StaleAfter: 30 * 24 * time.Hour})
		id := nodeOfJob(hub)
		openAt(srv2.URL, "/?node="+url.QueryEscape(id)+"&up=1&down=1")
		waitJS(t, ctx, d, "83 nodes drawn", `__lf.ready && __lf.cy.nodes().length === 83`)
		// The 81 outputs: right of the hub, in at least 4 columns of at
		// most 24, no two of them overlapping, the whole no taller than 24 rows.
		var res struct {
			Cols, MaxPerCol, Overlaps int
			RightOfHub                bool
			Height, Width             float64
		}
		run(t, ctx, d, "boxes", chromedp.Evaluate(`(() => {
			const cy = __lf.cy, hub = cy.getElementById(`+jsStr(id)+`);
			const outs = hub.outgoers('node');
			const boxes = outs.map(n => n.boundingBox({includeLabels: true}));
			const cols = new Map();
			outs.forEach(n => { const x = Math.round(n.position('x')); cols.set(x, (cols.get(x) || 0) + 1); });
			let overlaps = 0;
			for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
				const a = boxes[i], b = boxes[j];
				if (a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2) overlaps++;
			}
			const bb = outs.boundingBox({includeLabels: true});
			return {Cols: cols.size, MaxPerCol: Math.max(...cols.values()), Overlaps: overlaps,
				RightOfHub: outs.every(n => n.boundingBox().x1 > hub.boundingBox().x2),
				Height: bb.h, Width: bb.w, N: outs.length};
		})()`, &res))
		t.Logf("81 outputs: %d columns, at most %d per column, box %.0fx%.0f, %d overlaps", res.Cols, res.MaxPerCol, res.Width, res.Height, res.Overlaps)
		if res.Cols < 4 || res.MaxPerCol > 24 || res.Overlaps != 0 || !res.RightOfHub {
			t.Errorf("hub layout: %+v, want >= 4 columns of <= 24, no overlap, right of the hub", res)
		}
		shot(t, ctx, "wf-hub81")
	})

	var errs []string
	run(t, ctx, d, "errors", chromedp.Evaluate(`__lf.errors`, &errs))
	if len(errs) > 0 {
		t.Errorf("JavaScript errors: %v", errs)
	}
}

// TestDecoyDatasetInUI: a decoy (namespace "s3", name
// "//datalake-raw-<x>:sales/orders") has the same readable node id as the
// real dataset (namespace "s3://datalake-raw-<x>", name "sales/orders").
// Clicking the real search result shows the real dataset (its namespace,
// produced by good_job), not the decoy's and not an error; the real
// dataset drawn in its job's lineage opens the same way; a readable deep
// link to the job (unambiguous) still opens.
func TestDecoyDatasetInUI(t *testing.T) {
	ep := testenv.Gremlin(t)
	sfx := strconv.FormatInt(time.Now().UnixNano()%1e8, 36)
	real := lineage.Dataset{Namespace: "s3://datalake-raw-" + sfx, Name: "sales/orders"}
	decoy := lineage.Dataset{Namespace: "s3", Name: "//datalake-raw-" + sfx + ":sales/orders"}
	if nodeOf(real) != nodeOf(decoy) {
		t.Fatalf("not a decoy: %s vs %s", nodeOf(real), nodeOf(decoy))
	}
	good := lineage.Job{Namespace: "team-" + sfx, Name: "good_job"}
	evil := lineage.Job{Namespace: "evil-" + sfx, Name: "evil_job"}
	var b lineage.Batch
	b.Key = "decoy-" + sfx
	b.Vertices = append(b.Vertices, lineage.DatasetVertex(real), lineage.DatasetVertex(decoy), lineage.JobVertex(good), lineage.JobVertex(evil))
	now := time.Now().UnixMilli()
	b.Edges = append(b.Edges,
		lineage.NewEdge(lineage.EdgeOutputs, lineage.JobID(good), lineage.DatasetID(real), now, now, "run-good-"+sfx),
		lineage.NewEdge(lineage.EdgeOutputs, lineage.JobID(evil), lineage.DatasetID(decoy), now, now, "run-evil-"+sfx))
	w, err := sink.New(sink.Config{Endpoint: ep, Writers: 1})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.WriteBatch(wctx, b); err != nil {
		t.Fatal(err)
	}
	w.Close(context.Background())
	srv := explorerServer(t, ep, explorer.Config{})
	ctx := newBrowser(t)
	const d = 30 * time.Second
	realDetails := `document.querySelector('#details-title')?.textContent === 'sales/orders' && document.getElementById('details').textContent.includes(` + jsStr(real.Namespace) + `) && document.querySelector('#producers li[data-node-id=` + cssStr(nodeOfJob(good)) + `]') !== null && !document.getElementById('details').textContent.includes('evil_job') && document.getElementById('banner').hidden`

	run(t, ctx, d, "open", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`#search-input`, chromedp.ByQuery))
	run(t, ctx, d, "type", chromedp.SendKeys(`#search-input`, "datalake-raw-"+sfx, chromedp.ByQuery))
	hit := `#search-results li[data-ref=` + cssStr(refOf(real)) + `]`
	waitJS(t, ctx, d, "both hits, same readable id", `document.querySelectorAll('#search-results li[data-node-id=`+cssStr(nodeOf(real))+`]').length === 2 && document.querySelector(`+jsStr(hit)+`) !== null && document.querySelector(`+jsStr(`#search-results li[data-ref=`+cssStr(refOf(decoy))+`]`)+`) !== null`)
	run(t, ctx, d, "click the real one", chromedp.Click(hit, chromedp.ByQuery))
	waitJS(t, ctx, d, "the real dataset opened", `new URLSearchParams(location.search).get('node') === `+jsStr(refOf(real))+` && __lf.ready && `+realDetails)
	shot(t, ctx, "decoy-real-opened")

	// A readable deep link that names one node opens; the real dataset
	// drawn in the job's lineage opens by its exact id too.
	run(t, ctx, d, "deep link", chromedp.Navigate(srv.URL+"/?node="+url.QueryEscape(nodeOfJob(good))+"&up=1&down=1"))
	li := `#nodelist li[data-node-id=` + cssStr(nodeOf(real)) + `]`
	waitJS(t, ctx, d, "job lineage", `__lf.ready && document.querySelector(`+jsStr(li)+`) !== null`)
	run(t, ctx, d, "select the dataset", chromedp.Click(li+` button.nb`, chromedp.ByQuery))
	waitJS(t, ctx, d, "the real dataset's details", realDetails)
}
