package sink

import "github.com/lineageflow/lineageflow/internal/lineage"

// Estimated GraphBinary size of one chained mergeV / mergeE step with its
// options and property side effects, beyond the bytes of its strings. The
// figures are generous upper bounds: gremlinproxy measured ~400 bytes per
// edge record on the wire with gremlin-go v3.7.4 (TestRealFaults logs
// MaxRequestBytes); each string appears with a 5-byte header.
const (
	vertexOverhead = 400
	edgeOverhead   = 1200
	requestBase    = 256
)

func vertexBytes(v lineage.Vertex) int {
	return vertexOverhead + 2*len(v.ID) + 2*len(v.Label) + len(v.Namespace) + len(v.Name)
}

func edgeBytes(e lineage.Edge) int {
	return edgeOverhead + len(e.ID) + len(e.Label) + len(e.OutV) + len(e.InV) + 3*len(e.LastRunID)
}

// chunkVertices splits vs, in order, into requests of at most max records
// and about maxBytes bytes (a single oversized record still gets its own
// request).
func chunkVertices(vs []lineage.Vertex, max, maxBytes int) [][]lineage.Vertex {
	var out [][]lineage.Vertex
	start, size := 0, requestBase
	for i, v := range vs {
		b := vertexBytes(v)
		if i > start && (i-start >= max || size+b > maxBytes) {
			out = append(out, vs[start:i:i])
			start, size = i, requestBase
		}
		size += b
	}
	if start < len(vs) {
		out = append(out, vs[start:len(vs):len(vs)])
	}
	return out
}

// chunkEdges is [chunkVertices] for edges.
func chunkEdges(es []lineage.Edge, max, maxBytes int) [][]lineage.Edge {
	var out [][]lineage.Edge
	start, size := 0, requestBase
	for i, e := range es {
		b := edgeBytes(e)
		if i > start && (i-start >= max || size+b > maxBytes) {
			out = append(out, es[start:i:i])
			start, size = i, requestBase
		}
		size += b
	}
	if start < len(es) {
		out = append(out, es[start:len(es):len(es)])
	}
	return out
}
