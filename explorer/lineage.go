package explorer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
)

// Edge labels. Only these three are lineage; a Run's READ/WROTE edges never
// are (a failed run reads and writes, but gives no lineage).
const (
	EdgeInputTo = "INPUT_TO"
	EdgeOutputs = "OUTPUTS"
	EdgeDerives = "DERIVES"

	edgeRunOf   = "RUN_OF"
	edgeAliasOf = "ALIAS_OF"
)

// walkLabels are the edges the lineage walk follows (dataset -> job ->
// dataset); DERIVES edges between the nodes found are added to the answer
// but not followed, so that depth counts the same hops in both views.
var walkLabels = []any{EdgeInputTo, EdgeOutputs}

// lineageLabels are every lineage edge label.
var lineageLabels = []any{EdgeInputTo, EdgeOutputs, EdgeDerives}

// LineageQuery is a bounded lineage request around one node.
type LineageQuery struct {
	NodeID   string
	Up, Down int // hops upstream and downstream, 0..MaxDepth
	MaxNodes int // at most this many nodes in the answer
}

// Lineage is the answer of /api/lf/v1/lineage (see EXPLORER-API.md).
type Lineage struct {
	Center    string        `json:"center"`
	Nodes     []LineageNode `json:"nodes"`
	Edges     []LineageEdge `json:"edges"`
	Truncated bool          `json:"truncated"`
	Version   string        `json:"version"`

	vertexIDs []string // of Nodes, same order (for the Marquez answer)
}

// LineageNode is one dataset or job of a [Lineage].
type LineageNode struct {
	ID            string  `json:"id"`
	Type          string  `json:"type"`
	Namespace     string  `json:"namespace"`
	Name          string  `json:"name"`
	LastSeen      *int64  `json:"lastSeen"`
	HasFailedRuns bool    `json:"hasFailedRuns"`
	LastRunState  *string `json:"lastRunState"`
	More          More    `json:"more"`
}

// More counts a node's lineage neighbours left out of the answer (by depth,
// fan-out or node caps), per direction.
type More struct {
	Up   int64 `json:"up"`
	Down int64 `json:"down"`
}

// LineageEdge is one lineage edge of a [Lineage].
type LineageEdge struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Origin      string `json:"origin"`
	Destination string `json:"destination"`
	FirstSeen   *int64 `json:"firstSeen"`
	LastSeen    *int64 `json:"lastSeen"`
	LastRunID   string `json:"lastRunId"`
}

// resolve finds the vertex a node id names: the leftmost (namespace, name)
// split that is a vertex of its kind, else (datasets) the leftmost split
// that is a DatasetAlias, through ALIAS_OF. One request for all splits.
func (s *Server) resolve(ctx context.Context, p parsedID) (Ref, error) {
	ids := make([]string, 0, 2*len(p.candidates))
	for _, c := range p.candidates {
		ids = append(ids, c.VertexID())
	}
	if p.kind == KindDataset {
		for _, c := range p.candidates {
			ids = append(ids, aliasVertexID(c.Namespace, c.Name))
		}
	}
	rows, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		T, __ := gremlingo.T, gremlingo.T__
		return g.V(anyStrings(ids)...).Project("id", "target").
			By(T.Id).By(__.Out(edgeAliasOf).HasLabel("Dataset").Id().Limit(1).Fold())
	})
	if err != nil {
		return Ref{}, err
	}
	found := map[string]string{} // vertex id -> dataset vertex id it stands for
	for _, r := range rows {
		m, err := rowMap(r)
		if err != nil {
			return Ref{}, err
		}
		id := asString(m["id"])
		found[id] = id
		if l, ok := m["target"].([]any); ok && len(l) == 1 {
			found[id] = asString(l[0])
		}
	}
	for _, id := range ids {
		if target, ok := found[id]; ok {
			if ref, ok := refOfVertexID(target); ok && ref.Kind == p.kind {
				return ref, nil
			}
		}
	}
	return Ref{}, &NotFoundError{Msg: fmt.Sprintf("node %s not found", quoteShort(p.raw))}
}

// nodeState is what the walk knows of one vertex.
type nodeState struct {
	ref       Ref
	in, out   int64 // walk-label degrees (bounded by countCap)
	counted   bool
	lastSeen  *int64
	lastState *string
	failed    bool
}

// levelRow is one frontier vertex's answer: its degrees and up to MaxFanOut
// neighbours in the walk's direction.
type levelRow struct {
	id        string
	in, out   int64
	neighbors []string
}

