package explorer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	lfgraph "github.com/lineageflow/lineageflow/graph" // the name graph is this package's reader type
)

// Config configures a [Server]. Zero values mean the defaults.
type Config struct {
	// Dialer reaches the Gremlin endpoint (the same kind of graph.Dialer
	// `run` writes through). Required.
	Dialer *lfgraph.Dialer
	// Connections is the websocket pool size (default 4).
	Connections int
	// RequestTimeout bounds one Gremlin read (default 10 s).
	RequestTimeout time.Duration
	// MaxFanOut is the most neighbours of one node followed in one
	// direction per level (default 100); the rest are "more" counts.
	MaxFanOut int
	// DefaultMaxNodes is maxNodes when a request does not give it (default
	// 300); MaxNodes the largest a request may ask (default 2000).
	DefaultMaxNodes, MaxNodes int
	// MaxDepth is the largest up/down/depth accepted (default 20).
	MaxDepth int
	// MaxImpact is the most nodes one impact list holds (default 10,000).
	MaxImpact int
	// CountCap bounds every degree count and edge scan of one vertex
	// (default 100,000): a hub costs at most this much per read.
	CountCap int
	// RunScan is the most Run vertices of one job looked at for its state
	// (default 1,000).
	RunScan int
	// IndexRefresh is how often the search index reads what is new since
	// its last read (default 30 s): the endpoints of edges first seen at
	// most IndexLateness (default 5 min) before that read, by the
	// producers' event time. IndexFullRefresh is how often it is reloaded
	// in full instead (default 10 min, or IndexRefresh if longer), which
	// also drops deleted vertices and finds what a delta cannot (vertices
	// without edges, late events).
	IndexRefresh, IndexLateness, IndexFullRefresh time.Duration
	// PollInterval is how often a watched subgraph is read again (default
	// 500 ms); Heartbeat how often an idle watch stream gets an SSE comment
	// (default 15 s).
	PollInterval, Heartbeat time.Duration
	// StaleAfter: a lineage edge not seen for this long (by its lastSeen,
	// before now or the asked time) is stale, left out of lineage answers
	// unless stale=show (0: no edge is stale).
	StaleAfter time.Duration
	// MaxHeavyReads is the most subgraph reads (lineage, impact, column
	// lineage, neighbours, Marquez lineage) served at once (default 8);
	// beyond it a request is answered 429 with Retry-After at once.
	MaxHeavyReads int
	// MaxWatchesPerClient is the most watch streams one client (its
	// verified identity, else its remote IP address) holds open (default
	// 16); MaxPollers the most distinct watched views polled at once
	// (default 256). Beyond either, 429 with Retry-After.
	MaxWatchesPerClient, MaxPollers int
	// Archive, when set, serves Marquez's GET /api/v1/events/lineage from
	// the event archive (nil: that route answers 501 saying why).
	Archive *ArchiveConfig
	// UI serves every non-API path (nil: 404).
	UI http.Handler
	// Logger receives the server's logs (default slog.Default()).
	Logger *slog.Logger
}

// WithDefaults returns c with its unset fields set.
func (c Config) WithDefaults() Config {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	defd := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Connections, 4)
	def(&c.MaxFanOut, 100)
	def(&c.DefaultMaxNodes, 300)
	def(&c.MaxNodes, 2000)
	def(&c.MaxDepth, 20)
	def(&c.MaxImpact, 10_000)
	def(&c.CountCap, 100_000)
	def(&c.RunScan, 1000)
	def(&c.MaxHeavyReads, 8)
	def(&c.MaxWatchesPerClient, 16)
	def(&c.MaxPollers, 256)
	defd(&c.RequestTimeout, 10*time.Second)
	defd(&c.IndexRefresh, 30*time.Second)
	defd(&c.IndexLateness, 5*time.Minute)
	defd(&c.IndexFullRefresh, max(10*time.Minute, c.IndexRefresh))
	defd(&c.PollInterval, 500*time.Millisecond)
	defd(&c.Heartbeat, 15*time.Second)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Archive != nil {
		a := *c.Archive
		def(&a.MaxDays, 7)
		defd(&a.Timeout, 30*time.Second)
		c.Archive = &a
	}
	return c
}

