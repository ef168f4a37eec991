package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/lineageflow/lineageflow/lineage"
)

// conn is one writer's connection to the graph. Each call runs one request
// as one traversal and blocks until the server answers, the connection
// fails, or Close is called (then it returns promptly). Only the owning
// writer calls UpsertVertices and UpsertEdges; Close may come from any
// goroutine.
type conn interface {
	UpsertVertices(vs []lineage.Vertex) error
	UpsertEdges(es []lineage.Edge) error
	Close()
}

// dialFunc opens writer w's connection.
type dialFunc func(ctx context.Context, w int) (conn, error)

// Neptune is a [Writer] to Amazon Neptune (or Gremlin Server) over
// Gremlin websockets.
//
// It runs Config.Writers writers, each with its own connection and bounded
// queue. A batch is split by vertex hash: vertex v goes to writer
// xxhash(v.ID) mod N and edge e to writer xxhash(e.OutV) mod N. All its
// vertices are written and acknowledged before any of its edges is sent
// (mergeE needs both endpoints). Each request is one traversal of mergeV
// (or mergeE) upserts, flat (injected rows, default) or chained (see
// Config.TraversalShape), whose property rules converge whatever the
// order and number of deliveries (see DESIGN.md, "Sink").
//
// Retries (see [Code]) happen inside the writers, bounded by
// Config.Retry; WriteBatch then returns an [*Error] and the caller sends
// the whole batch again. WriteBatch is safe for concurrent use.
type Neptune struct {
	cfg     Config
	log     *slog.Logger
	writers []*writer
	cache   *vertexCache
	stats   stats

	quit      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup // writer loops and background connection closes
}

// New starts the writers of a Neptune sink. Connections are opened lazily
// by each writer's first request (and reopened after failures), so New
// does not fail when the graph is down.
func New(cfg Config) (*Neptune, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Neptune{cfg: cfg, log: cfg.Logger, quit: make(chan struct{})}
	n.stats.retries = map[Code]*atomic.Uint64{}
	for _, c := range []Code{CodeConcurrentModification, CodeConstraintViolation, CodeReadOnlyViolation,
		CodeThrottling, CodeTimeout, CodeConnection, CodeMissingVertex, CodeOther} {
		n.stats.retries[c] = new(atomic.Uint64)
	}
	if cfg.VertexCacheSize > 0 {
		n.cache = newVertexCache(cfg.VertexCacheSize)
	}
	if n.cfg.dial == nil {
		d, err := newGremlinDialer(cfg)
		if err != nil {
			return nil, err
		}
		n.cfg.dial = d
	}
	n.writers = make([]*writer, cfg.Writers)
	for i := range n.writers {
		w := &writer{n: n, id: i, queue: make(chan *request, cfg.InFlightPerWriter)}
		n.writers[i] = w
		n.wg.Add(1)
		go w.run()
	}
	return n, nil
}

// request is one part of a batch for one writer: a request's worth of
// vertices or of edges.
type request struct {
	ctx      context.Context
	vertices []lineage.Vertex
	edges    []lineage.Edge
	done     chan<- result
}

type result struct {
	req *request
	err error
}

// writerOf returns the index of the writer that owns vertex id.
func (n *Neptune) writerOf(id string) int {
	return int(xxhash.Sum64String(id) % uint64(len(n.writers)))
}

// WriteBatch makes b true in the graph. It blocks until every part of b
// is acknowledged, ctx is done, or a writer gives up; see [Writer]. On an
// error nothing is assumed written: send b again.
func (n *Neptune) WriteBatch(ctx context.Context, b Batch) error {
	select {
	case <-n.quit:
		return ErrClosed
	default:
	}
	n.stats.batches.Add(1)
	vs := b.Vertices
	useCache := true
	for try := 0; ; try++ {
		if err := n.writeVertices(ctx, vs, useCache); err != nil {
			return fmt.Errorf("sink: batch %s: %w", b.Key, err)
		}
		err := n.writeEdges(ctx, b.Edges)
		var se *Error
		if err != nil && try == 0 && errors.As(err, &se) && se.Code == CodeMissingVertex {
			// The graph lacks an endpoint that the cache (or an earlier
			// ack) said exists: forget the batch's vertices, write them
			// all again, then the edges.
			n.stats.retry(CodeMissingVertex)
			if n.cache != nil {
				for _, v := range vs {
					n.cache.remove(v.ID)
				}
				for _, e := range b.Edges {
					n.cache.remove(e.OutV)
					n.cache.remove(e.InV)
				}
			}
			n.log.Warn("sink: edge endpoint missing in graph; rewriting the batch's vertices", "batch", b.Key, "err", err)
			useCache = false
			continue
		}
		if err != nil {
			return fmt.Errorf("sink: batch %s: %w", b.Key, err)
		}
		return nil
	}
}

