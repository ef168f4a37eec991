package explorer

import (
	"net/http"
	"sort"
	"strings"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
)

// NeighborPage is the answer of /api/lf/v1/neighbors: one page of a
// node's lineage neighbours in one direction (what a view's "N more"
// hides), sorted by name.
type NeighborPage struct {
	Center    string         `json:"center"`
	Direction string         `json:"direction"`
	Total     int            `json:"total"`
	Capped    bool           `json:"capped"` // the node has more than CountCap neighbours: Total counts CountCap
	Offset    int            `json:"offset"`
	Results   []SearchResult `json:"results"`
}

// handleNeighbors answers /api/lf/v1/neighbors?nodeId=&direction=&q=&offset=&limit=:
// the INPUT_TO/OUTPUTS neighbours of a node (at most CountCap read, the
// time filter applied), those whose name contains q, one page.
func (s *Server) handleNeighbors(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	down := true
	switch d := v.Get("direction"); d {
	case "", "down":
	case "up":
		down = false
	default:
		s.fail(w, r, badRequest("direction=%s: want down or up", quoteShort(d)))
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
	p, err := parseNodeID(v.Get("nodeId"), false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tf, err := s.timeFilter(r, time.Now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	center, err := s.resolve(r.Context(), p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	capN := s.cfg.CountCap
	rows, err := s.graph.read(r.Context(), func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		__ := gremlingo.T__
		if down {
			return g.V(center.VertexID()).Map(tf.keep(__.OutE(walkLabels...)).Limit(capN + 1).InV().Id().Fold())
		}
		return g.V(center.VertexID()).Map(tf.keep(__.InE(walkLabels...)).Limit(capN + 1).OutV().Id().Fold())
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := NeighborPage{Center: center.NodeID(), Direction: "up", Offset: offset, Results: []SearchResult{}}
	if down {
		out.Direction = "down"
	}
	filter := strings.ToLower(v.Get("q"))
	var refs []Ref
	seen := map[string]bool{}
	for _, row := range rows {
		ids := list(row.GetInterface())
		if len(ids) > capN {
			out.Capped, ids = true, ids[:capN]
		}
		for _, id := range ids {
			ref, ok := refOfVertexID(asString(id))
			if !ok || seen[ref.NodeID()] || (filter != "" && !strings.Contains(strings.ToLower(ref.Name), filter)) {
				continue
			}
			seen[ref.NodeID()] = true
			refs = append(refs, ref)
		}
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Name < refs[j].Name })
	out.Total = len(refs)
	for i := offset; i < len(refs) && i < offset+limit; i++ {
		ref := refs[i]
		out.Results = append(out.Results, SearchResult{ID: ref.NodeID(), Type: ref.Type(), Namespace: ref.Namespace, Name: ref.Name, Matched: MatchName})
	}
	writeJSON(w, http.StatusOK, out)
}
