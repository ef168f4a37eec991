package lineage

import (
	"encoding/json"
	"sort"
	"strings"
)

// The facet readers written the straightforward way, with encoding/json:
// the reference the scanner-based readers are held to (decode_facets_test.go,
// and the reference decoder for symlinks, lifecycle and run facets).

// refInterpretFacet is interpretFacet.
func refInterpretFacet(kind int, raw []byte) facetVal {
	var f facetVal
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return f
	}
	member := func(i int, k string) {
		var s string
		if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil && string(v) != "null" {
			f.v[i], f.ok[i] = s, true
		}
	}
	switch kind {
	case fSchema:
		f.v[0], f.ok[0] = refListProp(m["fields"], "name", "type", "description")
	case fDataSource:
		member(0, "uri")
		member(1, "name")
	case fDocumentation:
		member(0, "description")
	case fOwnership:
		f.v[0], f.ok[0] = refListProp(m["owners"], "name", "type")
	case fVersion:
		member(0, "datasetVersion")
	case fSQL:
		member(0, "query")
	case fJobType:
		member(0, "jobType")
		member(1, "processingType")
		member(2, "integration")
	case fSourceCodeLocation:
		member(0, "url")
	}
	return f
}

// refListProp is listProp.
func refListProp(raw json.RawMessage, keys ...string) (string, bool) {
	var elems []map[string]json.RawMessage
	if raw == nil || json.Unmarshal(raw, &elems) != nil || elems == nil {
		return "", false
	}
	out := make([]json.RawMessage, 0, len(elems))
	for _, e := range elems {
		b := []byte{'{'}
		for i, k := range keys {
			var s string
			if json.Unmarshal(e[k], &s) != nil || e[k] == nil || string(e[k]) == "null" {
				if i == 0 {
					b = nil
					break
				}
				continue
			}
			if len(b) > 1 {
				b = append(b, ',')
			}
			kb, _ := json.Marshal(k)
			vb, _ := json.Marshal(s)
			b = append(append(append(b, kb...), ':'), vb...)
		}
		if b != nil {
			out = append(out, append(b, '}'))
		}
	}
	j, err := json.Marshal(out)
	if err != nil {
		return "", false
	}
	return string(j), true
}

// refEdges is ColumnLineage.Edges.
func refEdges(c ColumnLineage, dst []FieldEdge) []FieldEdge {
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
			d := Dataset{Namespace: refJSONStr(in["namespace"]), Name: refJSONStr(in["name"])}
			f := refJSONStr(in["field"])
			if d.Namespace == "" || d.Name == "" || f == "" || d == c.Output && f == of {
				continue // invalid, or a field derived from itself (no edge, as for DERIVES)
			}
			fe := FieldEdge{In: d, InField: f, Out: c.Output, OutField: of}
			fe.TransformationType, fe.TransformationDescription = refTransformations(in["transformations"])
			if fe.TransformationType == "" && fe.TransformationDescription == "" {
				fe.TransformationType, fe.TransformationDescription = refJSONStr(o["transformationType"]), refJSONStr(o["transformationDescription"])
			}
			dst = append(dst, fe)
		}
	}
	return dst
}

// refTransformations is transformations.
func refTransformations(raw json.RawMessage) (typ, desc string) {
	var ts []map[string]json.RawMessage
	if raw == nil || json.Unmarshal(raw, &ts) != nil {
		return "", ""
	}
	var types, descs []string
	for _, t := range ts {
		tt := refJSONStr(t["type"])
		if tt == "" {
			continue
		}
		if st := refJSONStr(t["subtype"]); st != "" {
			tt += "/" + st
		}
		types = append(types, tt)
		if d := refJSONStr(t["description"]); d != "" {
			descs = append(descs, d)
		}
	}
	return strings.Join(types, ", "), strings.Join(descs, "; ")
}

// refJSONStr is raw's string value, "" when it is not a string.
func refJSONStr(raw json.RawMessage) string {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// refAliasesOf is aliasesOf.
func refAliasesOf(dst []Alias, d Dataset, raw []byte) []Alias {
	var f map[string]json.RawMessage
	if json.Unmarshal(raw, &f) != nil {
		return dst
	}
	var ids []map[string]json.RawMessage
	if json.Unmarshal(f["identifiers"], &ids) != nil {
		return dst
	}
	str := func(m map[string]json.RawMessage, k string) string {
		var s string
		if raw, ok := m[k]; ok && json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	for _, id := range ids {
		a := Dataset{Namespace: str(id, "namespace"), Name: str(id, "name")}
		if a.Namespace == "" || a.Name == "" || a == d {
			continue
		}
		dst = append(dst, Alias{Of: d, Alias: a, Type: str(id, "type")})
	}
	return dst
}

// refLifecycleOf is lifecycleOf.
func refLifecycleOf(raw []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m["lifecycleStateChange"], &s) != nil {
		return ""
	}
	return s
}

// refRunFacetsOf is runFacetsOf.
func refRunFacetsOf(errRaw, nomRaw []byte) RunFacets {
	var f RunFacets
	if errRaw != nil {
		var m map[string]json.RawMessage
		if json.Unmarshal(errRaw, &m) == nil {
			var s string
			if raw, ok := m["message"]; ok && json.Unmarshal(raw, &s) == nil && string(raw) != "null" {
				f.ErrorMessage, f.HasError = s, true
			}
		}
	}
	if nomRaw != nil {
		var m map[string]json.RawMessage
		if json.Unmarshal(nomRaw, &m) == nil {
			f.NominalStart, f.HasNominalStart = refFacetTime(m["nominalStartTime"])
			f.NominalEnd, f.HasNominalEnd = refFacetTime(m["nominalEndTime"])
		}
	}
	return f
}

// refRunExtraFacetsOf is runExtraFacetsOf.
func refRunExtraFacetsOf(f *RunFacets, engRaw, extRaw []byte) (capped bool) {
	read := func(raw []byte, keys []string, dst []*OptStr) {
		var m map[string]json.RawMessage
		if raw == nil || json.Unmarshal(raw, &m) != nil || m == nil {
			return
		}
		for i, k := range keys {
			var v OptStr
			if r, ok := m[k]; ok && string(r) != "null" && json.Unmarshal(r, &v.V) == nil {
				v.Ok = true
				if len(v.V) > MaxRunFacetValue {
					v, capped = OptStr{}, true
				}
			}
			*dst[i] = v
		}
	}
	read(engRaw, []string{"name", "version", "openlineageAdapterVersion"}, []*OptStr{&f.EngineName, &f.EngineVersion, &f.AdapterVersion})
	read(extRaw, []string{"externalQueryId", "source"}, []*OptStr{&f.ExternalQueryID, &f.ExternalQuerySource})
	return capped
}

func refFacetTime(raw json.RawMessage) (int64, bool) {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return 0, false
	}
	return facetTime(s)
}
