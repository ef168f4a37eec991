package sink

import "github.com/lineageflow/lineageflow/lineage"

// Estimated GraphBinary size of one chained mergeV / mergeE step with its
// options and property side effects, beyond the bytes of its strings. The
// figures are generous upper bounds: gremlinproxy measured ~400 bytes per
// edge record on the wire with gremlin-go v3.7.4 (TestRealFaults logs
// MaxRequestBytes); each string appears with a 5-byte header.
const (
	vertexOverhead = 400
	edgeOverhead   = 1200
	requestBase    = 256
	propOverhead   = 600 // per property: its onCreate entries and its guarded side effect
)

func vertexBytes(v lineage.Vertex) int {
	return vertexOverhead + 2*len(v.ID) + 2*len(v.Label) + len(v.Namespace) + len(v.Name) + propOverhead*v.Props.Len() + 3*len(v.Props)
}

func edgeBytes(e lineage.Edge) int {
	return edgeOverhead + len(e.ID) + len(e.Label) + len(e.OutV) + len(e.InV) + 3*len(e.LastRunID) + 2*len(e.Props)
}

// chunkVertices splits vs, in order, into requests of at most max records
// and about maxBytes bytes (a single oversized record still gets its own
// request).
func chunkVertices(vs []lineage.Vertex, max, maxBytes int) [][]lineage.Vertex {
	return chunk(vs, max, maxBytes, vertexBytes)
}

// chunkEdges is [chunkVertices] for edges.
func chunkEdges(es []lineage.Edge, max, maxBytes int) [][]lineage.Edge {
	return chunk(es, max, maxBytes, edgeBytes)
}

func chunk[T any](xs []T, max, maxBytes int, bytes func(T) int) [][]T {
	var out [][]T
	start, size := 0, requestBase
	for i, x := range xs {
		b := bytes(x)
		if i > start && (i-start >= max || size+b > maxBytes) {
			out = append(out, xs[start:i:i])
			start, size = i, requestBase
		}
		size += b
	}
	if start < len(xs) {
		out = append(out, xs[start:len(xs):len(xs)])
	}
	return out
}
