package explorer

import (
	"context"
	"fmt"
	"sort"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/lineage"
)

// maxAliasClaimants bounds how many datasets one alias lists (a conflict
// is reported with the first ones read).
const maxAliasClaimants = 16

// AmbiguousError is a node id that names more than one node (HTTP 409):
// two (namespace, name) splits of it are vertices of its kind, or, none
// being one, its alias splits stand for more than one dataset. The
// resolver never picks one of them.
type AmbiguousError struct {
	Msg        string
	Candidates []Ref
}

func (e *AmbiguousError) Error() string { return e.Msg }

// ambiguousCandidate is one candidate of a 409 answer.
type ambiguousCandidate struct {
	Type      string `json:"type"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	VertexID  string `json:"vertexId"`
	// NodeID is the candidate's unambiguous node id (vertex:<vertexId>).
	NodeID string `json:"nodeId"`
}

// ambiguousBody is the JSON of a 409: the error body and the candidates.
type ambiguousBody struct {
	Code       int                  `json:"code"`
	Message    string               `json:"message"`
	Error      string               `json:"error"`
	Candidates []ambiguousCandidate `json:"candidates"`
}

func (e *AmbiguousError) body(code int) ambiguousBody {
	b := ambiguousBody{Code: code, Message: e.Msg, Error: "ambiguous_node_id"}
	for _, c := range e.Candidates {
		b.Candidates = append(b.Candidates, ambiguousCandidate{Type: c.Type(), Namespace: c.Namespace, Name: c.Name, VertexID: c.VertexID(), NodeID: c.ExactNodeID()})
	}
	return b
}

// resolve finds the vertex a node id names. Rule: the splits that are
// vertices of the id's kind count first; exactly one is the answer, more
// than one is an AmbiguousError with all of them. With none (datasets),
// the splits that are DatasetAlias vertices count: the distinct datasets
// they stand for (ALIAS_OF) must be exactly one, else AmbiguousError
// (several claimants of one alias included). One request for all splits.
func (s *Server) resolve(ctx context.Context, p parsedID) (Ref, error) {
	ids := make([]string, 0, 2*len(p.candidates))
	for _, c := range p.candidates {
		ids = append(ids, c.VertexID())
	}
	if p.kind == KindDataset && !p.exact {
		for _, c := range p.candidates {
			ids = append(ids, aliasVertexID(c.Namespace, c.Name))
		}
	}
	rows, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		T, __ := gremlingo.T, gremlingo.T__
		return g.V(anyStrings(ids)...).Project("id", "targets").
			By(T.Id).By(__.Out(edgeAliasOf).HasLabel(lineage.LabelDataset).Id().Limit(maxAliasClaimants).Fold())
	})
	if err != nil {
		return Ref{}, err
	}
	var direct, aliased []Ref
	seen := map[string]bool{}
	for _, r := range rows {
		m, err := rowMap(r)
		if err != nil {
			return Ref{}, err
		}
		id := asString(m["id"])
		ref, ok := refOfVertexID(id)
		if !ok {
			continue
		}
		if len(id) >= 6 && id[:6] == "alias:" {
			l, _ := m["targets"].([]any)
			for _, t := range l {
				tid := asString(t)
				if tr, ok := refOfVertexID(tid); ok && tr.Kind == p.kind && !seen[tid] {
					seen[tid] = true
					aliased = append(aliased, tr)
				}
			}
			continue
		}
		if ref.Kind == p.kind {
			direct = append(direct, ref)
		}
	}
	for _, set := range [][]Ref{direct, aliased} {
		switch {
		case len(set) == 1:
			return set[0], nil
		case len(set) > 1:
			sort.Slice(set, func(i, j int) bool { return len(set[i].Namespace) < len(set[j].Namespace) })
			return Ref{}, &AmbiguousError{
				Msg:        fmt.Sprintf("node %s names %d nodes; ask by one of the candidates' nodeId (vertex:<vertexId>)", quoteShort(p.raw), len(set)),
				Candidates: set,
			}
		}
	}
	return Ref{}, &NotFoundError{Msg: fmt.Sprintf("node %s not found", quoteShort(p.raw))}
}

// aliasWithClaimants reads one alias of a node's details ({v: valueMap,
// claimants: [dataset vertex ids]}): an alias claimed by more than one
// dataset is marked Conflict and lists every claimant's exact node id.
func aliasWithClaimants(pm map[any]any) AliasName {
	am, _ := pm["v"].(map[any]any)
	ap := props(am)
	a := AliasName{Namespace: asString(ap[lineage.PropNamespace]), Name: asString(ap[lineage.PropName]), Type: asString(ap[lineage.PropAliasType])}
	cl := list(pm["claimants"])
	if len(cl) > 1 {
		a.Conflict = true
		for _, c := range cl {
			if r, ok := refOfVertexID(asString(c)); ok {
				a.ClaimedBy = append(a.ClaimedBy, r.ExactNodeID())
			}
		}
	}
	return a
}
