package explorer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/lineage"
)

// Edge labels. Only these three are lineage (a failed run reads and
// writes, but gives no lineage: its Run vertex lists its datasets).
const (
	EdgeInputTo = lineage.EdgeInputTo
	EdgeOutputs = lineage.EdgeOutputs
	EdgeDerives = lineage.EdgeDerives

	edgeAliasOf = lineage.EdgeAliasOf
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
	Time     TimeFilter
}

// Lineage is the answer of /api/lf/v1/lineage (see explorer/openapi.yaml).
type Lineage struct {
	Center string `json:"center"`
	// CenterRef is the centre's exact node id (vertex:<vertex id>): Center,
	// like every readable id, may also name another node.
	CenterRef string        `json:"centerRef"`
	Nodes     []LineageNode `json:"nodes"`
	Edges     []LineageEdge `json:"edges"`
	Truncated bool          `json:"truncated"`
	// HiddenEdges counts the lineage edges of the walked nodes (in the
	// walk's directions) that the time filter left out; Time echoes it.
	HiddenEdges int64       `json:"hiddenEdges"`
	Time        *TimeFilter `json:"time,omitempty"`
	Version     string      `json:"version"`

	vertexIDs []string // of Nodes, same order (for the Marquez answer)
}

// LineageNode is one dataset or job of a [Lineage].
type LineageNode struct {
	ID string `json:"id"`
	// Ref is the node's exact node id (vertex:<vertex id>): two nodes of
	// one answer may share ID (a namespace with ':'), never Ref.
	Ref           string  `json:"ref"`
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
	// OriginRef and DestinationRef are the exact node ids (the nodes' Ref).
	OriginRef      string `json:"originRef"`
	DestinationRef string `json:"destinationRef"`
	FirstSeen      *int64 `json:"firstSeen"`
	LastSeen       *int64 `json:"lastSeen"`
	LastRunID      string `json:"lastRunId"`
}

// nodeState is what the walk knows of one vertex.
type nodeState struct {
	ref       Ref
	in, out   int64 // walk-label degrees (bounded by CountCap)
	lastSeen  *int64
	lastState *string
	failed    bool
}

// levelRow is one frontier vertex's answer: up to MaxFanOut+1 of its
// neighbours in the walk's direction (one more than the cap says the cap
// cut it).
type levelRow struct {
	id        string
	neighbors []string
	hidden    int64 // edges the time filter left out
}

// level reads, in one request, the neighbours of up upstream and of down
// downstream (either may be empty). Each side's rows come back folded into
// one result: a result is a response message of its own only up to the
// server's batch size (64 on Gremlin Server), and a level of thousands of
// rows as that many messages took twice the time of one list
// (bench/RESULTS.md, "Explorer under its performance goals").
func (s *Server) level(ctx context.Context, up, down []string, tf TimeFilter, fanOut int) (upRows, downRows []levelRow, err error) {
	rows, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		T, __ := gremlingo.T, gremlingo.T__
		side := func(ids []string, dir string, nb func() *gremlingo.GraphTraversal) *gremlingo.GraphTraversal {
			if !tf.active() {
				return __.V(anyStrings(ids)...).Project("id", "d", "n").By(T.Id).By(__.Constant(dir)).
					By(nb().Limit(fanOut + 1).Id().Fold()).Fold()
			}
			// Edges first (filtered by their seen times), then their
			// other end; and how many the filter left out.
			var edges func() *gremlingo.GraphTraversal
			var other *gremlingo.GraphTraversal
			if dir == "up" {
				edges, other = func() *gremlingo.GraphTraversal { return __.InE(walkLabels...) }, __.OutV()
			} else {
				edges, other = func() *gremlingo.GraphTraversal { return __.OutE(walkLabels...) }, __.InV()
			}
			return __.V(anyStrings(ids)...).Project("id", "d", "n", "h").By(T.Id).By(__.Constant(dir)).
				By(tf.keep(edges()).Limit(fanOut + 1).Map(other).Id().Fold()).
				By(edges().Limit(s.cfg.CountCap).Where(tf.dropped()).Count()).Fold()
		}
		var branches []any
		if len(up) > 0 {
			branches = append(branches, side(up, "up", func() *gremlingo.GraphTraversal { return __.In(walkLabels...) }))
		}
		if len(down) > 0 {
			branches = append(branches, side(down, "down", func() *gremlingo.GraphTraversal { return __.Out(walkLabels...) }))
		}
		return g.Inject(1).Union(branches...)
	})
	if err != nil {
		return nil, nil, err
	}
	for _, m := range foldedRows(rows) {
		if m == nil {
			return nil, nil, errNotARow
		}
		lr := levelRow{id: asString(m["id"])}
		lr.hidden, _ = asInt64(m["h"])
		for _, v := range list(m["n"]) {
			lr.neighbors = append(lr.neighbors, asString(v))
		}
		if asString(m["d"]) == "up" {
			upRows = append(upRows, lr)
		} else {
			downRows = append(downRows, lr)
		}
	}
	return upRows, downRows, nil
}