// Validate says what is wrong with c (after WithDefaults).
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("explorer: "+format, a...)) }
	if c.Dialer == nil {
		bad("Dialer is nil: build one with graph.NewDialer for the Gremlin endpoint")
	}
	if c.Connections < 1 || c.MaxFanOut < 1 || c.DefaultMaxNodes < 1 || c.MaxDepth < 1 || c.CountCap < 1 || c.RunScan < 1 || c.MaxImpact < 1 {
		bad("Connections, MaxFanOut, DefaultMaxNodes, MaxDepth, CountCap, RunScan and MaxImpact must be positive")
	}
	if c.MaxHeavyReads < 1 || c.MaxWatchesPerClient < 1 || c.MaxPollers < 1 {
		bad("MaxHeavyReads (-explorer-max-heavy-reads), MaxWatchesPerClient (-explorer-max-watches-per-client) and MaxPollers (-explorer-max-pollers) must be positive")
	}
	if c.MaxNodes < c.DefaultMaxNodes {
		bad("MaxNodes (%d, -explorer-max-nodes) is below DefaultMaxNodes (%d, the maxNodes of a request that gives none): raise it", c.MaxNodes, c.DefaultMaxNodes)
	}
	if c.RequestTimeout < 0 || c.IndexRefresh < 0 || c.IndexLateness < 0 || c.IndexFullRefresh < 0 || c.PollInterval < 10*time.Millisecond || c.Heartbeat < 0 || c.StaleAfter < 0 {
		bad("RequestTimeout, IndexRefresh, IndexLateness, IndexFullRefresh, Heartbeat and StaleAfter must be positive, PollInterval at least 10ms")
	}
	if c.Archive != nil && (c.Archive.MaxDays < 1 || c.Archive.MaxDays > 366 || c.Archive.Timeout < 0) {
		bad("Archive.MaxDays (%d, -archive-max-days) must be 1 to 366 and Archive.Timeout positive", c.Archive.MaxDays)
	}
	if c.IndexFullRefresh < c.IndexRefresh {
		bad("IndexFullRefresh (%v, -explorer-index-full-refresh) is below IndexRefresh (%v, -explorer-index-refresh): a full reload cannot be more frequent than the incremental one", c.IndexFullRefresh, c.IndexRefresh)
	}
	return errors.Join(errs...)
}

// Server is the read-only explorer API over the lineage graph: the
// Marquez-compatible routes under /api/v1 and ours under /api/lf/v1 (see
// explorer/openapi.yaml). It never writes to the graph.
type Server struct {
	cfg     Config
	log     *slog.Logger
	graph   *graph
	index   *index
	hub     *hub
	landing *landingCache
	mux     *http.ServeMux
	adm     *admission

	refusedHeavy, refusedWatch atomic.Int64

	stop    context.CancelFunc
	bg      sync.WaitGroup
	bgCtx   context.Context
	closing sync.Once
}

// New returns a Server; Start begins its background work (index loads).
func New(cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, index: newIndex(), landing: newLandingCache(), adm: newAdmission(cfg.MaxHeavyReads)}
	s.graph = &graph{dialer: cfg.Dialer, conns: cfg.Connections, timeout: cfg.RequestTimeout, log: cfg.Logger}
	s.bgCtx, s.stop = context.WithCancel(context.Background())
	s.hub = newHub(s)
	s.routes()
	return s, nil
}

