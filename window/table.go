package window

import (
	"github.com/lineageflow/lineageflow/lineage"
)

// Kind says whether an [Entry] is an edge or a vertex.
type Kind uint8

const (
	KindEdge   Kind = 'E'
	KindVertex Kind = 'V'
)

// Key identifies one entry of one window. For an edge, Label is the edge
// label and Out/In the endpoint vertex ids; for a vertex, Label is the
// vertex label, Out its id and In empty.
type Key struct {
	Bucket int64
	Kind   Kind
	Label  string
	Out    string
	In     string
}

// Props are the mergeable properties of an entry: for an edge the
// [lineage.Edge] properties (its Props in VProps), for a vertex its
// namespace and name (pure functions of its id) and its mergeable
// properties.
type Props struct {
	First, Last int64
	RunID       string
	Namespace   string
	Name        string
	VProps      lineage.Props
}

// merge folds o into p with [lineage.Edge.Merge] rules (vertices: the
// properties by [lineage.Prop] rules).
func (p *Props) merge(k Kind, o Props) {
	if o.VProps != "" && o.VProps != p.VProps {
		p.VProps = p.VProps.Merge(o.VProps) // an edge's too ([lineage.Edge.Props])
	}
	if k != KindEdge {
		return
	}
	if o.First < p.First {
		p.First = o.First
	}
	if o.Last > p.Last || (o.Last == p.Last && o.RunID > p.RunID) {
		p.Last, p.RunID = o.Last, o.RunID
	}
}

// Table holds the deltas collected since the last barrier, one per
// (window, key), already collapsed. Its size is bounded by the caller: the
// processor forces a barrier when [Table.Len] exceeds its cap. Not safe
// for concurrent use.
//
// The map holds an index into vals (a small map slot: one lookup when a
// key is folded again, and fewer cache lines to probe). Vertex properties
// added as a list ([Table.AddVertexProps]) are merged in place and
// encoded once, when the table is read ([Table.Range]).
type Table struct {
	m    map[Key]int32
	vals []tval
}

// tval is one entry: its key (Range reads vals in order, not the map)
// and properties; when l is set, the vertex properties are l (p.VProps
// is stale).
type tval struct {
	k Key
	p Props
	l *lineage.PropList
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{m: make(map[Key]int32)} }

// Len returns the number of distinct (window, key) entries.
func (t *Table) Len() int { return len(t.m) }

// AddEdge folds one edge contribution into the window starting at bucket.
func (t *Table) AddEdge(bucket int64, label, out, in string, first, last int64, runID string) {
	t.AddEdgeProps(bucket, label, out, in, first, last, runID, "")
}

// AddEdgeProps is AddEdge for an edge with further properties.
func (t *Table) AddEdgeProps(bucket int64, label, out, in string, first, last int64, runID string, props lineage.Props) {
	k := Key{Bucket: bucket, Kind: KindEdge, Label: label, Out: out, In: in}
	p := Props{First: first, Last: last, RunID: runID, VProps: props}
	if i, ok := t.m[k]; ok {
		t.vals[i].p.merge(KindEdge, p)
		return
	}
	t.insert(tval{k: k, p: p})
}

func (t *Table) insert(v tval) {
	t.m[v.k] = int32(len(t.vals))
	t.vals = append(t.vals, v)
}

// AddVertex records vertex v in the window starting at bucket, merging
// its properties with those recorded.
func (t *Table) AddVertex(bucket int64, v lineage.Vertex) {
	k := Key{Bucket: bucket, Kind: KindVertex, Label: v.Label, Out: v.ID}
	if i, ok := t.m[k]; ok {
		cur := &t.vals[i]
		switch {
		case v.Props == "":
		case cur.l != nil:
			cur.l.Add(v.Props.List()...)
		case v.Props != cur.p.VProps:
			cur.p.VProps = cur.p.VProps.Merge(v.Props)
		}
		return
	}
	t.insert(tval{k: k, p: Props{Namespace: v.Namespace, Name: v.Name, VProps: v.Props}})
}

// AddVertexProps is AddVertex for v with the properties ps (v.Props
// unused): the same as AddVertex with v.Props = lineage.MakeProps(ps...),
// without encoding ps nor re-encoding the vertex's properties at every
// call. ps is not kept.
func (t *Table) AddVertexProps(bucket int64, v lineage.Vertex, ps []lineage.Prop) {
	k := Key{Bucket: bucket, Kind: KindVertex, Label: v.Label, Out: v.ID}
	i, ok := t.m[k]
	if !ok {
		i = int32(len(t.vals))
		t.insert(tval{k: k, p: Props{Namespace: v.Namespace, Name: v.Name}})
	}
	cur := &t.vals[i]
	if len(ps) == 0 {
		return
	}
	if cur.l == nil {
		l := lineage.PropListOf(cur.p.VProps)
		cur.l = &l
	}
	cur.l.Add(ps...)
}

// Range calls fn for every entry, in no particular order (in fact the
// order of their first addition).
func (t *Table) Range(fn func(k Key, p Props)) {
	for i := range t.vals {
		v := &t.vals[i]
		if v.l != nil {
			v.p.VProps, v.l = v.l.Props(), nil
		}
		fn(v.k, v.p)
	}
}

// Reset empties the table, keeping its allocation when small.
func (t *Table) Reset() {
	if len(t.m) > 1<<16 {
		t.m, t.vals = make(map[Key]int32), nil
		return
	}
	clear(t.m)
	clear(t.vals)
	t.vals = t.vals[:0]
}

// Entry is a decoded window value: the key without its bucket, and props.
type Entry struct {
	Kind  Kind
	Label string
	Out   string
	In    string
	Props
}

// Merge folds o into e (same key).
func (e *Entry) Merge(o Entry) { e.Props.merge(e.Kind, o.Props) }

// Edge returns the edge of an edge entry, with its id.
func (e *Entry) Edge() lineage.Edge {
	return lineage.Edge{ID: lineage.EdgeID(e.Label, e.Out, e.In), Label: e.Label, OutV: e.Out, InV: e.In,
		FirstSeen: e.First, LastSeen: e.Last, LastRunID: e.RunID, Props: e.VProps}
}

// Vertex returns the vertex of a vertex entry.
func (e *Entry) Vertex() lineage.Vertex {
	return lineage.Vertex{ID: e.Out, Label: e.Label, Namespace: e.Namespace, Name: e.Name, Props: e.VProps}
}

// EntryOf returns the entry of (k, p).
func EntryOf(k Key, p Props) Entry {
	return Entry{Kind: k.Kind, Label: k.Label, Out: k.Out, In: k.In, Props: p}
}

// StoreKey returns the 32-byte idempotency key of k inside its window:
// [lineage.WindowKey] for edges, [lineage.VertexWindowKey] for vertices.
func (k Key) StoreKey() [32]byte {
	if k.Kind == KindVertex {
		return lineage.VertexWindowKey(k.Label, k.Out, k.Bucket)
	}
	return lineage.WindowKey(k.Label, k.Out, k.In, k.Bucket)
}
