package processor

import (
	"github.com/lineageflow/lineageflow/internal/enc"
	"github.com/lineageflow/lineageflow/lineage"
)

// colRef is one input field -> output field pair of a run (or JobEvent)
// with the vertex ids it needs.
type colRef struct {
	e           lineage.FieldEdge
	inDS, outDS string // dataset vertex ids
	inF, outF   string // DatasetField vertex ids
	// props are the COLUMN_DERIVES properties, stamped with the eventTime
	// of the run's first event naming the pair (lineage.FieldEdge.Props).
	props lineage.Props
}

func (m *vertexIDs) col(e lineage.FieldEdge, t int64) colRef {
	return colRef{e: e, inDS: m.dataset(e.In), outDS: m.dataset(e.Out),
		inF: lineage.DatasetFieldID(e.In, e.InField), outF: lineage.DatasetFieldID(e.Out, e.OutField), props: e.Props(t)}
}

// eventCols returns the field pairs of the current event's columnLineage
// facets (reusing the shard's scratch slice); none with NoColumnLineage.
// A facet whose bytes (and output dataset) the shard read recently gives
// the pairs it gave then (Edges is a function of them): a job's runs
// repeat the same facet.
func (s *Shard) eventCols() []lineage.FieldEdge {
	s.colBuf = s.colBuf[:0]
	if s.cfg.NoColumnLineage {
		return nil
	}
	for _, c := range s.ev.Columns {
		if m, ok := s.colMemo.m[string(c.Raw)]; ok && m.out == c.Output {
			s.colBuf = append(s.colBuf, m.edges...)
			continue
		}
		n := len(s.colBuf)
		s.colBuf = c.Edges(s.colBuf)
		s.colMemo.put(c, s.colBuf[n:])
	}
	return s.colBuf
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

// colMemoBytes bounds a shard's colMemo (facet bytes, plus ~200 B a pair).
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
func (t *runTable) addCols(r *run, es []lineage.FieldEdge, room int, evTime int64) (dropped int) {
	if len(es) == 0 {
		return 0
	}
	if r.colIdx == nil {
		r.colIdx = make(map[colKey]struct{}, len(r.cols)+len(es))
		for i := range r.cols {
			r.colIdx[colKeyOf(&r.cols[i].e)] = struct{}{}
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
		r.cols = append(r.cols, t.ids.col(es[i], evTime))
	}
	return dropped
}

// appendCols appends a run's field pairs to its value (after the Run
// vertex state; a value written before column lineage has none).
func appendCols(dst []byte, cols []colRef) []byte {
	dst = enc.AppendVarint(dst, int64(len(cols)))
	for i := range cols {
		e := &cols[i].e
		dst = enc.AppendString(dst, e.In.Namespace)
		dst = enc.AppendString(dst, e.In.Name)
		dst = enc.AppendString(dst, e.InField)
		dst = enc.AppendString(dst, e.Out.Namespace)
		dst = enc.AppendString(dst, e.Out.Name)
		dst = enc.AppendString(dst, e.OutField)
	}
	// The pairs' properties, in the same order (absent in values written
	// before them: every pair then has none).
	for i := range cols {
		dst = enc.AppendString(dst, string(cols[i].props))
	}
	return dst
}

// readCols reads what appendCols wrote, if anything is left.
func readCols(rd *enc.Reader, ids *vertexIDs) []colRef {
	if !rd.OK() || rd.Len() == 0 {
		return nil
	}
	n := rd.Varint()
	if n < 0 || n > int64(rd.Len()) {
		failReader(rd)
		return nil
	}
	cols := make([]colRef, 0, n)
	for i := int64(0); i < n && rd.OK(); i++ {
		e := lineage.FieldEdge{In: lineage.Dataset{Namespace: rd.String(), Name: rd.String()}, InField: rd.String(),
			Out: lineage.Dataset{Namespace: rd.String(), Name: rd.String()}, OutField: rd.String()}
		cols = append(cols, ids.col(e, 0))
	}
	if rd.OK() && rd.Len() > 0 {
		for i := range cols {
			p, err := lineage.DecodeProps(rd.String())
			if err != nil {
				failReader(rd)
				return nil
			}
			cols[i].props = p
		}
	}
	return cols
}

// emitCols adds to the window the column lineage of cols[from:]: both
// DatasetField vertices, their FIELD_OF edges and their Dataset vertices,
// and input field -[COLUMN_DERIVES]-> output field, stamped like the
// emission's DERIVES. Each pair counts 3 edges against the emission's
// budget (edges so far: used); a pair past it is left out and counted.
// With the refresh lane, a FIELD_OF or COLUMN_DERIVES the shard saw
// already goes to the refresh window, with its endpoint vertices.
func (w *windowTable) emitCols(e *emission, cols []colRef, from, used int) (dropped int64) {
	t := w.tab
	for i := from; i < len(cols); i++ {
		c := &cols[i]
		if w.maxEdges > 0 && used+3 > w.maxEdges {
			dropped++
			continue
		}
		used += 3
		var fieldOf [2]int64 // the bucket of each field's FIELD_OF (and vertex)
		for i, f := range [2]struct {
			d       lineage.Dataset
			f       string
			fid, id string
		}{{c.e.In, c.e.InField, c.inF, c.inDS}, {c.e.Out, c.e.OutField, c.outF, c.outDS}} {
			b := w.edgeLane(e.bucket, lineage.EdgeFieldOf, f.fid, f.id)
			fieldOf[i] = b
			w.touch(b, e.pin)
			fv := fieldVertex(f.d, f.f, f.fid)
			t.AddVertex(b, fv)
			t.AddVertex(b, lineage.Vertex{ID: f.id, Label: lineage.LabelDataset, Namespace: f.d.Namespace, Name: f.d.Name})
			t.AddEdge(b, lineage.EdgeFieldOf, f.fid, f.id, e.first, e.last, e.runID)
		}
		// Its endpoints must be in its window too (mergeE needs them in
		// the batch): added unless their FIELD_OF put them there.
		// Its content is its existence and its transformation values:
		// a changed transformation goes to the next window.
		b := w.edgePropsLane(e.bucket, lineage.EdgeColumnDerives, c.inF, c.outF, c.props)
		w.touch(b, e.pin)
		for i, f := range [2]struct {
			d   lineage.Dataset
			f   string
			fid string
		}{{c.e.In, c.e.InField, c.inF}, {c.e.Out, c.e.OutField, c.outF}} {
			if fieldOf[i] != b {
				t.AddVertex(b, fieldVertex(f.d, f.f, f.fid))
			}
		}
		t.AddEdgeProps(b, lineage.EdgeColumnDerives, c.inF, c.outF, e.first, e.last, e.runID, c.props)
		w.spillIfFull()
	}
	return dropped
}

// fieldVertex is lineage.DatasetFieldVertex(d, f) whose id, fid, is known
// already (not built again).
func fieldVertex(d lineage.Dataset, f, fid string) lineage.Vertex {
	return lineage.Vertex{ID: fid, Label: lineage.LabelDatasetField, Namespace: d.Namespace, Name: d.Name,
		Props: lineage.MakeProps(lineage.StrConst(lineage.PropField, f))}
}
