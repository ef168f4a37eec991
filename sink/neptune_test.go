package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
)

func fakeSink(t *testing.T, g *fakeGraph, mod func(*Config)) *Neptune {
	t.Helper()
	return startSink(t, Config{dial: g.dial, Logger: testLogger(t), RequestTimeout: time.Second, CoalesceWait: -1,
		Retry: RetryPolicy{MaxAttempts: 6, BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}}, mod)
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" = valid
	}{
		{"local", Config{Endpoint: "ws://127.0.0.1:8182/gremlin"}, ""},
		{"neptune iam", Config{Endpoint: "wss://db.cluster-x.us-east-1.neptune.amazonaws.com:8182/gremlin", IAMAuth: true, Region: "us-east-1"}, ""},
		{"empty endpoint", Config{}, "Endpoint is empty"},
		{"http scheme", Config{Endpoint: "http://h:8182/gremlin"}, "scheme must be ws or wss"},
		{"iam without region", Config{Endpoint: "wss://h:8182/gremlin", IAMAuth: true}, "Region is empty"},
		{"iam over ws", Config{Endpoint: "ws://h:8182/gremlin", IAMAuth: true, Region: "us-east-1"}, "needs a wss://"},
		{"request above buffer", Config{Endpoint: "ws://h:1/gremlin", MaxRequestBytes: 2 << 20}, "below WriteBufferSize"},
		{"negative writers", Config{Endpoint: "ws://h:1/gremlin", Writers: -1}, "Writers = -1"},
		{"chained shape", Config{Endpoint: "ws://h:1/gremlin", TraversalShape: ShapeChained}, ""},
		{"unknown shape", Config{Endpoint: "ws://h:1/gremlin", TraversalShape: "nested"}, `TraversalShape = "nested"`},
		{"backoff inverted", Config{Endpoint: "ws://h:1/gremlin", Retry: RetryPolicy{BaseBackoff: time.Second, MaxBackoff: time.Millisecond}}, "BaseBackoff <= MaxBackoff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.WithDefaults().Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
	c := Config{Endpoint: "ws://h:1/gremlin"}.WithDefaults()
	if c.Writers != 4 || c.BatchRecords != 200 || c.VertexCacheSize != 100_000 || c.RequestTimeout != 30*time.Second ||
		c.TraversalShape != ShapeFlat {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		code Code
		act  action
	}{
		{neptuneErr("ConcurrentModificationException"), CodeConcurrentModification, actBackoff},
		{neptuneErr("ConstraintViolationException"), CodeConstraintViolation, actBackoff},
		{neptuneErr("ReadOnlyViolationException"), CodeReadOnlyViolation, actReconnect},
		{neptuneErr("ThrottlingException"), CodeThrottling, actBackoff},
		{neptuneErr("MemoryLimitExceededException"), CodeThrottling, actBackoff},
		{graph.ErrTimeout, CodeTimeout, actReconnect},
		{fmt.Errorf("wrapped: %w", graph.ErrTimeout), CodeTimeout, actReconnect},
		{errors.New("E0104: no successful connections could be made: dial tcp 127.0.0.1:1: connect: connection refused"), CodeConnection, actReconnect},
		{errors.New("websocket: close 1006 (abnormal closure): unexpected EOF"), CodeConnection, actReconnect},
		{errConnClosed, CodeConnection, actReconnect},
		{errors.New("E0502: error in read loop, error message '{code:500 message:Vertex does not exist for mergeE: dataset:1:a/b}'. statusCode: 244"), CodeMissingVertex, actFail},
		{errors.New("E0502: error in read loop, error message '{code:244 message:Vertex id could not be resolved from mergeE: dataset:1:a/b attributes:map[exceptions:[java.lang.IllegalArgumentException]]}'"), CodeMissingVertex, actFail},
		{errors.New("E0502: error in read loop, error message '{code:597 message:No signature of method}'. statusCode: 85"), CodeOther, actFail},
		{errors.New("E1201: Request size cannot exceed the configured WriteBufferSize"), CodeOther, actFail},
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			code, act := classify(tt.err)
			if code != tt.code || act != tt.act {
				t.Fatalf("classify(%q) = %s/%d, want %s/%d", tt.err, code, act, tt.code, tt.act)
			}
		})
	}
}

