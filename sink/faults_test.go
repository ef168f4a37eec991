package sink

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/testkit/gremlinproxy"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

func startProxy(t testing.TB, endpoint string) *gremlinproxy.Proxy {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p, err := gremlinproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestRealFaults writes a workload through the fault proxy while it drops
// connections, stalls responses past RequestTimeout and answers with
// Neptune-shaped errors. Every batch must land exactly as the reference
// says, and the retries must be counted by class.
func TestRealFaults(t *testing.T) {
	ep := testenv.Gremlin(t)
	// gremlin-go v3.7.4: after a server-side drop, its read loop can block
	// forever on the protocol's lock in close() (errorCallback racing the
	// writer's Close); that goroutine is the driver's, one per dropped
	// connection, and is not counted. DESIGN.md "Sink" notes it.
	checkNoLeaks(t, "driver.(*gremlinServerWSProtocol).close")
	tests := []struct {
		name  string
		fault func(p *gremlinproxy.Proxy)
		code  Code
	}{
		{"cme", func(p *gremlinproxy.Proxy) { p.InjectError(3, "ConcurrentModificationException") }, CodeConcurrentModification},
		{"constraint", func(p *gremlinproxy.Proxy) { p.InjectError(2, "ConstraintViolationException") }, CodeConstraintViolation},
		{"readonly", func(p *gremlinproxy.Proxy) { p.InjectError(2, "ReadOnlyViolationException") }, CodeReadOnlyViolation},
		{"throttling", func(p *gremlinproxy.Proxy) { p.InjectError(3, "ThrottlingException") }, CodeThrottling},
		{"drop", func(p *gremlinproxy.Proxy) { p.Drop() }, CodeConnection},
		{"stall", nil, CodeTimeout},
	}
	forShapes(t, func(t *testing.T, shape string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if tt.code == CodeConnection && raceEnabled {
					// gremlin-go v3.7.4 reads and writes connection.state from its
					// read loop (errorCallback) and from writers without a lock;
					// a server-side drop makes -race report it. Not our code.
					t.Skip("gremlin-go v3.7.4 races on connection state after a drop; run without -race")
				}
				p := startProxy(t, ep)
				ns := testNS(t)
				w := genWorkloadNS(ns, 42, 16, 30, 25, 5)
				n := realSink(t, p.URL(), func(c *Config) {
					c.RequestTimeout = 300 * time.Millisecond
					c.BatchRecords = 40
					c.TraversalShape = shape
					c.Writers = 3
				})
				var mu sync.Mutex
				stalls := 0
				for i, b := range w.batches {
					if i%4 == 1 {
						if tt.fault != nil {
							tt.fault(p)
						} else {
							// Hold every response until the sink has given up on one
							// (its retry counter moves), then release.
							p.Stall(true)
							before := n.Stats().Retries[CodeTimeout]
							done := make(chan error, 1)
							go func() { done <- n.WriteBatch(context.Background(), b) }()
							for n.Stats().Retries[CodeTimeout] == before {
								select {
								case err := <-done:
									t.Fatalf("batch acknowledged while the server was stalled (err %v)", err)
								case <-time.After(10 * time.Millisecond): // polling a counter
								}
							}
							p.Stall(false)
							if err := <-done; err != nil {
								t.Fatal(err)
							}
							mu.Lock()
							stalls++
							mu.Unlock()
							continue
						}
					}
					writeAll(t, n, []Batch{b}, 0)
				}
				vs, es := dumpGraph(t, ep, ns)
				w.checkGraph(t, vs, es)
				st := n.Stats()
				t.Logf("stats %+v, proxy %+v", st, p.Stats())
				switch {
				case tt.code == CodeConnection && st.Retries[tt.code] == 0 && p.Stats().Dropped > 0:
					// Every drop hit an idle connection, which gremlin-go
					// replaced before the next request: nothing to retry.
					// The graph check above is what matters here.
					t.Logf("%d drops, none during a request", p.Stats().Dropped)
				case st.Retries[tt.code] == 0:
					t.Fatalf("no %s retries counted: %+v", tt.code, st.Retries)
				}
				if tt.code != CodeConnection && tt.code != CodeTimeout {
					if inj := p.Stats().Injected; inj == 0 || uint64(inj) > st.Retries[tt.code] {
						t.Fatalf("%d injected errors, %d retries counted", inj, st.Retries[tt.code])
					}
				}
			})
		}
	})
}