func (n *Neptune) writeVertices(ctx context.Context, vs []lineage.Vertex, useCache bool) error {
	parts := make([][]lineage.Vertex, len(n.writers))
	seen := make(map[string]struct{}, len(vs))
	for _, v := range vs {
		if _, dup := seen[v.ID]; dup {
			continue
		}
		seen[v.ID] = struct{}{}
		if useCache && n.cache != nil && n.cache.contains(v.ID) {
			n.stats.cacheHits.Add(1)
			continue
		}
		w := n.writerOf(v.ID)
		parts[w] = append(parts[w], v)
	}
	var reqs [][]*request
	for w, p := range parts {
		for _, chunk := range chunkVertices(p, n.cfg.BatchRecords, n.cfg.MaxRequestBytes) {
			for len(reqs) <= w {
				reqs = append(reqs, nil)
			}
			reqs[w] = append(reqs[w], &request{ctx: ctx, vertices: chunk})
		}
	}
	return n.dispatch(ctx, reqs, func(r *request) {
		if n.cache != nil {
			for _, v := range r.vertices {
				n.cache.add(v.ID)
			}
		}
	})
}

func (n *Neptune) writeEdges(ctx context.Context, es []lineage.Edge) error {
	parts := make([][]lineage.Edge, len(n.writers))
	for _, e := range es {
		w := n.writerOf(e.OutV)
		parts[w] = append(parts[w], e)
	}
	reqs := make([][]*request, len(n.writers))
	for w, p := range parts {
		for _, chunk := range chunkEdges(p, n.cfg.BatchRecords, n.cfg.MaxRequestBytes) {
			reqs[w] = append(reqs[w], &request{ctx: ctx, edges: chunk})
		}
	}
	return n.dispatch(ctx, reqs, nil)
}

// dispatch queues reqs[w] on writer w, in order, and waits for every
// reply. ok runs for each acknowledged request. It returns the first
// error; it always waits for the replies of the requests it queued
// (writers skip the requests of a cancelled ctx), so no part of a failed
// batch is still being written when WriteBatch returns.
func (n *Neptune) dispatch(ctx context.Context, reqs [][]*request, ok func(*request)) error {
	total := 0
	for _, rs := range reqs {
		total += len(rs)
	}
	if total == 0 {
		return nil
	}
	done := make(chan result, total)
	// One feeder per writer keeps each writer's parts in order while a
	// full queue of one writer does not hold back the others.
	sent := make(chan int, len(reqs))
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w, rs := range reqs {
		if len(rs) == 0 {
			sent <- 0
			continue
		}
		go func(w int, rs []*request) {
			k := 0
			for _, r := range rs {
				r.ctx = fctx
				r.done = done
				select {
				case n.writers[w].queue <- r:
					k++
				case <-fctx.Done():
					sent <- k
					return
				case <-n.quit:
					sent <- k
					return
				}
			}
			sent <- k
		}(w, rs)
	}
	queued := 0
	for range reqs {
		queued += <-sent
	}
	var first error
	if queued < total {
		first = ctx.Err()
		if first == nil {
			first = ErrClosed
		}
	}
	for i := 0; i < queued; i++ {
		var r result
		select {
		case r = <-done:
		case <-n.quit:
			return ErrClosed
		}
		if r.err != nil {
			if first == nil {
				first = r.err
				cancel() // writers skip the rest of this batch
			}
			continue
		}
		if ok != nil {
			ok(r.req)
		}
	}
	return first
}

// Close stops the writers and closes their connections. WriteBatch calls
// in progress return [ErrClosed]. ctx bounds the wait.
func (n *Neptune) Close(ctx context.Context) error {
	n.closeOnce.Do(func() { close(n.quit) })
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sink: close: %w", ctx.Err())
	}
}

// writer owns one connection and runs its queue in order.
type writer struct {
	n     *Neptune
	id    int
	queue chan *request
	c     conn // owned by run's goroutine
}

func (w *writer) run() {
	defer w.n.wg.Done()
	defer w.dropConn()
	var next *request // taken from the queue while gathering, not merged
	for {
		r := next
		next = nil
		if r == nil {
			select {
			case r = <-w.queue:
			case <-w.n.quit:
				return
			}
		}
		if err := r.ctx.Err(); err != nil {
			r.done <- result{req: r, err: err}
			continue
		}
		var group []*request
		group, next = w.gather(r)
		w.runGroup(group)
	}
}

