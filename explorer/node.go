package explorer

import (
	"context"
	"net/http"
	"sort"
	"strings"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/lineage"
)

// maxRuns is how many runs /api/lf/v1/node lists for a job.
const maxRuns = 20

// NodeDetails is the answer of /api/lf/v1/node.
type NodeDetails struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Namespace  string         `json:"namespace"`
	Name       string         `json:"name"`
	Properties map[string]any `json:"properties"`
	Aliases    []AliasName    `json:"aliases"`
	FirstSeen  *int64         `json:"firstSeen"`
	LastSeen   *int64         `json:"lastSeen"`
	LastRunID  *string        `json:"lastRunId"`
	Runs       []RunSummary   `json:"runs"`
	Inputs     []string       `json:"inputs"`
	Outputs    []string       `json:"outputs"`

	inputRefs, outputRefs []Ref
}

// RunSummary is one Run vertex of a job.
type RunSummary struct {
	RunID        string  `json:"runId"`
	State        string  `json:"state"`
	StartedAt    *int64  `json:"startedAt"`
	EndedAt      *int64  `json:"endedAt"`
	DurationMs   *int64  `json:"durationMs"`
	ErrorMessage *string `json:"errorMessage"`
	UpdatedAt    *int64  `json:"updatedAt"`
	// The processing_engine and externalQuery run facets, when the run
	// gave them.
	ProcessingEngine          *string `json:"processingEngine,omitempty"`
	ProcessingEngineVersion   *string `json:"processingEngineVersion,omitempty"`
	OpenlineageAdapterVersion *string `json:"openlineageAdapterVersion,omitempty"`
	ExternalQueryID           *string `json:"externalQueryId,omitempty"`
	ExternalQuerySource       *string `json:"externalQuerySource,omitempty"`

	props map[string]any
}

// Node reads one node's details: all its vertex properties, aliases, the
// first/last seen of its lineage edges, its latest runs (jobs) and its
// lineage neighbours (at most MaxFanOut each way), in one request.
func (s *Server) Node(ctx context.Context, nodeID string) (*NodeDetails, error) {
	p, err := parseNodeID(nodeID, false)
	if err != nil {
		return nil, err
	}
	ref, err := s.resolve(ctx, p)
	if err != nil {
		return nil, err
	}
	return s.nodeOf(ctx, ref, maxRuns)
}

func (s *Server) nodeOf(ctx context.Context, ref Ref, runs int) (*NodeDetails, error) {
	ds, err := s.details(ctx, []string{ref.VertexID()}, runs)
	if err != nil {
		return nil, err
	}
	d := ds[ref.VertexID()]
	if d == nil {
		return nil, &NotFoundError{Msg: "node " + quoteShort(ref.NodeID()) + " not found"}
	}
	return d, nil
}

// details reads the details of the Dataset/Job vertices ids in one request
// (vertices that do not exist are absent from the map).
func (s *Server) details(ctx context.Context, ids []string, runs int) (map[string]*NodeDetails, error) {
	if len(ids) == 0 {
		return map[string]*NodeDetails{}, nil
	}
	rows, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		T, __ := gremlingo.T, gremlingo.T__
		return g.V(anyStrings(ids)...).Project("id", "p", "aliases", "first", "last", "in", "out").
			By(T.Id).
			By(__.ValueMap()).
			By(__.In(edgeAliasOf).HasLabel(lineage.LabelDatasetAlias).Limit(s.cfg.MaxFanOut).
				Project("v", "claimants").By(__.ValueMap()).By(__.Out(edgeAliasOf).Limit(maxAliasClaimants).Id().Fold()).Fold()).
			By(__.BothE(lineageLabels...).Limit(s.cfg.CountCap).Values(lineage.PropFirstSeen).Min().Fold()).
			By(__.BothE(lineageLabels...).Limit(s.cfg.CountCap).Has(lineage.PropLastSeen).
				Order().By(lineage.PropLastSeen, gremlingo.Order.Desc).Limit(1).ValueMap().Fold()).
			By(__.In(walkLabels...).Limit(s.cfg.MaxFanOut).Id().Fold()).
			By(__.Out(walkLabels...).Limit(s.cfg.MaxFanOut).Id().Fold())
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]*NodeDetails, len(rows))
	for _, r := range rows {
		m, err := rowMap(r)
		if err != nil {
			return nil, err
		}
		vid := asString(m["id"])
		ref, ok := refOfVertexID(vid)
		if !ok {
			continue
		}
		out[vid] = nodeDetails(ref, m)
	}
	if runs <= 0 {
		return out, nil
	}
	var jobs []string
	for id := range out {
		if r, ok := refOfVertexID(id); ok && r.Kind == KindJob {
			jobs = append(jobs, id)
		}
	}
	byJob, err := s.runsOfJobs(ctx, jobs)
	if err != nil {
		return nil, err
	}
	for id, rs := range byJob {
		for _, p := range rs[:min(len(rs), runs)] {
			out[id].Runs = append(out[id].Runs, runSummary(p))
		}
	}
	return out, nil
}

