package explorer

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/lineage"
)

// landingItems is how many recently failed jobs and recently changed
// nodes the landing page lists.
const landingItems = 15

// landingWait is how long a landing request waits for the first read of
// the lists.
const landingWait = 2 * time.Second

// NamespaceCount is one namespace of the landing page and
// /api/lf/v1/namespaces: how many datasets and jobs the search index holds
// in it.
type NamespaceCount struct {
	Name     string `json:"name"`
	Datasets int    `json:"datasets"`
	Jobs     int    `json:"jobs"`
}

// FailedJob is a job whose latest failed run is among the most recent.
type FailedJob struct {
	ID           string  `json:"id"`
	Namespace    string  `json:"namespace"`
	Name         string  `json:"name"`
	RunID        string  `json:"runId"`
	At           *int64  `json:"at"` // the run's updatedAt
	ErrorMessage *string `json:"errorMessage"`
}

// ChangedNode is a dataset or job at an end of one of the most recently
// seen lineage edges.
type ChangedNode struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	LastSeen  int64  `json:"lastSeen"`
}

// Landing is the answer of /api/lf/v1/landing: a way in without knowing a
// name.
type Landing struct {
	Namespaces      []NamespaceCount `json:"namespaces"`
	RecentlyFailed  []FailedJob      `json:"recentlyFailed"`
	RecentlyChanged []ChangedNode    `json:"recentlyChanged"`
	// ReadAt is when the failed and changed lists were read (Unix ms):
	// they are read in the background every IndexFullRefresh, not per
	// request; 0: not read yet (the lists are empty; ask again).
	ReadAt int64 `json:"readAt"`
}

// landingCache holds the last read of the lists that cost a scan.
type landingCache struct {
	mu      sync.Mutex
	failed  []FailedJob
	changed []ChangedNode
	readAt  time.Time
	err     error
	done    chan struct{} // closed after the first read (success or not)
}

func newLandingCache() *landingCache { return &landingCache{done: make(chan struct{})} }

// refreshLanding reads the recently failed jobs (Run vertices in state
// FAIL, latest updatedAt first) and the recently changed nodes (the ends
// of the lineage edges of latest lastSeen). Both are scans with an order
// (no index on a property in TinkerGraph or Neptune), hence the cache.
func (s *Server) refreshLanding(ctx context.Context) error {
	rows, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		__ := gremlingo.T__
		return g.V().HasLabel(lineage.LabelRun).Has(lineage.PropState, string(lineage.TypeFail)).
			Order().By(__.Coalesce(__.Values(lineage.PropUpdatedAt), __.Constant(int64(0))), gremlingo.Order.Desc).Limit(landingItems*4).
			Project("job", "p").By(__.Values(lineage.PropJob).Limit(1).Fold()).By(__.ValueMap(lineage.PropRunID, lineage.PropUpdatedAt, lineage.PropErrorMessage))
	})
	var failed []FailedJob
	if err == nil {
		seen := map[string]bool{}
		for _, r := range rows {
			m, e := rowMap(r)
			if e != nil {
				continue
			}
			l := list(m["job"])
			if len(l) != 1 {
				continue
			}
			ref, ok := refOfVertexID(asString(l[0]))
			if !ok || ref.Kind != KindJob || seen[ref.NodeID()] || len(failed) >= landingItems {
				continue
			}
			seen[ref.NodeID()] = true
			fj := FailedJob{ID: ref.NodeID(), Namespace: ref.Namespace, Name: ref.Name}
			if pm, ok := m["p"].(map[any]any); ok {
				p := props(pm)
				fj.RunID = asString(p[lineage.PropRunID])
				if v, ok := asInt64(p[lineage.PropUpdatedAt]); ok {
					fj.At = &v
				}
				if v := asString(p[lineage.PropErrorMessage]); v != "" {
					fj.ErrorMessage = &v
				}
			}
			failed = append(failed, fj)
		}
	}
	var changed []ChangedNode
	if err == nil {
		rows, err = s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
			__ := gremlingo.T__
			return g.E().HasLabel(walkLabels...).Has(lineage.PropLastSeen).Order().By(lineage.PropLastSeen, gremlingo.Order.Desc).Limit(landingItems*4).
				Project("o", "i", "l").By(__.OutV().Id()).By(__.InV().Id()).By(__.Values(lineage.PropLastSeen))
		})
		if err == nil {
			seen := map[string]bool{}
			for _, r := range rows {
				m, e := rowMap(r)
				if e != nil {
					continue
				}
				last, _ := asInt64(m["l"])
				for _, k := range []string{"i", "o"} { // the written end first
					ref, ok := refOfVertexID(asString(m[k]))
					if !ok || seen[ref.NodeID()] || len(changed) >= landingItems {
						continue
					}
					seen[ref.NodeID()] = true
					changed = append(changed, ChangedNode{ID: ref.NodeID(), Type: ref.Type(), Namespace: ref.Namespace, Name: ref.Name, LastSeen: last})
				}
			}
		}
	}
	lc := s.landing
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.err = err
	if err == nil {
		lc.failed, lc.changed, lc.readAt = failed, changed, time.Now()
	}
	select {
	case <-lc.done:
	default:
		close(lc.done)
	}
	return err
}