// gather returns r and the requests of the same kind (edges or vertices)
// that follow it in the queue, up to BatchRecords records and about
// MaxRequestBytes in all, to be sent as one traversal. For edges it waits
// up to CoalesceWait for them; for vertices it takes only what is queued.
// A request of the other kind, or one that does not fit, ends the group
// and is returned as next. Requests whose ctx is done are answered here.
func (w *writer) gather(r *request) (group []*request, next *request) {
	n := w.n
	group = []*request{r}
	records, size := r.records(), r.bytes()
	var deadline <-chan time.Time
	if r.edges != nil && n.cfg.CoalesceWait > 0 {
		t := time.NewTimer(n.cfg.CoalesceWait)
		defer t.Stop()
		deadline = t.C
	}
	for records < n.cfg.BatchRecords {
		var q *request
		if deadline == nil {
			select {
			case q = <-w.queue:
			default:
				return group, nil
			}
		} else {
			select {
			case q = <-w.queue:
			case <-deadline:
				return group, nil
			case <-n.quit:
				return group, nil
			}
		}
		if err := q.ctx.Err(); err != nil {
			q.done <- result{req: q, err: err}
			continue
		}
		if (q.edges != nil) != (r.edges != nil) || records+q.records() > n.cfg.BatchRecords ||
			size+q.bytes()-requestBase > n.cfg.MaxRequestBytes {
			return group, q
		}
		group = append(group, q)
		records, size = records+q.records(), size+q.bytes()-requestBase
	}
	return group, nil
}

// runGroup sends a gathered group as one request (merged: an edge or a
// vertex that several requests carry is sent once) and answers each of
// its requests with the outcome.
func (w *writer) runGroup(group []*request) {
	if len(group) == 1 {
		r := group[0]
		r.done <- result{req: r, err: w.do(r)}
		return
	}
	m, release := merge(group)
	err := w.do(m)
	release()
	w.n.stats.coalesced.Add(uint64(sumRecords(group) - m.records()))
	for _, r := range group {
		e := err
		if e != nil && r.ctx.Err() != nil {
			e = r.ctx.Err()
		}
		r.done <- result{req: r, err: e}
	}
}

