package lineage

import (
	"bytes"
	"slices"
	"strconv"
)

// Column lineage labels and property keys.
const (
	// LabelDatasetField is one field (column) of a dataset. Its namespace
	// and name are the dataset's; its field name is the PropField property.
	LabelDatasetField = "DatasetField"
	// EdgeFieldOf is DatasetField -[FIELD_OF]-> Dataset.
	EdgeFieldOf = "FIELD_OF"
	// EdgeColumnDerives is DatasetField -[COLUMN_DERIVES]-> DatasetField:
	// the output field (in) is derived from the input field (out). Given,
	// like DERIVES, by committed runs and JobEvents only.
	EdgeColumnDerives = "COLUMN_DERIVES"
	// PropField is the DatasetField property holding the field name
	// (constant).
	PropField = "field"
	// PropTransformationType and PropTransformationDescription are the
	// COLUMN_DERIVES properties saying how the output field is computed
	// from the input field (columnLineage facet), last writer wins by
	// eventTime ([FieldEdge.Props]).
	PropTransformationType        = "transformationType"
	PropTransformationDescription = "transformationDescription"
)

// FieldEdge is one input field -> output field pair of a columnLineage
// facet.
type FieldEdge struct {
	In       Dataset
	InField  string
	Out      Dataset
	OutField string
	// TransformationType and TransformationDescription say how (""
	// when the facet does not): from the input field's transformations
	// (facet 1-2-0: each "TYPE" or "TYPE/SUBTYPE", joined by ", "; their
	// descriptions joined by "; "), else from the output field's
	// transformationType and transformationDescription (older facets).
	TransformationType, TransformationDescription string
}

// Props are the COLUMN_DERIVES properties of e named at eventTime t: its
// transformation type and description, each last writer wins (greatest
// (eventTime, value)); none when the facet gave none.
func (e *FieldEdge) Props(t int64) Props {
	var ps []Prop
	if e.TransformationType != "" {
		ps = append(ps, StrLWW(PropTransformationType, e.TransformationType, t))
	}
	if e.TransformationDescription != "" {
		ps = append(ps, StrLWW(PropTransformationDescription, e.TransformationDescription, t))
	}
	if len(ps) == 0 {
		return ""
	}
	return MakeProps(ps...)
}

// transformations reads the 1-2-0 transformations of an input field, a
// JSON array of objects and nulls (anything else gives nothing, as it fails
// encoding/json's Unmarshal): each "type" or "type/subtype" joined by ", ",
// their descriptions joined by "; "; an element without a non-empty string
// type is left out.
func transformations(raw []byte) (typ, desc string) {
	var s scanner
	s.reset(raw)
	if s.peek() != '[' {
		return "", "" // absent, null or not an array
	}
	var tb, db [128]byte
	types, descs := tb[:0], db[:0]
	for ok := s.arrBegin(); ok; ok = s.arrNext() {
		switch s.peek() {
		case 'n':
			s.null()
			continue
		case '{':
		default:
			return "", ""
		}
		// A repeated key: the last one (a map); not a string: "".
		var t, st, d []byte
		var tf, stf, df uint8
		for ok := s.objBegin(); ok; ok = s.objNext() {
			switch string(s.key()) {
			case "type":
				t, tf, _ = s.optRaw(3)
			case "subtype":
				st, stf, _ = s.optRaw(3)
			case "description":
				d, df, _ = s.optRaw(3)
			default:
				s.skip(3)
			}
		}
		if len(t) == 0 { // raw contents are empty only when the string is
			continue
		}
		if len(types) > 0 {
			types = append(types, ", "...)
		}
		types = appendText(types, t, tf)
		if len(st) > 0 {
			types = appendText(append(types, '/'), st, stf)
		}
		if len(d) > 0 {
			if len(descs) > 0 {
				descs = append(descs, "; "...)
			}
			descs = appendText(descs, d, df)
		}
	}
	s.end()
	if s.err != nil {
		return "", ""
	}
	return string(types), string(descs)
}

// DatasetFieldID is the vertex id of field f of dataset d: "field:" +
// len(namespace) + ":" + namespace + "/" + len(name) + ":" + name + "/" + f.
// Both lengths make it injective whatever the names hold.
func DatasetFieldID(d Dataset, f string) string {
	b := make([]byte, 0, len(d.Name)+len(f)+8)
	b = strconv.AppendInt(b, int64(len(d.Name)), 10)
	b = append(b, ':')
	b = append(b, d.Name...)
	b = append(b, '/')
	b = append(b, f...)
	return vertexID("field:", d.Namespace, string(b))
}

