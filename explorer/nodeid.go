package explorer

import (
	"fmt"
	"strconv"
	"strings"
)

// Kinds of node, as in Marquez's node ids ("dataset:<ns>:<name>").
const (
	KindDataset = "dataset"
	KindJob     = "job"
	KindField   = "datasetField"
)

// Node types in answers (Marquez's NodeType).
const (
	TypeDataset = "DATASET"
	TypeJob     = "JOB"
)

// maxSplitCandidates bounds how many (namespace, name) splits of one node
// id are tried: a name with thousands of ':' costs one bounded lookup.
const maxSplitCandidates = 64

// MaxNodeIDBytes bounds a node id (any route's nodeId) before any other
// work: a longer id is a 400 naming nodeId and this limit. It is well over
// any real namespace plus name (the write side bounds names far below it)
// and far under what would make one lookup costly.
const MaxNodeIDBytes = 256 << 10

// maxSplitBytes bounds the bytes of all candidate splits of one id together
// (each split repeats most of the id, and datasets read each twice: as a
// dataset and as an alias): the lookup stays well under gremlin-go's 1 MiB
// write buffer. The longest id gets its leftmost split only; any id under
// 4 KiB gets all 64.
const maxSplitBytes = 256 << 10

// Ref names a dataset or job by namespace and name.
type Ref struct {
	Kind      string // KindDataset or KindJob
	Namespace string
	Name      string
}

// NodeID is the Marquez-style node id of r: "dataset:<ns>:<name>".
func (r Ref) NodeID() string { return r.Kind + ":" + r.Namespace + ":" + r.Name }

// VertexID is the graph vertex id of r (lineage.DatasetID / lineage.JobID:
// the kind, the byte length of the namespace, the namespace, '/', the
// name).
func (r Ref) VertexID() string { return vertexID(r.Kind+":", r.Namespace, r.Name) }

// Type is TypeDataset or TypeJob.
func (r Ref) Type() string {
	if r.Kind == KindJob {
		return TypeJob
	}
	return TypeDataset
}

func vertexID(prefix, ns, name string) string {
	return prefix + strconv.Itoa(len(ns)) + ":" + ns + "/" + name
}

// aliasVertexID is the id of a DatasetAlias vertex (the model's "alias:"
// id, length-prefixed like the others).
func aliasVertexID(ns, name string) string { return vertexID("alias:", ns, name) }

// refOfVertexID decodes a Dataset, Job or DatasetAlias vertex id (the
// encoding is injective: the namespace's byte length says where it ends).
func refOfVertexID(id string) (Ref, bool) {
	kind, rest, ok := strings.Cut(id, ":")
	if !ok || (kind != KindDataset && kind != KindJob && kind != "alias") {
		return Ref{}, false
	}
	n, rest, ok := strings.Cut(rest, ":")
	if !ok {
		return Ref{}, false
	}
	l, err := strconv.Atoi(n)
	if err != nil || l < 0 || l >= len(rest) || rest[l] != '/' {
		return Ref{}, false
	}
	if kind == "alias" {
		kind = KindDataset
	}
	return Ref{Kind: kind, Namespace: rest[:l], Name: rest[l+1:]}, true
}

// BadRequestError is a malformed request parameter (HTTP 400).
type BadRequestError struct{ Msg string }

func (e *BadRequestError) Error() string { return e.Msg }

func badRequest(format string, a ...any) error {
	return &BadRequestError{Msg: fmt.Sprintf(format, a...)}
}

// NotFoundError is an unknown node (HTTP 404).
type NotFoundError struct{ Msg string }

func (e *NotFoundError) Error() string { return e.Msg }

// parsedID is a node id split into its kind and every (namespace, name)
// reading of its ':' positions, left to right.
type parsedID struct {
	raw        string
	kind       string
	candidates []Ref
	field      string // datasetField ids: the field (after the last ':')
	exact      bool   // a "vertex:" id: its one candidate, no alias reading
}

// KindVertex prefixes an unambiguous node id: "vertex:" and a Dataset or
// Job vertex id (Ref.VertexID, length-prefixed), accepted wherever a
// nodeId is. Search results and 409 candidates carry it.
const KindVertex = "vertex"

// ExactNodeID is r's unambiguous node id ("vertex:" + r.VertexID()).
func (r Ref) ExactNodeID() string { return KindVertex + ":" + r.VertexID() }

// parseNodeID splits "dataset:<ns>:<name>" or "job:<ns>:<name>". A
// namespace may hold ':' (s3://bucket), so every ':' after the kind is a
// possible end of the namespace; the resolver takes the leftmost split that
// names an existing vertex. With allowField, "datasetField:<ns>:<name>:<field>"
// is accepted too (the field is after the last ':').
func parseNodeID(s string, allowField bool) (parsedID, error) {
	p := parsedID{raw: s}
	if len(s) > MaxNodeIDBytes {
		return parsedID{}, badRequest("nodeId is %d bytes: the limit is %d bytes", len(s), MaxNodeIDBytes)
	}
	if s == "" {
		return p, badRequest("nodeId is required: dataset:<namespace>:<name> or job:<namespace>:<name>")
	}
	kind, rest, ok := strings.Cut(s, ":")
	if ok && kind == KindVertex {
		ref, ok := refOfVertexID(rest)
		if !ok || strings.HasPrefix(rest, "alias:") || ref.Namespace == "" || ref.Name == "" {
			return p, badRequest("nodeId %s: want vertex:<dataset or job vertex id>", quoteShort(s))
		}
		p.kind, p.exact, p.candidates = ref.Kind, true, []Ref{ref}
		return p, nil
	}
	switch {
	case !ok:
		return p, badRequest("nodeId %s: want dataset:<namespace>:<name> or job:<namespace>:<name>", quoteShort(s))
	case kind == KindDataset || kind == KindJob:
	case kind == KindField && allowField:
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 || i == len(rest)-1 {
			return p, badRequest("nodeId %s: want datasetField:<namespace>:<name>:<field>", quoteShort(s))
		}
		p.field, rest, kind = rest[i+1:], rest[:i], KindDataset
	default:
		return p, badRequest("nodeId %s: unknown kind %s (want dataset or job)", quoteShort(s), quoteShort(kind))
	}
	p.kind = kind
	budget := maxSplitBytes
	for i := 0; i < len(rest) && len(p.candidates) < maxSplitCandidates; i++ {
		if rest[i] != ':' || i == 0 || i == len(rest)-1 {
			continue
		}
		if budget -= len(rest) - 1; budget < 0 {
			break
		}
		p.candidates = append(p.candidates, Ref{Kind: kind, Namespace: rest[:i], Name: rest[i+1:]})
	}
	if len(p.candidates) == 0 {
		return p, badRequest("nodeId %s: want %s:<namespace>:<name> with a non-empty namespace and name", quoteShort(s), kind)
	}
	return p, nil
}

// quoteShort quotes s for an error message, cut to 80 bytes.
func quoteShort(s string) string {
	if len(s) > 80 {
		return strconv.Quote(s[:80]) + "..."
	}
	return strconv.Quote(s)
}
