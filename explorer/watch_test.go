package explorer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/gremlinproxy"
)

type sse struct {
	name, data string
}

// openWatch opens a watch stream and returns its events.
func openWatch(t testing.TB, ctx context.Context, base, query string) <-chan sse {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/lf/v1/watch?"+query, nil)
	resp, err := http.DefaultClient.Do(req) //nolint:bodyclose // closed by the reader goroutine below (or on the error path)
	if err != nil {
		t.Fatal(err)
	}
	body := resp.Body
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		body.Close()
		t.Fatalf("watch: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := make(chan sse, 16)
	go func() {
		defer body.Close()
		defer close(ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 0, 4096), 8<<20)
		var ev sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[len("data: "):]
			case line == "" && ev.name != "":
				select {
				case ch <- ev:
				case <-ctx.Done():
					return
				}
				ev = sse{}
			case strings.HasPrefix(line, ":"):
				select {
				case ch <- sse{name: "heartbeat"}:
				default:
				}
			}
		}
	}()
	return ch
}

func next(t testing.TB, ch <-chan sse, want string, within time.Duration) sse {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream closed waiting for %s", want)
			}
			if ev.name == want {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event within %v", want, within)
		}
	}
}

func TestWatch(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	u, _ := url.Parse(ep)
	px, err := gremlinproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close) // after the server's cleanup: close our side first
	s, hs := newTestServer(t, px.URL(), Config{PollInterval: 100 * time.Millisecond, Heartbeat: 200 * time.Millisecond, RequestTimeout: 2 * time.Second, MaxWatchesPerClient: 50})
	ctx, cancel := context.WithCancel(context.Background())
	defer waitNoPollers(t, s)
	defer cancel()
	query := "nodeId=" + url.QueryEscape(dsNode(fxClean)) + "&up=1&down=1"

	// 50 viewers of the same view share one poller.
	const viewers = 50
	streams := make([]<-chan sse, viewers)
	for i := range streams {
		streams[i] = openWatch(t, ctx, hs.URL, query)
	}
	var first Lineage
	for i, ch := range streams {
		ev := next(t, ch, "lineage", 10*time.Second)
		if i == 0 {
			if err := json.Unmarshal([]byte(ev.data), &first); err != nil || len(first.Nodes) != 3 {
				t.Fatalf("first lineage event: %v %s", err, short(ev.data))
			}
		}
	}
	if p, v := s.WatchStats(); p != 1 || v != viewers {
		t.Fatalf("%d viewers of one view: %d pollers, %d viewers registered; want 1 and %d", viewers, p, v, viewers)
	}
	next(t, streams[0], "heartbeat", 5*time.Second)

	// A new edge in the view reaches every viewer.
	newJob := lineage.Job{Namespace: fxNS, Name: "late"}
	written := time.Now()
	writeVertexAndEdge(t, ep, lineage.JobVertex(newJob), lineage.NewEdge(lineage.EdgeInputTo, lineage.DatasetID(fxClean), lineage.JobID(newJob), 9000, 9000, "run-late"))
	acked := time.Now()
	// A poll that straddles the write may first send a version with the
	// new edge counted in "more" but not yet walked: a later one has it.
	for i, ch := range streams {
		deadline := time.Now().Add(10 * time.Second)
		for {
			ev := next(t, ch, "lineage", time.Until(deadline))
			var l Lineage
			_ = json.Unmarshal([]byte(ev.data), &l)
			if _, ok := nodesByID(l)[jobNode(newJob)]; ok && l.Version != first.Version {
				break
			}
		}
		if i == 0 {
			t.Logf("new edge: write acknowledged after %v, first viewer's event %v after the ack (poll every 100ms)",
				acked.Sub(written).Round(time.Millisecond), time.Since(acked).Round(time.Millisecond))
		}
	}

	// The graph goes down: an error event with the class.
	if raceEnabled {
		t.Log("gremlin-go v3.7.4 races on connection state after a drop: the graph-down part runs without -race")
		return
	}
	px.Refuse(true)
	px.Drop()
	ev := next(t, streams[0], "error", 10*time.Second)
	if !strings.Contains(ev.data, ClassUnreachable) {
		t.Errorf("error event %s, want %s", ev.data, ClassUnreachable)
	}
	px.Refuse(false)
	next(t, streams[0], "lineage", 20*time.Second)

	// Viewers leave: the poller stops.
	cancel()
	waitNoPollers(t, s)
}

func waitNoPollers(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if p, v := s.WatchStats(); p == 0 && v == 0 {
			break
		}
		if time.Now().After(deadline) {
			p, v := s.WatchStats()
			t.Fatalf("after every viewer left: %d pollers, %d viewers", p, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkWatchViewers measures the resident memory of a running
// `lineageflow serve` process (VmRSS) after 10 s (100 polls) with 1 viewer
// of a view, after 10 s with 50 viewers of the same view, and 10 s later: flat
// means a viewer costs a connection, a goroutine and a one-slot channel,
// not a copy of the subgraph, and nothing grows while they watch. The
// viewers are in the benchmark process, so they do not count.
func BenchmarkWatchViewers(b *testing.B) {
	ep := gremlinEndpoint(b)
	loadFixture(b, ep)
	base, pid := startServe(b, ep, "-explorer-poll-interval", "100ms", "-explorer-max-watches-per-client", "50")
	query := "nodeId=" + url.QueryEscape(dsNode(fxClean)) + "&up=2&down=2"
	rss := func() float64 {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range strings.Split(string(st), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb
			}
		}
		b.Fatal("no VmRSS")
		return 0
	}
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		next(b, openWatch(b, ctx, base, query), "lineage", 10*time.Second)
		time.Sleep(10 * time.Second) // 100 polls: the steady state of 1 viewer
		r1 := rss()
		var streams []<-chan sse
		for j := 1; j < 50; j++ {
			ch := openWatch(b, ctx, base, query)
			next(b, ch, "lineage", 10*time.Second)
			streams = append(streams, ch)
		}
		time.Sleep(10 * time.Second)
		r50 := rss()
		time.Sleep(10 * time.Second) // 100 more polls with 50 viewers: nothing may grow
		r50later := rss()
		b.ReportMetric(r1, "rss-1-viewer-KiB")
		b.ReportMetric(r50, "rss-50-viewers-KiB")
		b.ReportMetric(r50later, "rss-50-viewers-10s-later-KiB")
		b.ReportMetric((r50-r1)/49, "KiB/extra-viewer")
		cancel()
		_ = streams
	}
}