// DatasetFieldVertex returns the vertex of field f of dataset d.
func DatasetFieldVertex(d Dataset, f string) Vertex {
	return Vertex{ID: DatasetFieldID(d, f), Label: LabelDatasetField, Namespace: d.Namespace, Name: d.Name,
		Props: MakeProps(StrConst(PropField, f))}
}

// Edges appends to dst the field pairs of the facet:
// {"fields": {outField: {"inputFields": [{"namespace", "name", "field"}]}}},
// output fields in byte order, input fields in facet order. It is read
// leniently (what lacks a non-empty string namespace, name or field is
// skipped, as is a field derived from itself; a facet of another shape
// gives nothing): nothing but column lineage depends on it. The
// dataset-level "dataset" inputs of newer facets (fields used only to
// filter or join) are not field lineage and are ignored.
//
// The facet is read as encoding/json reads it into
// struct{Fields map[string]json.RawMessage}: "fields" matches any key
// equal to it under case folding, repeated ones merge into one map (null
// empties it, another type fails the whole facet), and a repeated output
// field keeps its last value.
func (c ColumnLineage) Edges(dst []FieldEdge) []FieldEdge {
	type outField struct {
		name, val []byte // name unescaped, val raw
	}
	var s scanner
	s.reset(c.Raw)
	if s.peek() != '{' {
		return dst // null or not an object: no pairs
	}
	var arr [16]outField
	outs := arr[:0]
	bad := false // a "fields" of another type
	for ok := s.objBegin(); ok; ok = s.objNext() {
		if !bytes.EqualFold(s.key(), []byte("fields")) {
			s.skip(2)
			continue
		}
		switch s.peek() {
		case 'n':
			s.null()
			outs = outs[:0]
			continue
		case '{':
		default:
			bad = true
			s.skip(2)
			continue
		}
		for ok := s.objBegin(); ok; ok = s.objNext() {
			name, fl := s.keyRaw()
			if !plainText(name, fl) {
				name = unquote(nil, name)
			}
			outs = append(outs, outField{name, s.span(3)})
		}
	}
	s.end()
	if s.err != nil || bad {
		return dst
	}
	slices.SortStableFunc(outs, func(a, b outField) int { return bytes.Compare(a.name, b.name) })
	for i, o := range outs {
		if len(o.name) == 0 || i+1 < len(outs) && bytes.Equal(o.name, outs[i+1].name) {
			continue // no name, or not the last value of its name
		}
		dst = c.appendFieldEdges(dst, o.name, o.val)
	}
	return dst
}

// appendFieldEdges appends the pairs of output field of, whose value raw
// (validated) should be {"inputFields": [..]} (else it gives none, as does
// an inputFields that is not an array of objects and nulls).
func (c ColumnLineage) appendFieldEdges(dst []FieldEdge, of, raw []byte) []FieldEdge {
	var s scanner
	s.reset(raw)
	if s.peek() != '{' {
		return dst
	}
	var ins []byte
	var tType, tDesc string // the older facets' transformation of the output field
	for ok := s.objBegin(); ok; ok = s.objNext() {
		switch string(s.key()) {
		case "inputFields":
			ins = s.span(2)
		case "transformationType":
			tType, _ = s.optStr(2)
		case "transformationDescription":
			tDesc, _ = s.optStr(2)
		default:
			s.skip(2)
		}
	}
	s.reset(ins)
	if s.peek() != '[' {
		return dst // absent, null or not an array
	}
	n := len(dst)
	ofs := ""
	for ok := s.arrBegin(); ok; ok = s.arrNext() {
		switch s.peek() {
		case 'n':
			s.null()
			continue
		case '{':
		default:
			return dst[:n] // encoding/json fails the whole array
		}
		var d Dataset
		var f string
		var trans []byte
		for ok := s.objBegin(); ok; ok = s.objNext() {
			switch string(s.key()) {
			case "namespace":
				d.Namespace, _ = s.optStr(3)
				d.Namespace = NormalizeName(d.Namespace) // NFC, as every name (Guard)
			case "name":
				d.Name, _ = s.optStr(3)
				d.Name = NormalizeName(d.Name)
			case "field":
				f, _ = s.optStr(3)
			case "transformations":
				trans = s.span(3)
			default:
				s.skip(3)
			}
		}
		if d.Namespace == "" || d.Name == "" || f == "" || d == c.Output && f == string(of) {
			continue // invalid, or a field derived from itself (no edge, as for DERIVES)
		}
		if ofs == "" {
			ofs = string(of)
		}
		fe := FieldEdge{In: d, InField: f, Out: c.Output, OutField: ofs}
		fe.TransformationType, fe.TransformationDescription = transformations(trans)
		if fe.TransformationType == "" && fe.TransformationDescription == "" {
			fe.TransformationType, fe.TransformationDescription = tType, tDesc
		}
		dst = append(dst, fe)
	}
	return dst
}
