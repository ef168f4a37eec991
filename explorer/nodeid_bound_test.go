package explorer

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestParseNodeIDBounds: an id over MaxNodeIDBytes is refused before it is
// split (the 400 names nodeId and the limit); the splits of a long id with
// many ':' are bounded in count and in bytes.
func TestParseNodeIDBounds(t *testing.T) {
	huge := "dataset:" + strings.Repeat("a:", 450000) + "b"
	_, err := parseNodeID(huge, true)
	var br *BadRequestError
	if !errors.As(err, &br) || !strings.Contains(br.Msg, "nodeId") || !strings.Contains(br.Msg, strconv.Itoa(MaxNodeIDBytes)) {
		t.Fatalf("900 KB id: %v, want a 400 naming nodeId and %d", err, MaxNodeIDBytes)
	}
	at := "dataset:" + strings.Repeat("a:", (MaxNodeIDBytes-10)/2) + "b"
	p, err := parseNodeID(at, false)
	if err != nil {
		t.Fatalf("id of %d bytes: %v", len(at), err)
	}
	total := 0
	for _, c := range p.candidates {
		total += len(c.Namespace) + len(c.Name)
	}
	if len(p.candidates) == 0 || len(p.candidates) > maxSplitCandidates || total > maxSplitBytes {
		t.Fatalf("%d candidates of %d bytes, want 1..%d and <= %d bytes", len(p.candidates), total, maxSplitCandidates, maxSplitBytes)
	}
	short := "dataset:" + strings.Repeat("a:", 200) + "b"
	if p, _ := parseNodeID(short, false); len(p.candidates) != maxSplitCandidates {
		t.Fatalf("short id: %d candidates, want %d", len(p.candidates), maxSplitCandidates)
	}
}

// TestHugeNodeIDsServeRSS runs `lineageflow serve` on the Gremlin stand-in
// and sends 25 concurrent ~900 KB node ids to every route that takes a
// nodeId: every answer is a 400 naming nodeId (or 414/431 from net/http
// when the request line is over its header limit), and the process's
// resident memory (VmRSS from /proc, sampled while the requests run) stays
// under 200 MB. Before the bound one such request cost ~190 MB. Then the
// same with ids just under the limit, all ':' (the most splits an accepted
// id can ask for): 404s, under 200 MB too.
func TestHugeNodeIDsServeRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs lineageflow serve")
	}
	base, pid := startServe(t, gremlinEndpoint(t))
	rss := func() int64 {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(st), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb << 10
			}
		}
		t.Fatal("no VmRSS")
		return 0
	}
	// ':' is legal unescaped in a query: the id travels at its own size.
	huge := "dataset:" + strings.Repeat("a:", 450000) + "b"
	// Just under the limit, all ':': the most splits an accepted id can
	// ask for (a 404: no such node).
	atLimit := "dataset:" + strings.Repeat("a:", (MaxNodeIDBytes-10)/2) + "b"
	routes := []string{
		"/api/lf/v1/node", "/api/lf/v1/lineage", "/api/lf/v1/watch", "/api/lf/v1/impact",
		"/api/lf/v1/neighbors", "/api/v1/lineage", "/api/v1/column-lineage",
	}
	var peak int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if r := rss(); r > peak {
				peak = r
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	client := &http.Client{Timeout: 60 * time.Second}
	for _, id := range []string{huge, atLimit} {
		for _, route := range routes {
			var wg sync.WaitGroup
			errs := make(chan string, 25)
			for i := 0; i < 25; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := client.Get(base + route + "?nodeId=" + id)
					if err != nil {
						errs <- err.Error()
						return
					}
					body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
					resp.Body.Close()
					switch {
					case id == huge && resp.StatusCode == http.StatusBadRequest:
						if !strings.Contains(string(body), "nodeId") || !strings.Contains(string(body), strconv.Itoa(MaxNodeIDBytes)) {
							errs <- fmt.Sprintf("400 without nodeId and the limit: %s", body)
						}
					case id == atLimit && resp.StatusCode == http.StatusNotFound:
					case id == atLimit && resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "":
						// 25 at once: beyond -explorer-max-heavy-reads
					case id == huge && (resp.StatusCode == http.StatusRequestURITooLong || resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge):
					default:
						errs <- fmt.Sprintf("status %d: %.200s", resp.StatusCode, body)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Errorf("%s (%d-byte id): %s", route, len(id), e)
			}
		}
	}
	close(stop)
	<-sampled
	t.Logf("peak VmRSS of serve: %.1f MB", float64(peak)/(1<<20))
	if peak >= 200<<20 {
		t.Fatalf("serve peaked at %.1f MB RSS, want < 200 MB", float64(peak)/(1<<20))
	}
}
