package sink

import (
	"context"
	"sync/atomic"
	"time"
)

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
		at := map[string]int{}
		for _, r := range group {
			for _, v := range r.vertices {
				if i, ok := at[v.ID]; ok {
					m.vertices[i].Merge(v)
					continue
				}
				at[v.ID] = len(m.vertices)
				m.vertices = append(m.vertices, v)
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

func sumRecords(rs []*request) int {
	n := 0
	for _, r := range rs {
		n += r.records()
	}
	return n
}
