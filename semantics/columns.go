package semantics

import "github.com/lineageflow/lineageflow/lineage"

// eventCols returns the field pairs of ev's columnLineage facets (reusing
// the rules' scratch slice); none with NoColumnLineage. A facet whose
// bytes (and output dataset) were read recently gives the pairs it gave
// then (Edges is a function of them): a job's runs repeat the same facet.
func (x *Rules) eventCols(ev *lineage.Event) []lineage.FieldEdge {
	x.colBuf = x.colBuf[:0]
	if x.cfg.NoColumnLineage {
		return nil
	}
	for _, c := range ev.Columns {
		if m, ok := x.colMemo.m[string(c.Raw)]; ok && m.out == c.Output {
			x.colBuf = append(x.colBuf, m.edges...)
			continue
		}
		n := len(x.colBuf)
		x.colBuf = c.Edges(x.colBuf)
		x.colMemo.put(c, x.colBuf[n:])
	}
	return x.colBuf
}

// colMemo remembers the field pairs of recent columnLineage facets by
// their bytes, within colMemoBytes (emptied when full).
type colMemo struct {
	m     map[string]colMemoEntry
	bytes int
}

type colMemoEntry struct {
	out   lineage.Dataset
	edges []lineage.FieldEdge
}

// colMemoBytes bounds a colMemo (facet bytes, plus ~200 B a pair).
const colMemoBytes = 1 << 20

func (m *colMemo) put(c lineage.ColumnLineage, edges []lineage.FieldEdge) {
	size := len(c.Raw) + 200*len(edges)
	if size > colMemoBytes/16 {
		return
	}
	if m.m == nil || m.bytes+size > colMemoBytes {
		m.m, m.bytes = map[string]colMemoEntry{}, 0
	}
	m.m[string(c.Raw)] = colMemoEntry{out: c.Output, edges: append([]lineage.FieldEdge(nil), edges...)}
	m.bytes += size
}

// colKey identifies a field pair in a run's set: the pair itself, as
// its two DatasetField ids would (lineage.DatasetFieldID is injective),
// without building them for a pair the run holds already.
type colKey struct {
	in, out           lineage.Dataset
	inField, outField string
}

func colKeyOf(e *lineage.FieldEdge) colKey {
	return colKey{in: e.In, out: e.Out, inField: e.InField, outField: e.OutField}
}

// addCols adds to r the field pairs of es not yet in it, at most room of
// them, and returns how many new ones did not fit.
func (x *Rules) addCols(r *Run, es []lineage.FieldEdge, room int, evTime int64) (dropped int) {
	if len(es) == 0 {
		return 0
	}
	if r.colIdx == nil {
		r.colIdx = make(map[colKey]struct{}, len(r.Cols)+len(es))
		for i := range r.Cols {
			r.colIdx[colKeyOf(&r.Cols[i].E)] = struct{}{}
		}
	}
	for i := range es {
		k := colKeyOf(&es[i])
		if _, ok := r.colIdx[k]; ok {
			continue
		}
		if room <= 0 {
			dropped++
			continue
		}
		room--
		r.colIdx[k] = struct{}{}
		r.Cols = append(r.Cols, x.ids.Col(es[i], evTime))
	}
	return dropped
}

// emitCols writes the column lineage of cols[from:]: both DatasetField
// vertices, their FIELD_OF edges and their Dataset vertices, and input
// field -[COLUMN_DERIVES]-> output field, stamped like the emission's
// DERIVES. Each pair counts 3 edges against the emission's budget (edges
// so far: used); a pair past it is left out and counted. FIELD_OF and
// COLUMN_DERIVES may take another lane (Emitter.EdgeLane), with their
// endpoint vertices.
func (x *Rules) emitCols(em Emitter, e *emission, cols []ColRef, from, used int) (dropped int64) {
	maxEdges := x.cfg.MaxEmissionEdges
	for i := from; i < len(cols); i++ {
		c := &cols[i]
		if maxEdges > 0 && used+3 > maxEdges {
			dropped++
			continue
		}
		used += 3
		var fieldOf [2]int64 // the bucket of each field's FIELD_OF (and vertex)
		for i, f := range [2]struct {
			d       lineage.Dataset
			f       string
			fid, id string
		}{{c.E.In, c.E.InField, c.InF, c.InDS}, {c.E.Out, c.E.OutField, c.OutF, c.OutDS}} {
			b := em.EdgeLane(e.bucket, lineage.EdgeFieldOf, f.fid, f.id)
			fieldOf[i] = b
			em.Touch(b, e.from)
			em.AddVertex(b, fieldVertex(f.d, f.f, f.fid))
			em.AddVertex(b, lineage.Vertex{ID: f.id, Label: lineage.LabelDataset, Namespace: f.d.Namespace, Name: f.d.Name})
			em.AddEdge(b, lineage.EdgeFieldOf, f.fid, f.id, e.first, e.last, e.runID)
		}
		// Its endpoints must be in its window too (the sink needs them in
		// the batch): added unless their FIELD_OF put them there. Its
		// content is its existence and its transformation values: a
		// changed transformation goes to the next window.
		b := em.EdgePropsLane(e.bucket, lineage.EdgeColumnDerives, c.InF, c.OutF, c.Props)
		em.Touch(b, e.from)
		for i, f := range [2]struct {
			d   lineage.Dataset
			f   string
			fid string
		}{{c.E.In, c.E.InField, c.InF}, {c.E.Out, c.E.OutField, c.OutF}} {
			if fieldOf[i] != b {
				em.AddVertex(b, fieldVertex(f.d, f.f, f.fid))
			}
		}
		em.AddEdgeProps(b, lineage.EdgeColumnDerives, c.InF, c.OutF, e.first, e.last, e.runID, c.Props)
		em.MaySpill()
	}
	return dropped
}

// fieldVertex is lineage.DatasetFieldVertex(d, f) whose id, fid, is known
// already (not built again).
func fieldVertex(d lineage.Dataset, f, fid string) lineage.Vertex {
	return lineage.Vertex{ID: fid, Label: lineage.LabelDatasetField, Namespace: d.Namespace, Name: d.Name,
		Props: lineage.MakeProps(lineage.StrConst(lineage.PropField, f))}
}