// Start loads the search index in the background and refreshes it every
// IndexRefresh until Close: a count of the indexed labels first; while the
// counts changed within the last IndexLateness (a vertex is written before
// its edges, and an edge may come that much later than the change), a read
// of what is new (loadNew); a full load every IndexFullRefresh, when a read
// of what is new is too big, and instead of the reads of what is new when
// the last one took longer than the last full load (TinkerGraph has no
// range index: there the edge scan of loadNew costs more than the id scan
// of a full load, bench/RESULTS.md).
func (s *Server) Start() {
	s.startLanding()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		var lastFull, mark, changed time.Time // last full load, last successful refresh, last count change
		var counts vertexCounts               // of the graph at the last count
		var fullCost, deltaCost time.Duration // of the last full load, of the last read of what is new
		full := func(start time.Time, c vertexCounts) {
			if err := s.index.load(s.bgCtx, s.graph); err != nil {
				if s.bgCtx.Err() == nil {
					s.log.Warn("explorer: search index load failed; retrying", "err", err)
				}
				return
			}
			fullCost = time.Since(start)
			lastFull, mark, counts, changed = start, start, c, time.Time{}
			s.log.Debug("explorer: search index loaded", "ms", fullCost.Milliseconds())
		}
		for {
			start := time.Now()
			if lastFull.IsZero() || start.Sub(lastFull) >= s.cfg.IndexFullRefresh || s.index.failing() {
				c, _ := countVertices(s.bgCtx, s.graph) // nil on error: the next refresh reads what is new
				full(start, c)
			} else {
				c, err := countVertices(s.bgCtx, s.graph)
				if err != nil || !c.equal(counts) {
					counts, changed = c, start
				}
				switch {
				case start.Sub(changed) > s.cfg.IndexLateness:
					s.index.deltaSkips.Add(1)
					mark = start
				case !s.index.forceDelta.Load() && err == nil && deltaCost > fullCost:
					full(start, c) // reads the new vertices with or without edges: no tail of reads
				default:
					n, err := s.index.loadNew(s.bgCtx, s.graph, mark.Add(-s.cfg.IndexLateness).UnixMilli())
					switch {
					case errors.Is(err, errDeltaTooBig):
						lastFull = time.Time{} // reload in full at once
						continue
					case err != nil:
						if s.bgCtx.Err() == nil {
							s.log.Warn("explorer: search index update failed; retrying", "err", err)
						}
					default:
						deltaCost, mark = time.Since(start), start
						s.log.Debug("explorer: search index updated", "new", n, "ms", deltaCost.Milliseconds())
					}
				}
			}
			wait := s.cfg.IndexRefresh
			if s.index.failing() {
				wait = min(wait, 2*time.Second)
			}
			select {
			case <-s.bgCtx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
}

// RefreshIndex reloads the search index now (tests, and after a bulk load).
func (s *Server) RefreshIndex(ctx context.Context) error { return s.index.load(ctx, s.graph) }

// EndStreams ends the watch streams and the background work (index
// refresh, pollers) but keeps the graph open: a graceful shutdown calls it
// first, so draining the in-flight requests does not wait on streams that
// never end, then Close once they are answered. Idempotent.
func (s *Server) EndStreams() {
	s.stop()
	s.hub.closeAll()
}

// Close stops the background work and the watch pollers and closes the
// graph connection.
func (s *Server) Close() {
	s.closing.Do(func() {
		s.stop()
		s.hub.closeAll()
		s.bg.Wait()
		s.graph.close()
	})
}

// Handler is the HTTP handler of the API and (Config.UI) the web UI.
func (s *Server) Handler() http.Handler { return s.mux }

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /api/lf/v1/lineage", s.heavy(s.handleLineage))
	m.HandleFunc("GET /api/lf/v1/node", s.handleNode)
	m.HandleFunc("GET /api/lf/v1/search", s.handleSearch)
	m.HandleFunc("GET /api/lf/v1/column-lineage", s.heavy(s.handleColumnLineage))
	m.HandleFunc("GET /api/lf/v1/watch", s.handleWatch)
	m.HandleFunc("GET /api/lf/v1/health", s.handleHealth)
	m.HandleFunc("GET /api/lf/v1/impact", s.heavy(s.handleImpact))
	m.HandleFunc("GET /api/lf/v1/landing", s.handleLanding)
	m.HandleFunc("GET /api/lf/v1/namespaces", s.handleNamespaces)
	m.HandleFunc("GET /api/lf/v1/browse", s.handleBrowse)
	m.HandleFunc("GET /api/lf/v1/neighbors", s.heavy(s.handleNeighbors))
	s.marquezRoutes(m)
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path), "")
	})
	if s.cfg.UI != nil {
		m.Handle("/", s.cfg.UI)
	}
	s.mux = m
}

// errorBody is the JSON of every error answer (Marquez's ErrorMessage
// shape, plus the class of a graph error).
type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Error   string `json:"error,omitempty"`
}

