package web_test

import (
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/lineageflow/lineageflow/explorer"
)

// BenchmarkLandingFirstPaint loads the landing page in headless Chromium
// from a real server over the benchmark estate (EXPLORER_BENCH_GREMLIN, the
// 100k-vertex graph explorer/bench_test.go loads) and reports the first
// contentful paint and the time until the landing lists are drawn
// (__lf.marks.landingAt), both in ms since navigation start, with the
// server's landing lists already read (its background read at start).
func BenchmarkLandingFirstPaint(b *testing.B) {
	ep := os.Getenv("EXPLORER_BENCH_GREMLIN")
	if ep == "" {
		b.Skip("EXPLORER_BENCH_GREMLIN: the benchmark estate's Gremlin endpoint")
	}
	srv := explorerServer(b, ep, explorer.Config{IndexRefresh: time.Hour})
	// Wait for the first index load and landing read (the server's start).
	deadline := time.Now().Add(5 * time.Minute)
	for {
		resp, err := http.Get(srv.URL + "/api/lf/v1/landing")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("landing never answered: %v", err)
		}
	}
	ctx := newBrowser(b)
	var fcp, lists float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run(b, ctx, 30*time.Second, "navigate", chromedp.Navigate(srv.URL+"/?i="+strconv.Itoa(i)))
		var r struct{ FCP, Lists float64 }
		run(b, ctx, 30*time.Second, "landing", chromedp.Evaluate(`new Promise((resolve) => { const t = () => (window.__lf && __lf.marks.landingAt > 0 && performance.getEntriesByName('first-contentful-paint').length ? resolve({FCP: performance.getEntriesByName('first-contentful-paint')[0].startTime, Lists: __lf.marks.landingAt}) : setTimeout(t, 20)); t(); })`, &r,
			func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }))
		fcp += r.FCP
		lists += r.Lists
		if i == 0 {
			shot(b, ctx, "landing-estate")
		}
	}
	b.ReportMetric(fcp/float64(b.N), "ms-first-paint")
	b.ReportMetric(lists/float64(b.N), "ms-landing-lists")
}
