package sink

import (
	"context"

	"github.com/lineageflow/lineageflow/lineage"
)

// request is one part of a batch for one writer: a request's worth of
// vertices or of edges (or, built by [merge], the union of several queued
// requests of one kind).
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

// writer owns one connection and runs its queue in order.
type writer struct {
	n     *Neptune
	id    int
	queue chan *request
	c     conn // owned by run's goroutine
}

// run takes requests from the queue until the sink closes, gathers each
// with the requests that can share its traversal (see [writer.gather]) and
// sends them (see [writer.runGroup]). A request whose ctx is done is
// answered with its ctx error and not sent.
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
