package explorer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	lfgraph "github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/testkit/gremlinproxy"
)

// loadHub drops the graph and writes a hub: dataset hub:h read by n jobs,
// each writing one dataset that feeds the next level's job (2n+ edges).
func loadHub(t testing.TB, endpoint string, n int) lineage.Dataset {
	t.Helper()
	if err := lfgraph.Drop(endpoint); err != nil {
		t.Fatal(err)
	}
	sk, err := sink.New(sink.Config{Endpoint: endpoint, Writers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close(context.Background())
	hub := lineage.Dataset{Namespace: "hub", Name: "h"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const per = 100 // vertices or edges of 100 jobs per batch: every vertex first
	for pass := 0; pass < 2; pass++ {
		for lo := 0; lo < n; lo += per {
			var b lineage.Batch
			b.Key = fmt.Sprintf("hub-%d-%d", pass, lo)
			if lo == 0 && pass == 0 {
				b.Vertices = append(b.Vertices, lineage.DatasetVertex(hub))
			}
			for i := lo; i < min(n, lo+per); i++ {
				j := lineage.Job{Namespace: "hub", Name: fmt.Sprintf("j%d", i)}
				d := lineage.Dataset{Namespace: "hub", Name: fmt.Sprintf("d%d", i)}
				if pass == 0 {
					b.Vertices = append(b.Vertices, lineage.JobVertex(j), lineage.DatasetVertex(d))
					continue
				}
				b.Edges = append(b.Edges,
					lineage.NewEdge(lineage.EdgeInputTo, lineage.DatasetID(hub), lineage.JobID(j), 1000, 1000, "r"),
					lineage.NewEdge(lineage.EdgeOutputs, lineage.JobID(j), lineage.DatasetID(d), 1000, 1000, "r"),
					lineage.NewEdge(lineage.EdgeInputTo, lineage.DatasetID(d), lineage.JobID(lineage.Job{Namespace: "hub", Name: fmt.Sprintf("j%d", (i+1)%n)}), 1000, 1000, "r"))
			}
			if err := sk.WriteBatch(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	return hub
}

// TestAdmissionHubLineage: 200 concurrent depth-20 lineage reads of a hub
// (a few thousand edges) are each answered 200 or 429 with Retry-After,
// never 503, while /health answers 200 within 2 s throughout.
func TestAdmissionHubLineage(t *testing.T) {
	ep := gremlinEndpoint(t)
	hub := loadHub(t, ep, 1200) // 3,600 edges
	s, hs := newTestServer(t, ep, Config{})
	query := hs.URL + "/api/lf/v1/lineage?nodeId=" + url.QueryEscape(dsNode(hub)) + "&up=20&down=20&maxNodes=2000"

	stop := make(chan struct{})
	var hwg sync.WaitGroup
	var worstHealth time.Duration
	var healthBad []string
	var healthN int
	hwg.Add(1)
	go func() {
		defer hwg.Done()
		cl := &http.Client{Timeout: 5 * time.Second}
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			start := time.Now()
			resp, err := cl.Get(hs.URL + "/api/lf/v1/health")
			took := time.Since(start)
			worstHealth = max(worstHealth, took)
			healthN++
			switch {
			case err != nil:
				healthBad = append(healthBad, err.Error())
			case resp.StatusCode != 200 || took > 2*time.Second:
				b, _ := io.ReadAll(resp.Body)
				healthBad = append(healthBad, fmt.Sprintf("%d after %v: %s", resp.StatusCode, took, b))
			}
			if resp != nil {
				resp.Body.Close()
			}
		}
	}()

	const clients = 200
	var wg sync.WaitGroup
	codes := make(chan string, clients)
	start := time.Now()
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(query)
			if err != nil {
				codes <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			switch {
			case resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "":
				codes <- "429 without Retry-After"
			case resp.StatusCode == 200 || resp.StatusCode == 429:
				codes <- fmt.Sprint(resp.StatusCode)
			default:
				codes <- fmt.Sprintf("%d %s", resp.StatusCode, short(string(b)))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	hwg.Wait()
	close(codes)
	count := map[string]int{}
	for c := range codes {
		count[c]++
	}
	heavy, _ := s.Refused()
	t.Logf("%d lineage requests in %v: %v (refused counter %d); /health %d times, slowest %v", clients, elapsed.Round(time.Millisecond), count, heavy, healthN, worstHealth.Round(time.Millisecond))
	if count["200"] == 0 || count["429"] == 0 || count["200"]+count["429"] != clients {
		t.Errorf("answers %v: want only 200s and 429s (with Retry-After), some of each", count)
	}
	if heavy != int64(count["429"]) {
		t.Errorf("refused counter %d, want %d", heavy, count["429"])
	}
	if len(healthBad) > 0 {
		t.Errorf("/health during the load: %d of %d bad, first %s", len(healthBad), healthN, healthBad[0])
	}
}

// TestWatchCaps: one client cannot open more than MaxWatchesPerClient
// streams, and no more than MaxPollers distinct views are polled (distinct
// maxNodes used to give a new poller each without bound).
func TestWatchCaps(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	s, hs := newTestServer(t, ep, Config{MaxWatchesPerClient: 4, MaxPollers: 3, PollInterval: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer waitNoPollers(t, s)
	defer cancel()
	view := func(i int) string {
		return "nodeId=" + url.QueryEscape(dsNode(fxClean)) + fmt.Sprintf("&up=1&down=1&maxNodes=%d", 10+i)
	}
	status := func(q string) (int, string) {
		c, cc := context.WithCancel(ctx)
		defer cc()
		req, _ := http.NewRequestWithContext(c, http.MethodGet, hs.URL+"/api/lf/v1/watch?"+q, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	for i := 0; i < 3; i++ {
		next(t, openWatch(t, ctx, hs.URL, view(i)), "lineage", 10*time.Second)
	}
	if code, ra := status(view(3)); code != 429 || ra == "" {
		t.Fatalf("a 4th distinct view with 3 pollers allowed: %d (Retry-After %q), want 429 with Retry-After", code, ra)
	}
	// The same view shares its poller: allowed up to the client's cap.
	next(t, openWatch(t, ctx, hs.URL, view(0)), "lineage", 10*time.Second)
	if code, ra := status(view(0)); code != 429 || ra == "" {
		t.Fatalf("a 5th stream of one client: %d (Retry-After %q), want 429 with Retry-After", code, ra)
	}
	if p, v := s.WatchStats(); p != 3 || v != 4 {
		t.Fatalf("%d pollers, %d viewers; want 3 and 4", p, v)
	}
	if _, w := s.Refused(); w != 2 {
		t.Fatalf("refused watches %d, want 2", w)
	}
}

// TestHealthWhileGremlinFrozen: Gremlin stops answering (responses held by
// the proxy, TCP open) while 100 watch streams poll: /health still answers
// within 2 s every time, and says the graph is not answering once the last
// successful read is older than the freshness window.
func TestHealthWhileGremlinFrozen(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	u, _ := url.Parse(ep)
	px, err := gremlinproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	s, hs := newTestServer(t, px.URL(), Config{MaxWatchesPerClient: 200, PollInterval: 100 * time.Millisecond, RequestTimeout: 3 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer waitNoPollers(t, s)
	defer cancel()
	for i := 0; i < 100; i++ { // 100 streams over 20 views
		openWatch(t, ctx, hs.URL, "nodeId="+url.QueryEscape(dsNode(fxClean))+fmt.Sprintf("&up=1&down=1&maxNodes=%d", 10+i%20))
	}
	health := func() (int, time.Duration) {
		start := time.Now()
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(hs.URL + "/api/lf/v1/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, time.Since(start)
	}
	if code, _ := health(); code != 200 {
		t.Fatalf("health before the freeze: %d", code)
	}
	px.Stall(true)
	defer px.Stall(false)
	var saw503 bool
	var worst time.Duration
	deadline := time.Now().Add(8 * time.Second) // past RequestTimeout: the pollers' reads time out meanwhile
	for time.Now().Before(deadline) {
		code, took := health()
		worst = max(worst, took)
		if took > 2*time.Second {
			t.Fatalf("/health took %v with Gremlin frozen and 100 watchers", took)
		}
		saw503 = saw503 || code == 503
	}
	t.Logf("frozen Gremlin, 100 watch streams: /health slowest %v", worst.Round(time.Millisecond))
	if !saw503 {
		t.Error("/health never said the frozen graph does not answer")
	}
}
