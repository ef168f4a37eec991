package explorer

import (
	"net/http"
	"strconv"
)

// ColumnLineage is the answer of /api/lf/v1/column-lineage: the fields
// found and the COLUMN_DERIVES edges between them.
type ColumnLineage struct {
	Center string        `json:"center"`
	Fields []ColumnField `json:"fields"`
	Edges  []ColumnEdge  `json:"edges"`
}

// ColumnField is one field of a dataset (a DatasetField vertex).
type ColumnField struct {
	ID        string `json:"id"` // datasetField:<namespace>:<dataset>:<field>
	Namespace string `json:"namespace"`
	Dataset   string `json:"dataset"`
	Field     string `json:"field"`
}

// ColumnEdge is one input field -> output field edge (COLUMN_DERIVES),
// with the transformation the producer's columnLineage facet gave.
type ColumnEdge struct {
	Origin                    string  `json:"origin"`
	Destination               string  `json:"destination"`
	TransformationType        *string `json:"transformationType"`
	TransformationDescription *string `json:"transformationDescription"`
}

// handleColumnLineage answers /api/lf/v1/column-lineage: the field lineage
// of a dataset, a job's outputs or one field (nodeId as mqColumnLineage
// takes it, without a version), `depth` levels upstream (default 1), and
// downstream with downstream=true. The walk is columnLineage, the one the
// Marquez route uses; only the shape of the answer differs.
func (s *Server) handleColumnLineage(w http.ResponseWriter, r *http.Request) {
	p, err := parseNodeID(r.URL.Query().Get("nodeId"), true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	depth, err := intParam(r, "depth", 1, 0, s.cfg.MaxDepth)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	down := false
	if v := r.URL.Query().Get("downstream"); v != "" {
		if down, err = strconv.ParseBool(v); err != nil {
			s.fail(w, r, badRequest("downstream=%s: want true or false", quoteShort(v)))
			return
		}
	}
	ref, err := s.resolve(r.Context(), p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	graph, err := s.columnLineage(r.Context(), ref, p.field, depth, down)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	center := ref.NodeID()
	if p.field != "" {
		center = KindField + ":" + ref.Namespace + ":" + ref.Name + ":" + p.field
	}
	writeJSON(w, http.StatusOK, columnLineageOf(center, graph))
}

// columnLineageOf reshapes Marquez's field graph: each field once, and an
// edge per input of a field (InputFields and InEdges are built pairwise).
func columnLineageOf(center string, graph []MQFieldNode) ColumnLineage {
	out := ColumnLineage{Center: center, Fields: make([]ColumnField, 0, len(graph)), Edges: []ColumnEdge{}}
	for _, n := range graph {
		out.Fields = append(out.Fields, ColumnField{ID: n.ID, Namespace: n.Data.Namespace, Dataset: n.Data.Dataset, Field: n.Data.Field})
		for i, in := range n.InEdges {
			e := ColumnEdge{Origin: in.Origin, Destination: n.ID}
			if i < len(n.Data.InputFields) {
				f := n.Data.InputFields[i]
				e.TransformationType, e.TransformationDescription = f.TransformationType, f.TransformationDescription
			}
			out.Edges = append(out.Edges, e)
		}
	}
	return out
}
