package explorer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
)

// Admission control: the explorer answers 429 with Retry-After rather than
// queue work the graph cannot serve in time, and /health never waits
// behind that work.
const (
	// retryAfter is the Retry-After (seconds) of a 429.
	retryAfter = 1
	// healthFresh: a graph read that succeeded this recently, or a health
	// probe made this recently, answers /health without a new probe.
	healthFresh = 2 * time.Second
	// healthProbe bounds the one probe /health makes (g.inject(1)); a
	// request waits for it at most that long: /health answers within
	// about a second whatever the graph does.
	healthProbe = time.Second
)

// ClassBusy is the error class of a 429 answer.
const ClassBusy = "too_many_requests"

// admission holds the heavy-read slots and the watch streams per client.
type admission struct {
	heavy chan struct{}
	mu    struct {
		sync.Mutex
		watches map[string]int // open watch streams per client
	}
	probe struct {
		sync.Mutex
		at      time.Time     // of the last finished probe
		class   string        // its result: "" (ok) or a GraphError class
		running chan struct{} // closed when the probe in flight ends
	}
}

func newAdmission(heavy int) *admission {
	a := &admission{heavy: make(chan struct{}, heavy)}
	a.mu.watches = map[string]int{}
	return a
}

// tooMany writes a 429 with Retry-After.
func tooMany(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	writeError(w, http.StatusTooManyRequests, msg, ClassBusy)
}

// heavy wraps a route that reads a subgraph (lineage, impact, column
// lineage, neighbours): at most MaxHeavyReads run at once, the others are
// answered 429 at once (never queued: a queued read would only time out).
func (s *Server) heavy(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Input refused at once whatever the load: an oversized node id.
		if id := r.URL.Query().Get("nodeId"); len(id) > MaxNodeIDBytes {
			s.fail(w, r, badRequest("nodeId is %d bytes: the limit is %d bytes", len(id), MaxNodeIDBytes))
			return
		}
		select {
		case s.adm.heavy <- struct{}{}:
		default:
			s.refusedHeavy.Add(1)
			tooMany(w, fmt.Sprintf("%d graph reads are running (-explorer-max-heavy-reads); try again", cap(s.adm.heavy)))
			return
		}
		defer func() { <-s.adm.heavy }()
		h(w, r)
	}
}

// clientKey names the client of r for the per-client caps: its verified
// identity when the server authenticates, else its remote IP address.
func clientKey(r *http.Request) string {
	if id, ok := IdentityFrom(r.Context()); ok {
		return "id:" + id.String()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "ip:" + host
}

// openWatch counts one more watch stream of client, false beyond the cap.
func (s *Server) openWatch(client string) (release func(), ok bool) {
	a := s.adm
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.watches[client] >= s.cfg.MaxWatchesPerClient {
		return nil, false
	}
	a.mu.watches[client]++
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.mu.watches[client]--; a.mu.watches[client] <= 0 {
				delete(a.mu.watches, client)
			}
		})
	}, true
}

// Refused returns how many heavy reads and watch streams were answered 429
// (tests, metrics).
func (s *Server) Refused() (heavy, watches int64) {
	return s.refusedHeavy.Load(), s.refusedWatch.Load()
}

// graphHealth says whether the graph answers: "" when it does, else the
// class of the failure. It never waits behind the heavy reads: a read that
// succeeded within healthFresh, with no failed read since, answers it;
// else the result of a probe made within healthFresh with no failed read
// since; else one probe (shared by concurrent callers)
// bounded by healthProbe. A caller waits for the probe at most
// healthProbe plus a little and then takes the last known state.
func (s *Server) graphHealth(ctx context.Context) string {
	if time.Since(s.graph.lastOK()) < healthFresh {
		return ""
	}
	p := &s.adm.probe
	p.Lock()
	if !p.at.IsZero() && time.Since(p.at) < healthFresh && p.at.After(s.graph.lastFail()) && p.running == nil {
		c := p.class
		p.Unlock()
		return c
	}
	done := p.running
	if done == nil {
		done = make(chan struct{})
		p.running = done
		go s.probeGraph(done)
	}
	p.Unlock()
	t := time.NewTimer(healthProbe + 200*time.Millisecond)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
	if time.Since(s.graph.lastOK()) < healthFresh {
		return ""
	}
	p.Lock()
	defer p.Unlock()
	if p.at.IsZero() {
		return ClassTimeout
	}
	return p.class
}

// probeGraph reads g.inject(1) within healthProbe and records the result.
func (s *Server) probeGraph(done chan struct{}) {
	ctx, cancel := context.WithTimeout(s.bgCtx, healthProbe)
	defer cancel()
	_, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		return g.Inject(1)
	})
	class := ""
	var ge *GraphError
	switch {
	case err == nil:
	case errors.As(err, &ge):
		class = ge.Class
	default: // the probe's bound (or shutdown)
		class = ClassTimeout
	}
	p := &s.adm.probe
	p.Lock()
	p.at, p.class, p.running = time.Now(), class, nil
	p.Unlock()
	close(done)
}
