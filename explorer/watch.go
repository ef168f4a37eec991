package explorer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// hub runs one poller per distinct watched query (node id, up, down,
// maxNodes), shared by every viewer of that query: 50 viewers of one view
// cost one bounded lineage read per PollInterval, and each viewer holds
// only a one-slot channel of the latest event (the event bytes are shared).
type hub struct {
	s  *Server
	mu struct {
		sync.Mutex
		pollers map[LineageQuery]*poller
		closed  bool
	}
	wg sync.WaitGroup
}

type poller struct {
	h    *hub
	q    LineageQuery
	stop chan struct{}
	mu   struct {
		sync.Mutex
		subs map[*subscriber]struct{}
		last []byte // the latest event sent, for new subscribers
	}
}

// subscriber is one viewer: ch holds the latest event not yet written
// (a slow viewer skips intermediate versions, never blocks the poller).
type subscriber struct{ ch chan []byte }

func newHub(s *Server) *hub {
	h := &hub{s: s}
	h.mu.pollers = map[LineageQuery]*poller{}
	return h
}

// WatchStats returns the number of pollers and of viewers (tests, metrics).
func (s *Server) WatchStats() (pollers, viewers int) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	for _, p := range s.hub.mu.pollers {
		p.mu.Lock()
		viewers += len(p.mu.subs)
		p.mu.Unlock()
	}
	return len(s.hub.mu.pollers), viewers
}

// errTooManyPollers: a new view beyond MaxPollers.
var errTooManyPollers = errors.New("explorer: too many watched views")

// errHubClosed: the server is shutting down.
var errHubClosed = errors.New("explorer: server shutting down")

// subscribe adds a viewer of q, starting q's poller if it is the first
// (errTooManyPollers when MaxPollers views are polled already).
func (h *hub) subscribe(q LineageQuery) (*subscriber, func(), error) {
	sub := &subscriber{ch: make(chan []byte, 1)}
	h.mu.Lock()
	if h.mu.closed {
		h.mu.Unlock()
		return nil, nil, errHubClosed
	}
	p := h.mu.pollers[q]
	if p == nil && len(h.mu.pollers) >= h.s.cfg.MaxPollers {
		h.mu.Unlock()
		return nil, nil, errTooManyPollers
	}
	if p == nil {
		p = &poller{h: h, q: q, stop: make(chan struct{})}
		p.mu.subs = map[*subscriber]struct{}{}
		h.mu.pollers[q] = p
		h.wg.Add(1)
		go p.run()
	}
	p.mu.Lock()
	p.mu.subs[sub] = struct{}{}
	if p.mu.last != nil {
		sub.ch <- p.mu.last
	}
	p.mu.Unlock()
	h.mu.Unlock()
	unsubscribe := func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		p.mu.Lock()
		delete(p.mu.subs, sub)
		empty := len(p.mu.subs) == 0
		p.mu.Unlock()
		if empty && h.mu.pollers[q] == p {
			delete(h.mu.pollers, q)
			close(p.stop)
		}
	}
	return sub, unsubscribe, nil
}

func (h *hub) closeAll() {
	h.mu.Lock()
	h.mu.closed = true
	for q, p := range h.mu.pollers {
		close(p.stop)
		delete(h.mu.pollers, q)
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// run polls the query until stopped, sending a lineage event whenever the
// answer's version changes, and an error event when the read fails (once
// per change of error class; the next success sends the lineage again).
func (p *poller) run() {
	defer p.h.wg.Done()
	ctx, cancel := context.WithCancel(p.h.s.bgCtx)
	defer cancel()
	go func() {
		select {
		case <-p.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	var lastVersion, lastClass string
	tick := time.NewTicker(p.h.s.cfg.PollInterval)
	defer tick.Stop()
	for {
		l, err := p.h.s.Lineage(ctx, p.q)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			lastClass = ""
			if l.Version != lastVersion {
				lastVersion = l.Version
				p.h.s.index.observe(l.vertexIDs)
				p.broadcast(sseEvent("lineage", l.Version, l))
			}
		default:
			class, msg := errorClass(err)
			if class != lastClass {
				lastClass, lastVersion = class, ""
				p.broadcast(sseEvent("error", "", map[string]string{"error": class, "message": msg}))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// errorClass names an error for a watch error event.
func errorClass(err error) (class, msg string) {
	var ge *GraphError
	var nf *NotFoundError
	var br *BadRequestError
	switch {
	case errors.As(err, &ge):
		return ge.Class, classMessage(ge.Class)
	case errors.As(err, &nf):
		return "not_found", nf.Msg
	case errors.As(err, &br):
		return "bad_request", br.Msg
	case errors.As(err, new(*AmbiguousError)):
		return "ambiguous_node_id", err.Error()
	}
	return "internal", "internal error"
}

func (p *poller) broadcast(ev []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.last = ev
	for sub := range p.mu.subs {
		select {
		case sub.ch <- ev:
		default:
			// Replace the unread event with this newer one.
			select {
			case <-sub.ch:
			default:
			}
			sub.ch <- ev
		}
	}
}

// sseEvent formats one Server-Sent Event; JSON has no raw newline, so the
// data is one line.
func sseEvent(name, id string, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":"internal","message":"encode event"}`)
		name = "error"
	}
	out := make([]byte, 0, len(b)+64)
	out = append(out, "event: "...)
	out = append(out, name...)
	out = append(out, '\n')
	if id != "" {
		out = append(out, "id: "...)
		out = append(out, id...)
		out = append(out, '\n')
	}
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, '\n', '\n')
}

func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request) {
	q, err := s.lineageQuery(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// An unknown node is a 404 before the stream starts; a graph error is
	// not: the stream opens and says so in error events until it recovers.
	if p, err := parseNodeID(q.NodeID, false); err == nil {
		if _, err := s.resolve(r.Context(), p); err != nil {
			var ge *GraphError
			if !errors.As(err, &ge) {
				s.fail(w, r, err)
				return
			}
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming unsupported", "")
		return
	}
	release, ok := s.openWatch(clientKey(r))
	if !ok {
		s.refusedWatch.Add(1)
		tooMany(w, fmt.Sprintf("this client has %d watch streams open (-explorer-max-watches-per-client); close one", s.cfg.MaxWatchesPerClient))
		return
	}
	defer release()
	sub, unsubscribe, err := s.hub.subscribe(q)
	switch {
	case errors.Is(err, errTooManyPollers):
		s.refusedWatch.Add(1)
		tooMany(w, fmt.Sprintf("%d views are watched (-explorer-max-pollers); try again", s.cfg.MaxPollers))
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "server shutting down", "")
		return
	}
	defer unsubscribe()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("retry: 2000\n\n"))
	flusher.Flush()
	hb := time.NewTicker(s.cfg.Heartbeat)
	defer hb.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.bgCtx.Done():
			return
		case ev := <-sub.ch:
			if _, err := w.Write(ev); err != nil {
				return
			}
			flusher.Flush()
		case <-hb.C:
			if _, err := w.Write([]byte(": heartbeat\n\n")); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}
