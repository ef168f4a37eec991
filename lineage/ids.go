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
// window or run that reported it.
func EdgeID(label, outV, inV string) string {
	var sum [sha256.Size]byte
	h := sha256.New()
	writeLP(h, label)
	writeLP(h, outV)
	writeLP(h, inV)
	h.Sum(sum[:0])
	return label + ":" + hex.EncodeToString(sum[:16])
}

// NewEdge returns the edge (outV)-[label]->(inV) with its id and the given
// properties.
func NewEdge(label, outV, inV string, firstSeen, lastSeen int64, runID string) Edge {
	return Edge{ID: EdgeID(label, outV, inV), Label: label, OutV: outV, InV: inV,
		FirstSeen: firstSeen, LastSeen: lastSeen, LastRunID: runID}
}

// WindowKey is the idempotency key of a collapsed edge in one window:
// SHA-256 over the length-prefixed (label, outV, inV) and the window bucket
// (start of the window in Unix milliseconds, 8 bytes big-endian).
func WindowKey(label, outV, inV string, bucket int64) [sha256.Size]byte {
	var sum [sha256.Size]byte
	h := sha256.New()
	writeLP(h, label)
	writeLP(h, outV)
	writeLP(h, inV)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(bucket))
	h.Write(b[:])
	h.Sum(sum[:0])
	return sum
}

type byteWriter interface{ Write([]byte) (int, error) }

func writeLP(w byteWriter, s string) {
	var n [binary.MaxVarintLen64]byte
	_, _ = w.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	_, _ = w.Write([]byte(s))
}
