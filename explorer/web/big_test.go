package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBigNeighbourhood opens the 1,001-node deep link of the render
// benchmark and checks what makes it fast without losing anything: the
// centre's lineage is requested before the bundle has run (the boot
// script's early read, then the live stream), the edges are haystack edges
// with a mid arrow, the nodes carry no label at the zoom that fits them
// all, and zooming in gives the nodes in view their label.
func TestBigNeighbourhood(t *testing.T) {
	g, hub := bigEstate()
	var mu sync.Mutex
	var paths []string
	inner := g.api()
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		inner.ServeHTTP(w, r)
	})
	srv := uiServer(t, api)
	ctx := newBrowser(t)
	const d = 30 * time.Second
	run(t, ctx, d, "open", chromedp.Navigate(srv.URL+"/?node="+url.QueryEscape(hub)+"&up=2&down=2&max=2000"))
	waitJS(t, ctx, d, "drawn and live", `window.__lf && __lf.interactiveAt > 0 && __lf.cy.nodes().length === 1001 && document.getElementById('status').textContent === 'Live'`)

	mu.Lock()
	got := append([]string(nil), paths...)
	mu.Unlock()
	if len(got) < 2 || got[0] != "/api/lf/v1/lineage" || !strings.Contains(strings.Join(got, " "), "/api/lf/v1/watch") {
		t.Errorf("API requests %v: want the early /api/lf/v1/lineage first, then the /api/lf/v1/watch stream", got)
	}

	var st struct {
		Curve, Arrow, Label string
		Labelled, Zoom      float64
	}
	read := func(what string) {
		t.Helper()
		run(t, ctx, d, what, chromedp.Evaluate(`(() => { const cy = __lf.cy, h = cy.getElementById(`+jsStr(hub)+`), e = cy.edges()[0];
			return {Curve: e.style('curve-style'), Arrow: e.style('mid-target-arrow-shape'), Label: h.style('label'),
			        Labelled: cy.nodes('.lbl').length, Zoom: cy.zoom()}; })()`, &st))
	}
	read("style at fit")
	if st.Curve != "haystack" || st.Arrow != "triangle" {
		t.Errorf("big view edges: curve-style %q, mid-target-arrow-shape %q; want haystack with a triangle", st.Curve, st.Arrow)
	}
	if st.Label != "" || st.Labelled != 0 || st.Zoom*13 >= 5 {
		t.Errorf("at the fitting zoom %.2f: hub label %q, %v labelled nodes; want none (labels unreadable there)", st.Zoom, st.Label, st.Labelled)
	}

	// Zoom in on the hub: the nodes in view get their labels, the rest not.
	run(t, ctx, d, "zoom in", chromedp.Evaluate(`(() => { const h = __lf.cy.getElementById(`+jsStr(hub)+`); __lf.cy.zoom({level: 1, renderedPosition: h.renderedPosition()}); __lf.cy.center(h); return true; })()`, nil))
	waitJS(t, ctx, d, "labels in view", `__lf.cy.getElementById(`+jsStr(hub)+`).style('label').includes('hub')`)
	read("style zoomed in")
	if st.Labelled < 10 || st.Labelled > 500 {
		t.Errorf("zoomed in: %v labelled nodes, want those in view only (some, not all 1001)", st.Labelled)
	}
	var errs []string
	run(t, ctx, d, "errors", chromedp.Evaluate(`__lf.errors`, &errs))
	if len(errs) > 0 {
		t.Errorf("JavaScript errors: %v", errs)
	}
}
