package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/lineageflow/lineageflow/lineage"
)

// conn is one writer's connection to the graph. Each call runs one
// request (possibly several merged, see coalesce.go) as one traversal and
// blocks until the server answers, the connection fails, or Close is
// called (then it returns promptly). Only the owning writer calls
// UpsertVertices and UpsertEdges; Close may come from any goroutine.
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
// xxhash(v.ID) mod N and edge e to writer xxhash(e.OutV) mod N (see
// partition.go). All its vertices are written and acknowledged before any
// of its edges is sent (mergeE needs both endpoints). A writer sends the
// requests it finds queued together (edge requests of several batches,
// gathered for up to Config.CoalesceWait; see coalesce.go) as one
// traversal of mergeV (or mergeE) upserts, flat (injected rows, default)
// or chained (see Config.TraversalShape), whose property rules converge
// whatever the order and number of deliveries (see DESIGN.md, "Sink").
//
// Retries (see [Code]) happen inside the writers, bounded by Config.Retry
// (see retry.go); WriteBatch then returns an [*Error] and the caller sends
// the whole batch again. The one retry WriteBatch makes itself is for
// [CodeMissingVertex]: it rewrites the batch's vertices, bypassing the
// vertex cache, then its edges, once. WriteBatch is safe for concurrent
// use.
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
	n.stats.init()
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