// Lineage answers q: a walk level by level from the center, upstream and
// downstream concurrently, each level one request with a fan-out cap per
// vertex, then one request for the nodes found: their degrees, every
// lineage edge among them (DERIVES too) and the jobs' run states.
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
	w := &walk{s: s, max: q.MaxNodes, nodes: map[string]*nodeState{}, tf: q.Time}
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
	tf        TimeFilter
	hidden    int64 // edges the time filter left out at the walked nodes
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
// frontier are read in one request (a union), then merged in a fixed
// order (upstream first, each in the graph's order), so the same graph
// gives the same answer even when the node cap cuts it.
func (w *walk) run(ctx context.Context, center string, upDepth, downDepth int) error {
	upF, downF := []string{center}, []string{center}
	for d := 0; (d < upDepth && len(upF) > 0) || (d < downDepth && len(downF) > 0); d++ {
		var ups, downs []string
		if d < upDepth {
			ups = upF
		}
		if d < downDepth {
			downs = downF
		}
		upRows, downRows, err := w.s.level(ctx, ups, downs, w.tf, w.s.cfg.MaxFanOut)
		if err != nil {
			return err
		}
		upF, downF = w.merge(upRows, true), w.merge(downRows, false)
	}
	return nil
}

// merge adds one level's rows to the walk and returns the next frontier.
func (w *walk) merge(rows []levelRow, up bool) []string {
	var next []string
	for _, r := range rows {
		w.hidden += r.hidden
		if len(r.neighbors) > w.s.cfg.MaxFanOut {
			w.truncated = true // fan-out cap: the rest are "more"
			r.neighbors = r.neighbors[:w.s.cfg.MaxFanOut]
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

// runStates marks the jobs found that have a FAILed run among their Run
// vertices (found by their job property), and gives a job without a
// latest run state (a graph older than the health properties) its newest
// run's state.
func (w *walk) runStates(ctx context.Context) error {
	var jobs, stateless []string
	for id, n := range w.nodes {
		if r, ok := refOfVertexID(id); ok && r.Kind == KindJob {
			jobs = append(jobs, id)
			if n.lastState == nil {
				stateless = append(stateless, id)
			}
		}
	}
	if len(jobs) > 0 {
		rows, err := w.s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
			return g.V().HasLabel(lineage.LabelRun).Has(lineage.PropJob, gremlingo.P.Within(anyStrings(jobs)...)).
				Has(lineage.PropState, string(lineage.TypeFail)).Values(lineage.PropJob).Dedup()
		})
		if err != nil {
			return err
		}
		for _, r := range rows {
			if n := w.nodes[asString(r.GetInterface())]; n != nil {
				n.failed = true
			}
		}
	}
	newest, err := w.s.runsOfJobs(ctx, stateless)
	if err != nil {
		return err
	}
	for id, rs := range newest {
		if n := w.nodes[id]; n != nil && len(rs) > 0 {
			st := asString(rs[0][lineage.PropState])
			n.lastState = &st
		}
	}
	return nil
}

func (w *walk) finish(ctx context.Context, center Ref) (*Lineage, error) {
	ids := append([]string(nil), w.order...)
	countCap := w.s.cfg.CountCap
	tf := w.tf
	rows, err := w.s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		T, P, __ := gremlingo.T, gremlingo.P, gremlingo.T__
		// aggregate("s") collects the found vertices first (a barrier);
		// where(within("s")) then tests each edge's target against that
		// set by hash (BulkSet.contains), where hasId(within(ids...))
		// compared it with every id: the edge scan was most of this
		// request's time (explorer/bench_test.go BenchmarkLineageDepth5Phases).
		return g.V(anyStrings(ids)...).Aggregate("found").Project("id", "in", "out", "e", "last").
			By(T.Id).
			By(tf.keep(__.InE(walkLabels...)).Limit(countCap).Count()).
			By(tf.keep(__.OutE(walkLabels...)).Limit(countCap).Count()).
			By(tf.keep(__.OutE(lineageLabels...)).Limit(countCap).Where(__.InV().Where(P.Within("found"))).
				Project("id", "label", "i", "p").By(T.Id).By(T.Label).By(__.InV().Id()).By(__.ValueMap()).Fold()).
			// The job's latest run by eventTime (its health property).
			By(__.Values(lineage.PropLatestRunState).Fold()).
			Fold() // one response message (see level)
	})
	if err != nil {
		return nil, err
	}
	type edgeRow struct {
		o string
		m map[any]any
	}
	var edgeRows []edgeRow
	for _, m := range foldedRows(rows) {
		if m == nil {
			return nil, errNotARow
		}
		id := asString(m["id"])
		n := w.nodes[id]
		if n == nil {
			continue
		}
		n.in, _ = asInt64(m["in"])
		n.out, _ = asInt64(m["out"])
		for _, e := range list(m["e"]) {
			if em, ok := e.(map[any]any); ok {
				edgeRows = append(edgeRows, edgeRow{o: id, m: em})
			}
		}
		if l := list(m["last"]); len(l) == 1 {
			st := asString(l[0])
			if et := eventType(st); et != "" {
				st = et // a health state (COMPLETED): the run state's event type
			}
			n.lastState = &st
		}
	}
	if err := w.runStates(ctx); err != nil {
		return nil, err
	}
	res := &Lineage{Center: center.NodeID(), CenterRef: center.ExactNodeID(), Truncated: w.truncated, HiddenEdges: w.hidden}
	if tf.active() {
		res.Time = &tf
	}
	inUsed := map[string]int64{}
	outUsed := map[string]int64{}
	for _, r := range edgeRows {
		m := r.m
		o, i := r.o, asString(m["i"])
		on, in := w.nodes[o], w.nodes[i]
		if on == nil || in == nil {
			continue
		}
		e := LineageEdge{ID: asString(m["id"]), Type: asString(m["label"]), Origin: on.ref.NodeID(), Destination: in.ref.NodeID(),
			OriginRef: on.ref.ExactNodeID(), DestinationRef: in.ref.ExactNodeID()}
		if pm, ok := m["p"].(map[any]any); ok {
			pr := props(pm)
			if v, ok := asInt64(pr[lineage.PropFirstSeen]); ok {
				e.FirstSeen = &v
			}
			if v, ok := asInt64(pr[lineage.PropLastSeen]); ok {
				e.LastSeen = &v
				for _, n := range []*nodeState{on, in} {
					if n.lastSeen == nil || *n.lastSeen < v {
						n.lastSeen = &v
					}
				}
			}
			e.LastRunID = asString(pr[lineage.PropLastRunID])
		}
		if e.Type != EdgeDerives {
			outUsed[o]++
			inUsed[i]++
		}
		res.Edges = append(res.Edges, e)
	}
	for _, id := range ids {
		n := w.nodes[id]
		res.Nodes = append(res.Nodes, LineageNode{
			ID: n.ref.NodeID(), Ref: n.ref.ExactNodeID(), Type: n.ref.Type(), Namespace: n.ref.Namespace, Name: n.ref.Name,
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

// digest is the opaque version of a lineage answer: SHA-256 over its
// canonical JSON (nodes in walk order, edges sorted by id), so any change
// of a node, an edge, a property or a "more" count changes it.
func digest(l *Lineage) string {
	b, _ := json.Marshal(struct {
		C string
		N []LineageNode
		E []LineageEdge
		T bool
		H int64
	}{l.Center, l.Nodes, l.Edges, l.Truncated, l.HiddenEdges})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}