// TestFaultsFake injects every error class into the first requests and
// checks that every batch still lands exactly as the reference says, and
// that retries are counted by class.
func TestFaultsFake(t *testing.T) {
	checkNoLeaks(t)
	tests := []struct {
		name  string
		fault error
		code  Code
	}{
		{"cme", neptuneErr("ConcurrentModificationException"), CodeConcurrentModification},
		{"constraint", neptuneErr("ConstraintViolationException"), CodeConstraintViolation},
		{"readonly", neptuneErr("ReadOnlyViolationException"), CodeReadOnlyViolation},
		{"throttling", neptuneErr("ThrottlingException"), CodeThrottling},
		{"connection", errors.New("write tcp: broken pipe"), CodeConnection},
		{"stall", errStall, CodeTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := genWorkload(7, 12, 40, 30, 5)
			g := newFakeGraph()
			// Every third request fails once; the writer retries.
			g.fault = func(call, _ int, _ bool) error {
				if call%3 == 1 {
					return tt.fault
				}
				return nil
			}
			n := fakeSink(t, g, func(c *Config) { c.RequestTimeout = 20 * time.Millisecond })
			if r := writeAll(t, n, w.batches, 0); r != 0 {
				t.Fatalf("%d resends", r)
			}
			vs, es := g.dump()
			w.checkGraph(t, vs, es)
			st := n.Stats()
			if st.Retries[tt.code] == 0 {
				t.Fatalf("no %s retries counted: %+v", tt.code, st)
			}
			for c, k := range st.Retries {
				if c != tt.code {
					t.Fatalf("unexpected retries %s=%d", c, k)
				}
			}
			if tt.code == CodeReadOnlyViolation || tt.code == CodeTimeout || tt.code == CodeConnection {
				g.mu.Lock()
				dials := g.dials
				g.mu.Unlock()
				if dials <= n.cfg.Writers {
					t.Fatalf("%s: %d dials, want reconnects", tt.code, dials)
				}
			}
		})
	}
}

// TestGiveUpThenResend: a writer that keeps failing gives up with a
// retriable *Error; nothing is dropped, the resent batch lands.
func TestGiveUpThenResend(t *testing.T) {
	checkNoLeaks(t)
	w := genWorkload(3, 2, 20, 10, 3)
	g := newFakeGraph()
	var failing atomic.Bool
	failing.Store(true)
	g.fault = func(int, int, bool) error {
		if failing.Load() {
			return neptuneErr("ConcurrentModificationException")
		}
		return nil
	}
	n := fakeSink(t, g, nil)
	err := n.WriteBatch(context.Background(), w.batches[0])
	var se *Error
	if !errors.As(err, &se) || !se.Retriable || se.Code != CodeConcurrentModification || se.Attempts != 6 {
		t.Fatalf("err = %v, want a retriable CME *Error after 6 attempts", err)
	}
	if !IsRetriable(err) {
		t.Fatal("IsRetriable = false")
	}
	failing.Store(false)
	writeAll(t, n, w.batches, 0)
	vs, es := g.dump()
	w.checkGraph(t, vs, es)
}

// TestNotRetriableServerError: an unknown server error is returned at once.
func TestNotRetriableServerError(t *testing.T) {
	g := newFakeGraph()
	g.fault = func(int, int, bool) error {
		return errors.New("E0502: error in read loop, error message '{code:597 message:bad}'. statusCode: 85")
	}
	n := fakeSink(t, g, nil)
	err := n.WriteBatch(context.Background(), genWorkload(1, 1, 5, 5, 2).batches[0])
	var se *Error
	if !errors.As(err, &se) || se.Retriable || se.Code != CodeOther || se.Attempts != 1 {
		t.Fatalf("err = %v", err)
	}
}

// TestWritersPartitioned records the vertex ids each writer holds in flight
// and checks that no two writers ever hold the same vertex, under
// concurrent WriteBatch calls over overlapping vertices.
func TestWritersPartitioned(t *testing.T) {
	checkNoLeaks(t)
	w := genWorkload(11, 60, 30, 25, 4)
	g := newFakeGraph()
	var mu sync.Mutex
	held := map[string]int{} // vertex id -> writer holding it
	count := map[string]int{}
	var violations []string
	var requests atomic.Int64
	hook := func(writer int, ids []string, begin bool) {
		mu.Lock()
		defer mu.Unlock()
		if begin {
			requests.Add(1)
		}
		for _, id := range ids {
			if begin {
				if h, ok := held[id]; ok && h != writer {
					violations = append(violations, fmt.Sprintf("%s held by writers %d and %d", id, h, writer))
				}
				held[id] = writer
				count[id]++
			} else if count[id]--; count[id] == 0 {
				delete(held, id)
				delete(count, id)
			}
		}
	}
	// Stall-free but slow enough to overlap: yield inside each request.
	g.fault = func(int, int, bool) error { time.Sleep(100 * time.Microsecond); return nil }
	n := fakeSink(t, g, func(c *Config) {
		c.inFlight = hook
		c.BatchRecords = 7
		c.VertexCacheSize = -1
	})
	var wg sync.WaitGroup
	for shard := 0; shard < 6; shard++ {
		wg.Add(1)
		go func(shard int) {
			defer wg.Done()
			for i := shard; i < len(w.batches); i += 6 {
				if err := n.WriteBatch(context.Background(), w.batches[i]); err != nil {
					t.Error(err)
				}
			}
		}(shard)
	}
	wg.Wait()
	if len(violations) > 0 {
		t.Fatalf("%d violations, e.g. %s", len(violations), violations[0])
	}
	if requests.Load() < 100 {
		t.Fatalf("only %d requests: the test did not exercise concurrency", requests.Load())
	}
	vs, es := g.dump()
	w.checkGraph(t, vs, es)
}