func writeError(w http.ResponseWriter, code int, msg, class string) {
	writeJSON(w, code, errorBody{Code: code, Message: msg, Error: class})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"code":500,"message":"encode answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// fail writes the answer of err: 400, 404, 503 (graph errors, with their
// class and no host name) or 500.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var br *BadRequestError
	var nf *NotFoundError
	var ge *GraphError
	var amb *AmbiguousError
	switch {
	case errors.As(err, &br):
		writeError(w, http.StatusBadRequest, br.Msg, "")
	case errors.As(err, &amb):
		writeJSON(w, http.StatusConflict, amb.body(http.StatusConflict))
	case errors.As(err, &nf):
		writeError(w, http.StatusNotFound, nf.Msg, "")
	case errors.As(err, &ge):
		s.log.Warn("explorer: graph read failed", "path", r.URL.Path, "class", ge.Class, "err", ge.Err)
		writeError(w, http.StatusServiceUnavailable, classMessage(ge.Class), ge.Class)
	case errors.Is(err, context.Canceled):
		// The client went away.
	default:
		s.log.Error("explorer: request failed", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal error", "")
	}
}

func classMessage(class string) string {
	switch class {
	case ClassUnreachable:
		return "the lineage graph is unreachable"
	case ClassTimeout:
		return "the lineage graph did not answer in time"
	case ClassOverloaded:
		return "the lineage graph is overloaded; try again"
	}
	return "the lineage graph failed to answer"
}

// intParam reads an integer query parameter in [lo, hi], def when absent.
func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s=%s: want an integer from %d to %d", name, quoteShort(v), lo, hi)
	}
	return n, nil
}

func (s *Server) lineageQuery(r *http.Request) (LineageQuery, error) {
	q := LineageQuery{NodeID: r.URL.Query().Get("nodeId")}
	var err error
	if q.Up, err = intParam(r, "up", 1, 0, s.cfg.MaxDepth); err != nil {
		return q, err
	}
	if q.Down, err = intParam(r, "down", 1, 0, s.cfg.MaxDepth); err != nil {
		return q, err
	}
	if q.MaxNodes, err = intParam(r, "maxNodes", s.cfg.DefaultMaxNodes, 1, s.cfg.MaxNodes); err != nil {
		return q, err
	}
	if _, err := parseNodeID(q.NodeID, false); err != nil {
		return q, err
	}
	if q.Time, err = s.timeFilter(r, time.Now()); err != nil {
		return q, err
	}
	return q, nil
}

func (s *Server) handleLineage(w http.ResponseWriter, r *http.Request) {
	q, err := s.lineageQuery(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	l, err := s.Lineage(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.index.observe(l.vertexIDs)
	writeJSON(w, http.StatusOK, l)
}

// handleHealth answers from the graph state of the last read or probe
// (graphHealth): cheap, never queued behind the heavy reads, within about
// a second even when the graph hangs.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if class := s.graphHealth(r.Context()); class != "" {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"graph": "unreachable", "error": class})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"graph": "ok"})
}

// SearchResult is one hit of /api/lf/v1/search.
type SearchResult struct {
	ID           string     `json:"id"`
	Type         string     `json:"type"`
	Namespace    string     `json:"namespace"`
	Name         string     `json:"name"`
	MatchedAlias *AliasName `json:"matchedAlias"`
	// Matched says what matched: name, alias, uri, namespace or glueTable.
	Matched string `json:"matched"`
	// Ref is the hit's unambiguous node id (vertex:<vertex id>): two hits
	// may share ID, never Ref.
	Ref string `json:"ref,omitempty"`
}

// AliasName names a DatasetAlias.
type AliasName struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Type      string `json:"type,omitempty"`
	// Conflict: more than one dataset claims this alias; ClaimedBy lists
	// them all (exact node ids), none is picked.
	Conflict  bool     `json:"conflict,omitempty"`
	ClaimedBy []string `json:"claimedBy,omitempty"`
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	if q == "" {
		s.fail(w, r, badRequest("q is required: a part of a dataset or job name"))
		return
	}
	limit, err := intParam(r, "limit", 20, 1, 1000)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	nm, err := s.index.snapshot(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	hits := find(nm, q, limit)
	out := struct {
		Results []SearchResult `json:"results"`
	}{Results: make([]SearchResult, 0, len(hits))}
	for _, h := range hits {
		sr := SearchResult{ID: h.ref.NodeID(), Type: h.ref.Type(), Namespace: h.ref.Namespace, Name: h.ref.Name, Matched: h.matched, Ref: h.ref.ExactNodeID()}
		if h.alias != nil {
			sr.MatchedAlias = &AliasName{Namespace: h.alias.Namespace, Name: h.alias.Name}
		}
		out.Results = append(out.Results, sr)
	}
	writeJSON(w, http.StatusOK, out)
}
