package lineage

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
)

// DatasetID is the vertex id of a dataset: "dataset:" + len(namespace) +
// ":" + namespace + "/" + name. The byte length of the namespace makes the
// encoding injective whatever the names hold ('/', ':', '|', quotes,
// Unicode): s3://bucket + a/b and s3://bucket/a + b get different ids. It
// stays readable in the Neptune console.
func DatasetID(d Dataset) string { return vertexID("dataset:", d.Namespace, d.Name) }

// JobID is the vertex id of a job, encoded like [DatasetID] with "job:".
func JobID(j Job) string { return vertexID("job:", j.Namespace, j.Name) }

func vertexID(prefix, ns, name string) string {
	b := make([]byte, 0, len(prefix)+len(ns)+len(name)+8)
	b = append(b, prefix...)
	b = strconv.AppendInt(b, int64(len(ns)), 10)
	b = append(b, ':')
	b = append(b, ns...)
	b = append(b, '/')
	b = append(b, name...)
	return string(b)
}

// RunVertexID is the vertex id of a run: "run:" + len(runId) + ":" +
// runId + "/" (the encoding of [DatasetID] with an empty name).
func RunVertexID(runID string) string { return vertexID("run:", runID, "") }

// RunVertex returns the vertex of a run with properties ps.
func RunVertex(runID string, ps ...Prop) Vertex {
	return Vertex{ID: RunVertexID(runID), Label: LabelRun, Props: MakeProps(ps...)}
}

// DatasetVertex returns the vertex of a dataset.
func DatasetVertex(d Dataset) Vertex {
	return Vertex{ID: DatasetID(d), Label: LabelDataset, Namespace: d.Namespace, Name: d.Name}
}

// JobVertex returns the vertex of a job.
func JobVertex(j Job) Vertex {
	return Vertex{ID: JobID(j), Label: LabelJob, Namespace: j.Namespace, Name: j.Name}
}

// EdgeID is the id of the one edge (outV)-[label]->(inV): label + ":" + the
// first 128 bits of SHA-256 over the length-prefixed (label, outV, inV),
// in hex. There is exactly one edge per (outV, label, inV), whatever the
// window or run that reported it. It allocates only the string (for labels
// up to 63 bytes): a barrier calls it once per sealed edge.
func EdgeID(label, outV, inV string) string {
	var stack [512]byte
	b := stack[:0]
	b = appendLP(b, label)
	b = appendLP(b, outV)
	b = appendLP(b, inV)
	sum := sha256.Sum256(b)
	var idBuf [96]byte
	id := idBuf[:0]
	if n := len(label) + 1 + 32; n > len(idBuf) {
		id = make([]byte, 0, n)
	}
	id = append(id, label...)
	id = append(id, ':')
	id = hex.AppendEncode(id, sum[:16])
	return string(id)
}

// NewEdge returns the edge (outV)-[label]->(inV) with its id and the given
// properties.
func NewEdge(label, outV, inV string, firstSeen, lastSeen int64, runID string) Edge {
	return Edge{ID: EdgeID(label, outV, inV), Label: label, OutV: outV, InV: inV,
		FirstSeen: firstSeen, LastSeen: lastSeen, LastRunID: runID}
}

// WindowKey is the idempotency key of a collapsed edge in one window:
// SHA-256 over the length-prefixed (label, outV, inV) and the window bucket
// (start of the window in Unix milliseconds, 8 bytes big-endian). It does
// not allocate.
func WindowKey(label, outV, inV string, bucket int64) [sha256.Size]byte {
	return windowKey("", label, outV, inV, bucket)
}

// VertexWindowKey is the idempotency key of a vertex in one window:
// WindowKey("V:"+label, id, "", bucket), without building the string (no
// edge label starts with "V:", so it never equals an edge's key).
func VertexWindowKey(label, id string, bucket int64) [sha256.Size]byte {
	return windowKey("V:", label, id, "", bucket)
}

// windowKey is WindowKey(prefix+label, outV, inV, bucket): the
// length-prefixed fields go into a stack buffer (inputs over 512 bytes
// spill to the heap) hashed with one sha256.Sum256.
func windowKey(prefix, label, outV, inV string, bucket int64) [sha256.Size]byte {
	var stack [512]byte
	b := stack[:0]
	b = binary.AppendUvarint(b, uint64(len(prefix)+len(label)))
	b = append(b, prefix...)
	b = append(b, label...)
	b = appendLP(b, outV)
	b = appendLP(b, inV)
	b = binary.BigEndian.AppendUint64(b, uint64(bucket))
	return sha256.Sum256(b)
}

// appendLP appends the varint length of s and s.
func appendLP(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}
