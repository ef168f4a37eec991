package explorer

import (
	"context"
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// impactChunk bounds the frontier ids sent in one level request of an
// impact walk (a level of a wide graph is several requests).
const impactChunk = 500

// Impact is the answer of /api/lf/v1/impact: every dataset and job
// reachable from a node in one direction up to a depth, as a flat list,
// nearest first.
type Impact struct {
	Center      string       `json:"center"`
	Direction   string       `json:"direction"`
	Depth       int          `json:"depth"`
	Results     []ImpactNode `json:"results"`
	Count       int          `json:"count"`     // len(Results)
	Truncated   bool         `json:"truncated"` // the limit cut the list: more nodes are reachable
	HiddenEdges int64        `json:"hiddenEdges"`
	Time        *TimeFilter  `json:"time,omitempty"`
}

// ImpactNode is one node of an [Impact]: its distance in hops from the
// center (a dataset's job is 1, that job's outputs 2) and the node it was
// first reached through.
type ImpactNode struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Distance  int    `json:"distance"`
	Via       string `json:"via"`
}

// ImpactQuery is a request of /api/lf/v1/impact.
type ImpactQuery struct {
	NodeID    string
	Down      bool
	Depth     int
	Type      string // TypeDataset, TypeJob or "" (both)
	Namespace string // "" (all)
	Limit     int
	Time      TimeFilter
}

// Impact walks q.Depth levels from the node in one direction, breadth
// first, following every edge the time filter keeps (no fan-out cap: the
// limit bounds the answer), and lists the nodes of q.Type and q.Namespace
// it reaches; the walk goes through the nodes the filters leave out. It
// stops when the list holds q.Limit nodes and another is found
// (Truncated).
func (s *Server) Impact(ctx context.Context, q ImpactQuery) (*Impact, error) {
	p, err := parseNodeID(q.NodeID, false)
	if err != nil {
		return nil, err
	}
	center, err := s.resolve(ctx, p)
	if err != nil {
		return nil, err
	}
	dir := "up"
	if q.Down {
		dir = "down"
	}
	// The list grows by appending: room for a typical answer up front,
	// never the whole limit for a small one.
	out := &Impact{Center: center.NodeID(), Direction: dir, Depth: q.Depth, Results: make([]ImpactNode, 0, min(q.Limit, 1024))}
	if q.Time.active() {
		tf := q.Time
		out.Time = &tf
	}
	seen := map[string]bool{center.VertexID(): true}
	frontier := []string{center.VertexID()}
	// The fan-out of one vertex is bounded by what may still be listed:
	// CountCap at most.
	fanOut := min(s.cfg.CountCap, max(q.Limit, 1)*4)
	for d := 1; d <= q.Depth && len(frontier) > 0; d++ {
		var next []string
		for i := 0; i < len(frontier); i += impactChunk {
			chunk := frontier[i:min(i+impactChunk, len(frontier))]
			var rows []levelRow
			if q.Down {
				_, rows, err = s.level(ctx, nil, chunk, q.Time, fanOut)
			} else {
				rows, _, err = s.level(ctx, chunk, nil, q.Time, fanOut)
			}
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				out.HiddenEdges += r.hidden
				if len(r.neighbors) > fanOut {
					out.Truncated = true // more neighbours than the list could take
					r.neighbors = r.neighbors[:fanOut]
				}
				viaID := "" // the row's node id, made once it is needed
				for _, nb := range r.neighbors {
					if seen[nb] {
						continue
					}
					ref, ok := refOfVertexID(nb)
					if !ok || strings.HasPrefix(nb, "alias:") {
						continue
					}
					seen[nb] = true
					next = append(next, nb)
					if (q.Type != "" && ref.Type() != q.Type) || (q.Namespace != "" && ref.Namespace != q.Namespace) {
						continue
					}
					if len(out.Results) >= q.Limit {
						out.Truncated = true
						out.Count = len(out.Results)
						return out, nil
					}
					if viaID == "" {
						via, _ := refOfVertexID(r.id)
						viaID = via.NodeID()
					}
					out.Results = append(out.Results, ImpactNode{ID: ref.NodeID(), Type: ref.Type(), Namespace: ref.Namespace,
						Name: ref.Name, Distance: d, Via: viaID})
				}
			}
		}
		frontier = next
	}
	out.Count = len(out.Results)
	return out, nil
}

func (s *Server) handleImpact(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := ImpactQuery{NodeID: v.Get("nodeId"), Type: v.Get("type"), Namespace: v.Get("namespace")}
	var err error
	switch d := v.Get("direction"); d {
	case "", "down":
		q.Down = true
	case "up":
	default:
		s.fail(w, r, badRequest("direction=%s: want down or up", quoteShort(d)))
		return
	}
	switch q.Type {
	case "", TypeDataset, TypeJob:
	default:
		s.fail(w, r, badRequest("type=%s: want DATASET or JOB", quoteShort(q.Type)))
		return
	}
	if q.Depth, err = intParam(r, "depth", 3, 1, s.cfg.MaxDepth); err != nil {
		s.fail(w, r, err)
		return
	}
	if q.Limit, err = intParam(r, "limit", s.cfg.MaxImpact, 1, s.cfg.MaxImpact); err != nil {
		s.fail(w, r, err)
		return
	}
	format := v.Get("format")
	if format != "" && format != "json" && format != "csv" {
		s.fail(w, r, badRequest("format=%s: want json or csv", quoteShort(format)))
		return
	}
	if _, err := parseNodeID(q.NodeID, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if q.Time, err = s.timeFilter(r, time.Now()); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.Impact(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if format != "csv" {
		writeJSON(w, http.StatusOK, res)
		return
	}
	writeImpactCSV(w, res)
}

// writeImpactCSV streams the list as CSV, row by row from the answer (no
// second copy of it): a header, then id, type, namespace, name, distance,
// via. A truncated list says so in the X-Lineageflow-Truncated header.
func writeImpactCSV(w http.ResponseWriter, res *Impact) {
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="impact.csv"`)
	h.Set("X-Lineageflow-Count", strconv.Itoa(res.Count))
	h.Set("X-Lineageflow-Truncated", strconv.FormatBool(res.Truncated))
	w.WriteHeader(http.StatusOK)
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"id", "type", "namespace", "name", "distance", "via"})
	row := make([]string, 6)
	for i, n := range res.Results {
		row[0], row[1], row[2], row[3], row[4], row[5] = n.ID, n.Type, n.Namespace, n.Name, strconv.Itoa(n.Distance), n.Via
		_ = cw.Write(row)
		if i%1000 == 999 {
			cw.Flush()
		}
	}
	cw.Flush()
}