// level reads the degrees of ids and (withNeighbors) their neighbours
// upstream (up) or downstream.
func (s *Server) level(ctx context.Context, ids []string, up, withNeighbors bool) ([]levelRow, error) {
	rows, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		T, __ := gremlingo.T, gremlingo.T__
		t := g.V(anyStrings(ids)...).Project("id", "in", "out", "n").By(T.Id).
			By(__.InE(walkLabels...).Limit(s.cfg.CountCap).Count()).
			By(__.OutE(walkLabels...).Limit(s.cfg.CountCap).Count())
		switch {
		case !withNeighbors:
			return t.By(__.Constant([]any{}))
		case up:
			return t.By(__.In(walkLabels...).Limit(s.cfg.MaxFanOut).Id().Fold())
		default:
			return t.By(__.Out(walkLabels...).Limit(s.cfg.MaxFanOut).Id().Fold())
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]levelRow, 0, len(rows))
	for _, r := range rows {
		m, err := rowMap(r)
		if err != nil {
			return nil, err
		}
		lr := levelRow{id: asString(m["id"])}
		lr.in, _ = asInt64(m["in"])
		lr.out, _ = asInt64(m["out"])
		if l, ok := m["n"].([]any); ok {
			for _, v := range l {
				lr.neighbors = append(lr.neighbors, asString(v))
			}
		}
		out = append(out, lr)
	}
	return out, nil
}

// Lineage answers q: a walk level by level from the center, upstream and
// downstream concurrently, each level one request with a fan-out cap per
// vertex, then one request for every lineage edge among the nodes found
// (DERIVES too) and one for the jobs' run states.
func (s *Server) Lineage(ctx context.Context, q LineageQuery) (*Lineage, error) {
	p, err := parseNodeID(q.NodeID, false)
	if err != nil {
		return nil, err
	}
	center, err := s.resolve(ctx, p)
	if err != nil {
		return nil, err
	}
	return s.lineageOf(ctx, center, q)
}

func (s *Server) lineageOf(ctx context.Context, center Ref, q LineageQuery) (*Lineage, error) {
	w := &walk{s: s, max: q.MaxNodes, nodes: map[string]*nodeState{}}
	cid := center.VertexID()
	w.add(cid)
	if err := w.run(ctx, cid, q.Up, q.Down); err != nil {
		return nil, err
	}
	return w.finish(ctx, center)
}

// walk is the state of one lineage walk.
type walk struct {
	s         *Server
	max       int
	nodes     map[string]*nodeState
	order     []string
	truncated bool
}

// add records a node if there is room; it reports whether id is in the walk.
func (w *walk) add(id string) bool {
	if _, ok := w.nodes[id]; ok {
		return true
	}
	ref, ok := refOfVertexID(id)
	if !ok {
		return false // not a Dataset or Job vertex: never lineage
	}
	if len(w.nodes) >= w.max {
		w.truncated = true
		return false
	}
	w.nodes[id] = &nodeState{ref: ref}
	w.order = append(w.order, id)
	return true
}

// run walks level by level: at each level the upstream and the downstream
// frontier are read concurrently (one request each), then merged in a fixed
// order (upstream first, each in the graph's order), so the same graph
// gives the same answer even when the node cap cuts it.
func (w *walk) run(ctx context.Context, center string, upDepth, downDepth int) error {
	upF, downF := []string{center}, []string{center}
	for d := 0; (d < upDepth && len(upF) > 0) || (d < downDepth && len(downF) > 0); d++ {
		var upRows, downRows []levelRow
		var upErr, downErr error
		var wg sync.WaitGroup
		if d < upDepth && len(upF) > 0 {
			wg.Add(1)
			go func() { defer wg.Done(); upRows, upErr = w.s.level(ctx, upF, true, true) }()
		}
		if d < downDepth && len(downF) > 0 {
			wg.Add(1)
			go func() { defer wg.Done(); downRows, downErr = w.s.level(ctx, downF, false, true) }()
		}
		wg.Wait()
		if upErr != nil {
			return upErr
		}
		if downErr != nil {
			return downErr
		}
		upF, downF = w.merge(upRows, true), w.merge(downRows, false)
	}
	return nil
}

// merge adds one level's rows to the walk and returns the next frontier.
func (w *walk) merge(rows []levelRow, up bool) []string {
	var next []string
	for _, r := range rows {
		if n := w.nodes[r.id]; n != nil {
			n.in, n.out, n.counted = r.in, r.out, true
		}
		deg := r.out
		if up {
			deg = r.in
		}
		if int64(len(r.neighbors)) < deg {
			w.truncated = true // fan-out cap: the rest are "more"
		}
		for _, nb := range r.neighbors {
			_, seen := w.nodes[nb]
			if w.add(nb) && !seen {
				next = append(next, nb)
			}
		}
	}
	return next
}