// merge folds group (all edges or all vertices) into one request whose
// ctx ends when every member's ctx has ended: one cancelled batch must
// not abandon the others. release frees the ctx's resources.
func merge(group []*request) (m *request, release func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var live atomic.Int64
	live.Store(int64(len(group)))
	stops := make([]func() bool, len(group))
	for i, r := range group {
		stops[i] = context.AfterFunc(r.ctx, func() {
			if live.Add(-1) == 0 {
				cancel()
			}
		})
	}
	m = &request{ctx: ctx}
	if group[0].edges != nil {
		at := map[string]int{}
		for _, r := range group {
			for _, e := range r.edges {
				if i, ok := at[e.ID]; ok {
					m.edges[i].Merge(e)
					continue
				}
				at[e.ID] = len(m.edges)
				m.edges = append(m.edges, e)
			}
		}
	} else {
		seen := map[string]struct{}{}
		for _, r := range group {
			for _, v := range r.vertices {
				if _, ok := seen[v.ID]; !ok {
					seen[v.ID] = struct{}{}
					m.vertices = append(m.vertices, v)
				}
			}
		}
	}
	return m, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

func (r *request) records() int { return len(r.vertices) + len(r.edges) }

// bytes is the estimated serialized size of r (see chunk.go).
func (r *request) bytes() int {
	b := requestBase
	for _, v := range r.vertices {
		b += vertexBytes(v)
	}
	for _, e := range r.edges {
		b += edgeBytes(e)
	}
	return b
}

func sumRecords(rs []*request) int {
	n := 0
	for _, r := range rs {
		n += r.records()
	}
	return n
}

// dropConn closes the writer's connection in the background (a close may
// wait for the socket) and forgets it.
func (w *writer) dropConn() {
	if w.c == nil {
		return
	}
	c := w.c
	w.c = nil
	w.n.wg.Add(1)
	go func() { defer w.n.wg.Done(); c.Close() }()
}

// do runs one request with retries.
func (w *writer) do(r *request) error {
	n := w.n
	op := "vertices"
	if r.edges != nil {
		op = "edges"
	}
	var ids []string
	if n.cfg.inFlight != nil {
		ids = requestVertexIDs(r)
		n.cfg.inFlight(w.id, ids, true)
		defer n.cfg.inFlight(w.id, ids, false)
	}
	for attempt := 1; ; attempt++ {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		err := w.call(r)
		if err == nil {
			n.stats.requests.Add(1)
			n.stats.records.Add(uint64(len(r.vertices) + len(r.edges)))
			return nil
		}
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		code, act := classify(err)
		if act == actReconnect {
			w.dropConn()
		}
		if act == actFail || attempt >= n.cfg.Retry.MaxAttempts {
			n.stats.failures.Add(1)
			return &Error{Code: code, Retriable: act != actFail || code == CodeMissingVertex,
				Attempts: attempt, Writer: w.id, Err: err, Op: op}
		}
		n.stats.retry(code)
		n.log.Debug("sink: retrying", "writer", w.id, "op", op, "code", string(code), "attempt", attempt, "err", err)
		if !w.backoff(r.ctx, attempt) {
			if err := r.ctx.Err(); err != nil {
				return err
			}
			return ErrClosed
		}
	}
}

// call sends r once on the writer's connection, opening it first if
// needed, and abandons it after RequestTimeout.
func (w *writer) call(r *request) error {
	n := w.n
	if w.c == nil {
		dctx, cancel := context.WithTimeout(r.ctx, n.cfg.DialTimeout)
		c, err := n.cfg.dial(dctx, w.id)
		cancel()
		if err != nil {
			return fmt.Errorf("dial: %w", err)
		}
		w.c = c
	}
	c := w.c
	ch := make(chan error, 1)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if r.edges != nil {
			ch <- c.UpsertEdges(r.edges)
		} else {
			ch <- c.UpsertVertices(r.vertices)
		}
	}()
	t := time.NewTimer(n.cfg.RequestTimeout)
	defer t.Stop()
	select {
	case err := <-ch:
		return err
	case <-t.C:
		return errTimeout
	case <-r.ctx.Done():
		// The request may still land; that is harmless (idempotent), but
		// the connection must not carry its answer into the next call.
		w.dropConn()
		return r.ctx.Err()
	case <-n.quit:
		w.dropConn()
		return ErrClosed
	}
}

// backoff waits before retry number attempt: exponential, full jitter.
// It reports false when ctx is done or the sink is closing.
func (w *writer) backoff(ctx context.Context, attempt int) bool {
	p := w.n.cfg.Retry
	ceil := p.BaseBackoff << min(attempt-1, 30)
	if ceil > p.MaxBackoff || ceil <= 0 {
		ceil = p.MaxBackoff
	}
	d := time.Duration(0)
	if ceil > 0 {
		d = time.Duration(rand.Int64N(int64(ceil)))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-w.n.quit:
		return false
	}
}

func requestVertexIDs(r *request) []string {
	var ids []string
	for _, v := range r.vertices {
		ids = append(ids, v.ID)
	}
	for _, e := range r.edges {
		ids = append(ids, e.OutV)
	}
	return ids
}

// Stats is a snapshot of the sink's counters.
type Stats struct {
	Batches   uint64          // WriteBatch calls
	Requests  uint64          // acknowledged requests (traversals)
	Records   uint64          // vertices and edges in acknowledged requests
	Failures  uint64          // requests given up after their retries
	CacheHits uint64          // vertices not sent because the cache knew them
	Coalesced uint64          // records not sent because a merged request carried them already
	Retries   map[Code]uint64 // retries by error class
}

// RecordsPerRequest is Records/Requests.
func (s Stats) RecordsPerRequest() float64 {
	if s.Requests == 0 {
		return 0
	}
	return float64(s.Records) / float64(s.Requests)
}

type stats struct {
	batches, requests, records, failures, cacheHits, coalesced atomic.Uint64
	retries                                                    map[Code]*atomic.Uint64 // fixed keys, set in New
}

func (s *stats) retry(c Code) { s.retries[c].Add(1) }

// Stats returns the sink's counters. Safe for concurrent use.
func (n *Neptune) Stats() Stats {
	s := Stats{
		Batches: n.stats.batches.Load(), Requests: n.stats.requests.Load(),
		Records: n.stats.records.Load(), Failures: n.stats.failures.Load(),
		CacheHits: n.stats.cacheHits.Load(), Coalesced: n.stats.coalesced.Load(), Retries: map[Code]uint64{},
	}
	for c, v := range n.stats.retries {
		if x := v.Load(); x > 0 {
			s.Retries[c] = x
		}
	}
	return s
}