// TestBackpressure: with the graph stalled, concurrent WriteBatch calls
// block; at most one request per writer is in flight and at most
// InFlightPerWriter wait per writer. Nothing returns before the graph
// answers.
func TestBackpressure(t *testing.T) {
	checkNoLeaks(t)
	w := genWorkload(5, 40, 20, 200, 10)
	g := newFakeGraph()
	release := make(chan struct{})
	var entered atomic.Int64
	g.fault = func(int, int, bool) error {
		entered.Add(1)
		g.stalled <- struct{}{}
		<-release
		return nil
	}
	n := fakeSink(t, g, func(c *Config) {
		c.Writers = 3
		c.InFlightPerWriter = 2
		c.BatchRecords = 5
		c.RequestTimeout = time.Hour
	})
	done := make(chan error, len(w.batches))
	for _, b := range w.batches {
		go func(b Batch) { done <- n.WriteBatch(context.Background(), b) }(b)
	}
	for i := 0; i < 3; i++ {
		<-g.stalled // every writer holds one request
	}
	// The queues fill and then every caller blocks: wait until all are full.
	waitFor(t, "every writer's queue to fill", func() bool {
		for _, wr := range n.writers {
			if len(wr.queue) < cap(wr.queue) {
				return false
			}
		}
		return true
	})
	if e := entered.Load(); e != 3 {
		t.Fatalf("%d requests reached the graph, want 3 (one per writer)", e)
	}
	select {
	case err := <-done:
		t.Fatalf("a WriteBatch returned (%v) while the graph was stalled", err)
	default:
	}
	close(release)
	for range w.batches {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	vs, es := g.dump()
	w.checkGraph(t, vs, es)
}

// TestVertexCache: a later batch does not resend known vertices; a graph
// that lost them (restart without persistence) is repaired through the
// missing-vertex path.
func TestVertexCache(t *testing.T) {
	checkNoLeaks(t)
	w := genWorkload(9, 30, 20, 15, 3)
	rpr := map[bool]float64{}
	for _, cache := range []bool{false, true} {
		g := newFakeGraph()
		n := fakeSink(t, g, func(c *Config) {
			c.BatchRecords = 200
			if !cache {
				c.VertexCacheSize = -1
			}
		})
		writeAll(t, n, w.batches, 0)
		vs, es := g.dump()
		w.checkGraph(t, vs, es)
		st := n.Stats()
		rpr[cache] = float64(st.Records) / float64(len(w.batches))
		t.Logf("cache=%v: %d requests, %d records, %.1f records/request, %.1f records/batch, %d cache hits",
			cache, st.Requests, st.Records, st.RecordsPerRequest(), rpr[cache], st.CacheHits)
		if cache {
			g.reset() // the graph lost everything
			writeAll(t, n, w.batches, 0)
			vs, es := g.dump()
			w.checkGraph(t, vs, es)
			if n.Stats().Retries[CodeMissingVertex] == 0 {
				t.Fatal("missing vertices not detected")
			}
		}
	}
	if rpr[true] >= rpr[false] {
		t.Fatalf("cache does not cut records per batch: %.1f >= %.1f", rpr[true], rpr[false])
	}
}

func TestVertexCacheBound(t *testing.T) {
	c := newVertexCache(3)
	for _, id := range []string{"a", "b", "c", "d"} {
		c.add(id, "")
	}
	if c.contains("a", "") || !c.contains("b", "") || c.len() != 3 {
		t.Fatal("LRU eviction wrong")
	}
	c.contains("b", "")
	c.add("e", "") // evicts c (b was used)
	if c.contains("c", "") || !c.contains("b", "") {
		t.Fatal("LRU order wrong")
	}
	c.remove("b")
	if c.contains("b", "") {
		t.Fatal("remove")
	}
}

func TestChunking(t *testing.T) {
	var vs []lineage.Vertex
	for i := 0; i < 450; i++ {
		vs = append(vs, lineage.DatasetVertex(lineage.Dataset{Namespace: "ns", Name: fmt.Sprint(i)}))
	}
	ch := chunkVertices(vs, 200, 1<<20)
	if len(ch) != 3 || len(ch[0]) != 200 || len(ch[2]) != 50 {
		t.Fatalf("chunks by records: %d", len(ch))
	}
	big := lineage.DatasetVertex(lineage.Dataset{Namespace: "ns", Name: strings.Repeat("x", 100_000)})
	ch = chunkVertices([]lineage.Vertex{big, big, big, vs[0]}, 200, 650_000)
	if len(ch) != 2 {
		t.Fatalf("chunks by bytes: %d", len(ch))
	}
	for _, c := range ch {
		size := requestBase
		for _, v := range c {
			size += vertexBytes(v)
		}
		if size > 650_000 && len(c) > 1 {
			t.Fatalf("chunk of %d bytes", size)
		}
	}
}

// TestCloseUnblocks: Close ends WriteBatch calls stuck on a stalled graph.
func TestCloseUnblocks(t *testing.T) {
	checkNoLeaks(t)
	g := newFakeGraph()
	g.fault = func(int, int, bool) error { return errStall }
	n, err := New(Config{dial: g.dial, Logger: testLogger(t), RequestTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.WriteBatch(context.Background(), genWorkload(1, 1, 5, 5, 2).batches[0]) }()
	<-g.stalled
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
	if err := n.WriteBatch(context.Background(), Batch{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// TestContextCancel: a cancelled ctx ends a stalled WriteBatch.
func TestContextCancel(t *testing.T) {
	checkNoLeaks(t)
	g := newFakeGraph()
	g.fault = func(int, int, bool) error { return errStall }
	n := fakeSink(t, g, func(c *Config) { c.RequestTimeout = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.WriteBatch(ctx, genWorkload(1, 1, 5, 5, 2).batches[0]) }()
	<-g.stalled
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// TestVertexCacheProps: the cache leaves out only a write that cannot
// change the graph (every property held with a newer stamp, or the same
// stamp and value); a changed facet value, or the same value with a newer
// stamp (the graph's _ts must move), is sent.
func TestVertexCacheProps(t *testing.T) {
	c := newVertexCache(3)
	p1 := lineage.MakeProps(lineage.StrLWW("state", "START", 1))
	p2 := p1.With(lineage.StrLWW("state", "COMPLETE", 2))
	c.add("r", p1)
	if !c.contains("r", p1) || c.contains("r", p2) {
		t.Fatal("a vertex with newer properties must be sent again")
	}
	if !c.contains("r", "") {
		t.Fatal("a bare vertex already written changes nothing: left out")
	}
	c.add("r", p2)
	if !c.contains("r", p2) || !c.contains("r", p1) {
		t.Fatal("properties older than the acknowledged ones change nothing: left out")
	}

	schemaA := lineage.MakeProps(lineage.StrLWW(lineage.PropSchema, `[{"name":"a"}]`, 10), lineage.StrLWW(lineage.PropDataSource, "s3://b", 10))
	c.add("d", schemaA)
	for _, tc := range []struct {
		name string
		p    lineage.Props
		sent bool
	}{
		{"same facets, same stamps", schemaA, false},
		{"one of them, older", lineage.MakeProps(lineage.StrLWW(lineage.PropSchema, `[{"name":"a"}]`, 9)), false},
		{"changed schema, newer", lineage.MakeProps(lineage.StrLWW(lineage.PropSchema, `[{"name":"b"}]`, 11)), true},
		{"changed schema, same stamp", lineage.MakeProps(lineage.StrLWW(lineage.PropSchema, `[{"name":"b"}]`, 10)), true},
		{"same schema, newer stamp", lineage.MakeProps(lineage.StrLWW(lineage.PropSchema, `[{"name":"a"}]`, 11)), true},
		{"a new facet", lineage.MakeProps(lineage.StrLWW(lineage.PropVersion, "7", 5)), true},
	} {
		if got := !c.contains("d", tc.p); got != tc.sent {
			t.Errorf("%s: sent %v, want %v", tc.name, got, tc.sent)
		}
	}
	// Two values acknowledged at one stamp: the graph holds the greater,
	// the cache does not know which, so both are sent again.
	c.add("d", lineage.MakeProps(lineage.StrLWW(lineage.PropDataSource, "s3://a", 10)))
	if c.contains("d", lineage.MakeProps(lineage.StrLWW(lineage.PropDataSource, "s3://b", 10))) ||
		c.contains("d", lineage.MakeProps(lineage.StrLWW(lineage.PropDataSource, "s3://a", 10))) {
		t.Error("a tie of two values must not be left out")
	}
}