func (w *walk) finish(ctx context.Context, center Ref) (*Lineage, error) {
	ids := append([]string(nil), w.order...)
	var uncounted, jobs []string
	for _, id := range ids {
		n := w.nodes[id]
		if !n.counted {
			uncounted = append(uncounted, id)
		}
		if n.ref.Kind == KindJob {
			jobs = append(jobs, id)
		}
	}
	var (
		wg                      sync.WaitGroup
		countRows               []levelRow
		edgeRows, runRows       []*gremlingo.Result
		countErr, edgeErr, rErr error
	)
	if len(uncounted) > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); countRows, countErr = w.s.level(ctx, uncounted, false, false) }()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		edgeRows, edgeErr = w.s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
			T, P, __ := gremlingo.T, gremlingo.P, gremlingo.T__
			return g.V(anyStrings(ids)...).Local(__.OutE(lineageLabels...).Limit(w.s.cfg.CountCap)).
				Where(__.InV().HasId(P.Within(anyStrings(ids)...))).
				Project("id", "label", "o", "i", "p").By(T.Id).By(T.Label).By(__.OutV().Id()).By(__.InV().Id()).By(__.ValueMap())
		})
	}()
	if len(jobs) > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); runRows, rErr = w.s.runStates(ctx, jobs) }()
	}
	wg.Wait()
	for _, err := range []error{countErr, edgeErr, rErr} {
		if err != nil {
			return nil, err
		}
	}
	for _, r := range countRows {
		if n := w.nodes[r.id]; n != nil {
			n.in, n.out, n.counted = r.in, r.out, true
		}
	}
	res := &Lineage{Center: center.NodeID(), Truncated: w.truncated}
	inUsed := map[string]int64{}
	outUsed := map[string]int64{}
	for _, r := range edgeRows {
		m, err := rowMap(r)
		if err != nil {
			return nil, err
		}
		o, i := asString(m["o"]), asString(m["i"])
		on, in := w.nodes[o], w.nodes[i]
		if on == nil || in == nil {
			continue
		}
		e := LineageEdge{ID: asString(m["id"]), Type: asString(m["label"]), Origin: on.ref.NodeID(), Destination: in.ref.NodeID()}
		if pm, ok := m["p"].(map[any]any); ok {
			pr := props(pm)
			if v, ok := asInt64(pr["firstSeen"]); ok {
				e.FirstSeen = &v
			}
			if v, ok := asInt64(pr["lastSeen"]); ok {
				e.LastSeen = &v
				for _, n := range []*nodeState{on, in} {
					if n.lastSeen == nil || *n.lastSeen < v {
						n.lastSeen = &v
					}
				}
			}
			e.LastRunID = asString(pr["lastRunId"])
		}
		if e.Type != EdgeDerives {
			outUsed[o]++
			inUsed[i]++
		}
		res.Edges = append(res.Edges, e)
	}
	for _, r := range runRows {
		m, err := rowMap(r)
		if err != nil {
			return nil, err
		}
		n := w.nodes[asString(m["id"])]
		if n == nil {
			continue
		}
		if l, ok := m["last"].([]any); ok && len(l) == 1 {
			st := asString(l[0])
			n.lastState = &st
		}
		if c, ok := asInt64(m["failed"]); ok && c > 0 {
			n.failed = true
		}
	}
	for _, id := range ids {
		n := w.nodes[id]
		res.Nodes = append(res.Nodes, LineageNode{
			ID: n.ref.NodeID(), Type: n.ref.Type(), Namespace: n.ref.Namespace, Name: n.ref.Name,
			LastSeen: n.lastSeen, HasFailedRuns: n.failed, LastRunState: n.lastState,
			More: More{Up: max(0, n.in-inUsed[id]), Down: max(0, n.out-outUsed[id])},
		})
		res.vertexIDs = append(res.vertexIDs, id)
	}
	sort.Slice(res.Edges, func(i, j int) bool { return res.Edges[i].ID < res.Edges[j].ID })
	if res.Edges == nil {
		res.Edges = []LineageEdge{}
	}
	res.Version = digest(res)
	return res, nil
}

// runStates reads, per job, the state of its latest run (by updatedAt) and
// whether any run failed, looking at most at RunScan runs per job.
func (s *Server) runStates(ctx context.Context, jobs []string) ([]*gremlingo.Result, error) {
	return s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		T, __ := gremlingo.T, gremlingo.T__
		updated := __.Coalesce(__.Values("updatedAt"), __.Constant(int64(0)))
		return g.V(anyStrings(jobs)...).Project("id", "last", "failed").By(T.Id).
			By(__.In(edgeRunOf).HasLabel("Run").Limit(s.cfg.RunScan).Order().By(updated, gremlingo.Order.Desc).Limit(1).Values("state").Fold()).
			By(__.In(edgeRunOf).HasLabel("Run").Limit(s.cfg.RunScan).Has("state", "FAIL").Limit(1).Count())
	})
}

// digest is the opaque version of a lineage answer: SHA-256 over its
// canonical JSON (nodes in walk order, edges sorted by id), so any change
// of a node, an edge, a property or a "more" count changes it.
func digest(l *Lineage) string {
	b, _ := json.Marshal(struct {
		C string
		N []LineageNode
		E []LineageEdge
		T bool
	}{l.Center, l.Nodes, l.Edges, l.Truncated})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}
