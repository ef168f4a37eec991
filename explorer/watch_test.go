package explorer

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"runtime"
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
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("watch: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := make(chan sse, 16)
	go func() {
		defer resp.Body.Close()
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 1<<20), 8<<20)
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
	s, hs := newTestServer(t, px.URL(), Config{PollInterval: 100 * time.Millisecond, Heartbeat: 200 * time.Millisecond, RequestTimeout: 2 * time.Second})
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
	writeVertexAndEdge(t, ep, lineage.JobVertex(newJob), lineage.NewEdge(lineage.EdgeInputTo, lineage.DatasetID(fxClean), lineage.JobID(newJob), 9000, 9000, "run-late"))
	for _, ch := range streams {
		ev := next(t, ch, "lineage", 10*time.Second)
		var l Lineage
		_ = json.Unmarshal([]byte(ev.data), &l)
		if _, ok := nodesByID(l)[jobNode(newJob)]; !ok || l.Version == first.Version {
			t.Fatalf("lineage event after the new edge lacks %s: %s", jobNode(newJob), short(ev.data))
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

// BenchmarkWatchViewers measures the server's heap with 50 concurrent
// viewers of one view against the heap with 1: flat means the per-viewer
// cost is a channel and a goroutine, not a copy of the subgraph.
func BenchmarkWatchViewers(b *testing.B) {
	ep := gremlinEndpoint(b)
	loadFixture(b, ep)
	s, hs := newTestServer(b, ep, Config{PollInterval: 100 * time.Millisecond})
	query := "nodeId=" + url.QueryEscape(dsNode(fxClean)) + "&up=2&down=2"
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		one := openWatch(b, ctx, hs.URL, query)
		next(b, one, "lineage", 10*time.Second)
		h1 := heap()
		for j := 1; j < 50; j++ {
			next(b, openWatch(b, ctx, hs.URL, query), "lineage", 10*time.Second)
		}
		if p, v := s.WatchStats(); p != 1 || v != 50 {
			b.Fatalf("pollers %d viewers %d", p, v)
		}
		time.Sleep(time.Second) // ten polls with 50 viewers
		h50 := heap()
		b.ReportMetric(float64(h1)/1024, "heap-1-viewer-KiB")
		b.ReportMetric(float64(h50)/1024, "heap-50-viewers-KiB")
		b.ReportMetric((float64(h50)-float64(h1))/49/1024, "KiB/extra-viewer")
		cancel()
	}
}