// startLanding reads the landing lists now and every IndexFullRefresh
// (the read of recently changed nodes orders every lineage edge: 7 s on
// the 100k-vertex estate, bench/RESULTS.md).
func (s *Server) startLanding() {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		for {
			if err := s.refreshLanding(s.bgCtx); err != nil && s.bgCtx.Err() == nil {
				s.log.Warn("explorer: landing page lists not read; retrying", "err", err)
			}
			select {
			case <-s.bgCtx.Done():
				return
			case <-time.After(s.cfg.IndexFullRefresh):
			}
		}
	}()
}

// namespaceCounts counts the index's datasets and jobs per namespace,
// largest first.
func namespaceCounts(n *names) []NamespaceCount {
	by := map[string]*NamespaceCount{}
	for _, e := range n.all() {
		if e.alias != nil {
			continue
		}
		c := by[e.ref.Namespace]
		if c == nil {
			c = &NamespaceCount{Name: e.ref.Namespace}
			by[e.ref.Namespace] = c
		}
		if e.ref.Kind == KindJob {
			c.Jobs++
		} else {
			c.Datasets++
		}
	}
	out := make([]NamespaceCount, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Datasets+a.Jobs != b.Datasets+b.Jobs {
			return a.Datasets+a.Jobs > b.Datasets+b.Jobs
		}
		return a.Name < b.Name
	})
	return out
}

func (s *Server) handleLanding(w http.ResponseWriter, r *http.Request) {
	nm, err := s.index.snapshot(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The first read (at start) is waited for up to landingWait; past
	// that the answer has the namespaces and empty lists (readAt 0), and
	// the page asks again.
	lc := s.landing
	t := time.NewTimer(landingWait)
	defer t.Stop()
	select {
	case <-lc.done:
	case <-t.C:
	case <-r.Context().Done():
		return
	}
	lc.mu.Lock()
	out := Landing{Namespaces: namespaceCounts(nm), RecentlyFailed: lc.failed, RecentlyChanged: lc.changed}
	if !lc.readAt.IsZero() {
		out.ReadAt = lc.readAt.UnixMilli()
	}
	lerr := lc.err
	lc.mu.Unlock()
	if lc.readAt.IsZero() && lerr != nil {
		s.fail(w, r, lerr)
		return
	}
	if len(out.Namespaces) > 200 {
		out.Namespaces = out.Namespaces[:200]
	}
	if out.RecentlyFailed == nil {
		out.RecentlyFailed = []FailedJob{}
	}
	if out.RecentlyChanged == nil {
		out.RecentlyChanged = []ChangedNode{}
	}
	writeJSON(w, http.StatusOK, out)
}

// BrowsePage is the answer of /api/lf/v1/browse: one page of a
// namespace's datasets and jobs.
type BrowsePage struct {
	Namespace string         `json:"namespace"`
	Total     int            `json:"total"`
	Offset    int            `json:"offset"`
	Results   []SearchResult `json:"results"`
}

func (s *Server) handleBrowse(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	ns, typ, filter, sortBy := v.Get("namespace"), v.Get("type"), strings.ToLower(v.Get("q")), v.Get("sort")
	if ns == "" {
		s.fail(w, r, badRequest("namespace is required (the namespaces are listed by /api/lf/v1/namespaces)"))
		return
	}
	switch typ {
	case "", TypeDataset, TypeJob:
	default:
		s.fail(w, r, badRequest("type=%s: want DATASET or JOB", quoteShort(typ)))
		return
	}
	switch sortBy {
	case "", "name", "-name", "type":
	default:
		s.fail(w, r, badRequest("sort=%s: want name, -name or type", quoteShort(sortBy)))
		return
	}
	limit, err := intParam(r, "limit", 50, 1, 1000)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	offset, err := intParam(r, "offset", 0, 0, 1<<30)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	nm, err := s.index.snapshot(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var hits []Ref
	for _, e := range nm.all() {
		if e.alias != nil || e.ref.Namespace != ns || (typ != "" && e.ref.Type() != typ) || (filter != "" && !strings.Contains(e.lower, filter)) {
			continue
		}
		hits = append(hits, e.ref)
	}
	sort.Slice(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if sortBy == "type" && a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if sortBy == "-name" {
			return a.Name > b.Name
		}
		return a.Name < b.Name
	})
	out := BrowsePage{Namespace: ns, Total: len(hits), Offset: offset, Results: []SearchResult{}}
	for i := offset; i < len(hits) && i < offset+limit; i++ {
		h := hits[i]
		out.Results = append(out.Results, SearchResult{ID: h.NodeID(), Type: h.Type(), Namespace: h.Namespace, Name: h.Name, Matched: MatchNamespace})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleNamespaces(w http.ResponseWriter, r *http.Request) {
	nm, err := s.index.snapshot(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Namespaces []NamespaceCount `json:"namespaces"`
	}{namespaceCounts(nm)})
}