// runsOfJobs reads the Run vertices of the Job vertices jobs, at most
// RunScan per job, by job vertex id, newest updatedAt first: a Run vertex
// names its job in its job property (a has() on it: a run has no edge).
func (s *Server) runsOfJobs(ctx context.Context, jobs []string) (map[string][]map[string]any, error) {
	out := map[string][]map[string]any{}
	if len(jobs) == 0 {
		return out, nil
	}
	rows, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		return g.V().HasLabel(lineage.LabelRun).Has(lineage.PropJob, gremlingo.P.Within(anyStrings(jobs)...)).
			Limit(s.cfg.RunScan * len(jobs)).ValueMap()
	})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		m, err := rowMap(r)
		if err != nil {
			return nil, err
		}
		p := props(m)
		j := asString(p[lineage.PropJob])
		if len(out[j]) < s.cfg.RunScan {
			out[j] = append(out[j], p)
		}
	}
	updated := func(p map[string]any) int64 { v, _ := asInt64(p[lineage.PropUpdatedAt]); return v }
	for _, rs := range out {
		sort.SliceStable(rs, func(a, b int) bool {
			if ua, ub := updated(rs[a]), updated(rs[b]); ua != ub {
				return ua > ub
			}
			return asString(rs[a][lineage.PropRunID]) > asString(rs[b][lineage.PropRunID])
		})
	}
	return out, nil
}

func nodeDetails(ref Ref, m map[any]any) *NodeDetails {
	d := &NodeDetails{ID: ref.NodeID(), Type: ref.Type(), Namespace: ref.Namespace, Name: ref.Name,
		Properties: map[string]any{}, Aliases: []AliasName{}, Runs: []RunSummary{}, Inputs: []string{}, Outputs: []string{}}
	if pm, ok := m["p"].(map[any]any); ok {
		d.Properties = props(pm)
		for k := range d.Properties {
			// The merge stamps the sink keeps beside mergeable properties
			// (lineage.StampSuffix) are bookkeeping, not facets.
			if strings.HasSuffix(k, lineage.StampSuffix) {
				delete(d.Properties, k)
			}
		}
	}
	for _, a := range list(m["aliases"]) {
		if pm, ok := a.(map[any]any); ok {
			d.Aliases = append(d.Aliases, aliasWithClaimants(pm))
		}
	}
	if l := list(m["first"]); len(l) == 1 {
		if v, ok := asInt64(l[0]); ok {
			d.FirstSeen = &v
		}
	}
	if l := list(m["last"]); len(l) == 1 {
		if em, ok := l[0].(map[any]any); ok {
			ep := props(em)
			if v, ok := asInt64(ep[lineage.PropLastSeen]); ok {
				d.LastSeen = &v
			}
			if v, ok := ep[lineage.PropLastRunID]; ok {
				rid := asString(v)
				d.LastRunID = &rid
			}
		}
	}
	for _, id := range list(m["in"]) {
		if r, ok := refOfVertexID(asString(id)); ok {
			d.Inputs = append(d.Inputs, r.NodeID())
			d.inputRefs = append(d.inputRefs, r)
		}
	}
	for _, id := range list(m["out"]) {
		if r, ok := refOfVertexID(asString(id)); ok {
			d.Outputs = append(d.Outputs, r.NodeID())
			d.outputRefs = append(d.outputRefs, r)
		}
	}
	return d
}

func runSummary(p map[string]any) RunSummary {
	rs := RunSummary{RunID: asString(p[lineage.PropRunID]), State: asString(p[lineage.PropState]), props: p}
	num := func(k string) *int64 {
		if v, ok := asInt64(p[k]); ok {
			return &v
		}
		return nil
	}
	rs.StartedAt, rs.EndedAt, rs.DurationMs, rs.UpdatedAt = num(lineage.PropStartedAt), num(lineage.PropEndedAt), num(lineage.PropDurationMs), num(lineage.PropUpdatedAt)
	if v, ok := p[lineage.PropErrorMessage]; ok && asString(v) != "" {
		e := asString(v)
		rs.ErrorMessage = &e
	}
	str := func(k string) *string {
		if v, ok := p[k].(string); ok {
			return &v
		}
		return nil
	}
	rs.ProcessingEngine, rs.ProcessingEngineVersion, rs.OpenlineageAdapterVersion = str(lineage.PropProcessingEngine), str(lineage.PropProcessingEngineVersion), str(lineage.PropOpenlineageAdapterVersion)
	rs.ExternalQueryID, rs.ExternalQuerySource = str(lineage.PropExternalQueryID), str(lineage.PropExternalQuerySource)
	return rs
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func (s *Server) handleNode(w http.ResponseWriter, r *http.Request) {
	d, err := s.Node(r.Context(), r.URL.Query().Get("nodeId"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}
