package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
	"github.com/chromedp/chromedp"

	"github.com/lineageflow/lineageflow/explorer"
	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// TestDayOneOnGremlinStandin walks a data platform engineer's first visit,
// on the real server and the Gremlin stand-in, one obvious step each:
// open the explorer (the search box has the focus), find a Glue table by
// its catalog name (an alias of the S3 dataset the events name), see who
// feeds it and last night's failed run of that job with its error (in the
// dataset's details, no further click).
func TestDayOneOnGremlinStandin(t *testing.T) {
	ep := testenv.Gremlin(t)
	sfx := strconv.FormatInt(time.Now().UnixNano(), 36)
	s3 := lineage.Dataset{Namespace: "s3://lake-" + sfx, Name: "warehouse/sales/orders"}
	glue := lineage.Dataset{Namespace: "arn:aws:glue:eu-west-1:123456789012", Name: "table/sales_" + sfx + "/orders"}
	src := lineage.Dataset{Namespace: "s3://landing-" + sfx, Name: "orders/2026-12-02"}
	job := lineage.Job{Namespace: "glue-" + sfx, Name: "load_orders"}
	now := time.Now().UnixMilli()
	night := now - 8*time.Hour.Milliseconds()
	w, err := sink.New(sink.Config{Endpoint: ep, Writers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	D, J := lineage.DatasetID, lineage.JobID
	if err := w.WriteBatch(ctx, lineage.Batch{Key: "dayone-" + sfx,
		Vertices: []lineage.Vertex{lineage.DatasetVertex(s3), lineage.DatasetVertex(src), lineage.JobVertex(job),
			lineage.AliasVertex(lineage.Alias{Of: s3, Alias: glue, Type: "TABLE"})},
		Edges: []lineage.Edge{
			lineage.NewEdge(lineage.EdgeInputTo, D(src), J(job), night-86400000, night-86400000, "run-ok-"+sfx),
			lineage.NewEdge(lineage.EdgeOutputs, J(job), D(s3), night-86400000, night-86400000, "run-ok-"+sfx),
			lineage.NewEdge(lineage.EdgeAliasOf, lineage.AliasID(glue), D(s3), night-86400000, night-86400000, "run-ok-"+sfx),
		}}); err != nil {
		t.Fatal(err)
	}
	// Last night's failed run, as the model writes it (its job a property).
	g, closeFn, err := graph.Connect(ep)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	T := gremlingo.T
	runID := "fail-" + sfx
	const msg = "AccessDeniedException: User is not authorized to perform glue:UpdateTable on table sales.orders"
	if _, err := g.MergeV(map[any]any{T.Id: runVertexID(runID), T.Label: "Run"}).Property("runId", runID).
		Property("jobNamespace", job.Namespace).Property("jobName", job.Name).Property("job", J(job)).Property("state", "FAIL").
		Property("startedAt", night).Property("endedAt", night+95000).Property("durationMs", int64(95000)).
		Property("updatedAt", night+95000).Property("errorMessage", msg).ToList(); err != nil {
		t.Fatal(err)
	}

	srv := explorerServer(t, ep, explorer.Config{})
	bctx := newBrowser(t)
	const d = 15 * time.Second

	// Open the explorer: the search box has the focus.
	run(t, bctx, d, "open", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`#search-input`, chromedp.ByQuery))
	waitJS(t, bctx, d, "search focused", `document.activeElement && document.activeElement.id === 'search-input'`)

	// Find the Glue table by its catalog name: the S3 dataset, through its alias.
	catalog := "sales_" + sfx + "/orders"
	run(t, bctx, d, "type", chromedp.SendKeys(`#search-input`, catalog, chromedp.ByQuery))
	waitJS(t, bctx, 30*time.Second, "alias result", `(() => { const o = document.querySelectorAll('#search-results li[data-node-id]'); return o.length === 1 && o[0].dataset.nodeId === `+jsStr(nodeOf(s3))+` && o[0].textContent.includes('alias '+`+jsStr(glue.Name)+`); })()`)
	run(t, bctx, d, "enter", chromedp.SendKeys(`#search-input`, "\r", chromedp.ByQuery))
	waitJS(t, bctx, d, "dataset opened", `new URLSearchParams(location.search).get('node') === `+jsStr(refOf(s3))+` && __lf.ready && document.querySelector('#details-title')?.textContent === `+jsStr(s3.Name))

	// Who feeds it: the job, in the details and highlighted upstream in the view.
	jid := nodeOfJob(job)
	waitJS(t, bctx, d, "produced by", `document.querySelector('#producers li[data-node-id=`+cssStr(jid)+`]') !== null && document.querySelector('#nodelist li.upstream[data-node-id=`+cssStr(jid)+`]') !== null`)

	// Last night's failed run with its error, without another click.
	waitJS(t, bctx, d, "failed run", `document.querySelector('#producers li[data-node-id=`+cssStr(jid)+`] .failed-run') !== null`)
	var fr struct{ Run, Text string }
	run(t, bctx, d, "read failed run", chromedp.Evaluate(`(() => { const f = document.querySelector('#producers li[data-node-id=`+cssStr(jid)+`] .failed-run'); return {Run: f.dataset.runId, Text: f.textContent}; })()`, &fr))
	when := time.UnixMilli(night).UTC().Format("2006-01-02 15:04:05Z")
	if fr.Run != runID || !strings.Contains(fr.Text, "FAIL") || !strings.Contains(fr.Text, when) || !strings.Contains(fr.Text, "AccessDeniedException") {
		t.Errorf("the producer's failed run shows %+v; want run %s, FAIL, %s and the error", fr, runID, when)
	}
	shot(t, bctx, "day-one")

	// One click on the producer selects it: its runs table has the run.
	run(t, bctx, d, "select job", chromedp.Click(`#producers li[data-node-id=`+cssStr(jid)+`] button`, chromedp.ByQuery))
	waitJS(t, bctx, d, "job details", `document.querySelector('#details-title')?.textContent === 'load_orders' && document.querySelector('#runs tr[data-run-state=FAIL]') !== null`)
	var errs []string
	run(t, bctx, d, "errors", chromedp.Evaluate(`__lf.errors`, &errs))
	if len(errs) > 0 {
		t.Errorf("JavaScript errors: %v", errs)
	}
}
