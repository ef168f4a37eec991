package lineage

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
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

// transformations reads the 1-2-0 transformations of an input field.
func transformations(raw json.RawMessage) (typ, desc string) {
	if typ, desc, ok := transformationsFast(raw); ok {
		return typ, desc
	}
	return transformationsJSON(raw)
}

// transformationsFast is transformationsJSON for the common shape, without
// encoding/json: an array of objects whose members are plain strings
// (printable ASCII, no escape) or true, false, null. ok false: another
// shape, for transformationsJSON.
func transformationsFast(raw []byte) (typ, desc string, ok bool) {
	i := 0
	ws := func() {
		for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
			i++
		}
	}
	// plain reads a string without escapes or non-printable bytes at i.
	plain := func() (string, bool) {
		if i >= len(raw) || raw[i] != '"' {
			return "", false
		}
		start := i + 1
		for j := start; j < len(raw); j++ {
			switch c := raw[j]; {
			case c == '"':
				i = j + 1
				return string(raw[start:j]), true
			case c == '\\' || c < 0x20 || c >= 0x7f:
				return "", false
			}
		}
		return "", false
	}
	var types, descs []string
	ws()
	if i >= len(raw) || raw[i] != '[' {
		return "", "", false
	}
	i++
	ws()
	if i < len(raw) && raw[i] == ']' {
		i++
	} else {
		for {
			ws()
			if i >= len(raw) || raw[i] != '{' {
				return "", "", false
			}
			i++
			var tt, st, d string
			ws()
			if i < len(raw) && raw[i] == '}' {
				i++
			} else {
				for {
					ws()
					k, ok := plain()
					if !ok {
						return "", "", false
					}
					ws()
					if i >= len(raw) || raw[i] != ':' {
						return "", "", false
					}
					i++
					ws()
					var v string // a literal reads as "" (jsonStr)
					switch {
					case i < len(raw) && raw[i] == '"':
						if v, ok = plain(); !ok {
							return "", "", false
						}
					case bytes.HasPrefix(raw[i:], []byte("true")), bytes.HasPrefix(raw[i:], []byte("null")):
						i += 4
					case bytes.HasPrefix(raw[i:], []byte("false")):
						i += 5
					default:
						return "", "", false
					}
					switch k { // a repeated key: the last one (a map)
					case "type":
						tt = v
					case "subtype":
						st = v
					case "description":
						d = v
					}
					ws()
					if i < len(raw) && raw[i] == ',' {
						i++
						continue
					}
					if i < len(raw) && raw[i] == '}' {
						i++
						break
					}
					return "", "", false
				}
			}
			if tt != "" {
				if st != "" {
					tt += "/" + st
				}
				types = append(types, tt)
				if d != "" {
					descs = append(descs, d)
				}
			}
			ws()
			if i < len(raw) && raw[i] == ',' {
				i++
				continue
			}
			if i < len(raw) && raw[i] == ']' {
				i++
				break
			}
			return "", "", false
		}
	}
	ws()
	if i != len(raw) {
		return "", "", false
	}
	return strings.Join(types, ", "), strings.Join(descs, "; "), true
}

// transformationsJSON reads the transformations with encoding/json.
func transformationsJSON(raw json.RawMessage) (typ, desc string) {
	var ts []map[string]json.RawMessage
	if raw == nil || json.Unmarshal(raw, &ts) != nil {
		return "", ""
	}
	var types, descs []string
	for _, t := range ts {
		tt := jsonStr(t["type"])
		if tt == "" {
			continue
		}
		if st := jsonStr(t["subtype"]); st != "" {
			tt += "/" + st
		}
		types = append(types, tt)
		if d := jsonStr(t["description"]); d != "" {
			descs = append(descs, d)
		}
	}
	return strings.Join(types, ", "), strings.Join(descs, "; ")
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
// gives nothing): nothing but column
// lineage depends on it. The dataset-level "dataset" inputs of newer
// facets (fields used only to filter or join) are not field lineage and
// are ignored.
func (c ColumnLineage) Edges(dst []FieldEdge) []FieldEdge {
	if out, ok := c.fastEdges(dst); ok {
		return out
	}
	return c.slowEdges(dst)
}

// slowEdges is Edges with encoding/json.
func (c ColumnLineage) slowEdges(dst []FieldEdge) []FieldEdge {
	var facet struct {
		Fields map[string]json.RawMessage `json:"fields"`
	}
	if json.Unmarshal(c.Raw, &facet) != nil {
		return dst
	}
	outs := make([]string, 0, len(facet.Fields))
	for f := range facet.Fields {
		if f != "" {
			outs = append(outs, f)
		}
	}
	sort.Strings(outs)
	for _, of := range outs {
		var o map[string]json.RawMessage
		if json.Unmarshal(facet.Fields[of], &o) != nil {
			continue
		}
		var ins []map[string]json.RawMessage
		if json.Unmarshal(o["inputFields"], &ins) != nil {
			continue
		}
		for _, in := range ins {
			d := Dataset{Namespace: jsonStr(in["namespace"]), Name: jsonStr(in["name"])}
			f := jsonStr(in["field"])
			if d.Namespace == "" || d.Name == "" || f == "" || d == c.Output && f == of {
				continue // invalid, or a field derived from itself (no edge, as for DERIVES)
			}
			fe := FieldEdge{In: d, InField: f, Out: c.Output, OutField: of}
			fe.TransformationType, fe.TransformationDescription = transformations(in["transformations"])
			if fe.TransformationType == "" && fe.TransformationDescription == "" {
				fe.TransformationType, fe.TransformationDescription = jsonStr(o["transformationType"]), jsonStr(o["transformationDescription"])
			}
			dst = append(dst, fe)
		}
	}
	return dst
}

// jsonStr is raw's string value, "" when it is not a string.
func jsonStr(raw json.RawMessage) string {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
