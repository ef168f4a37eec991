package lineage

import "encoding/json"

// RunFacets are the run facets the model keeps. Facets are read leniently:
// a facet of the wrong shape is ignored (never a dead letter), since
// nothing of the lineage depends on it.
type RunFacets struct {
	// ErrorMessage is the errorMessage facet's message (HasError: the
	// facet gave one, possibly empty).
	ErrorMessage string
	HasError     bool
	// NominalStart and NominalEnd are the nominalTime facet's times (Unix
	// ms), when given and parseable.
	NominalStart, NominalEnd       int64
	HasNominalStart, HasNominalEnd bool
}

// runFacetsOf interprets the raw JSON objects of the errorMessage and
// nominalTime run facets (nil when absent). Both decoders share it: they
// agree on the raw spans, this gives them the same meaning.
func runFacetsOf(errRaw, nomRaw []byte) RunFacets {
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
			f.NominalStart, f.HasNominalStart = facetTime(m["nominalStartTime"])
			f.NominalEnd, f.HasNominalEnd = facetTime(m["nominalEndTime"])
		}
	}
	return f
}

// facetTime reads a date-time string of a facet (zone-less read as UTC).
func facetTime(raw json.RawMessage) (int64, bool) {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return 0, false
	}
	t, ok := parseTime(s)
	if !ok {
		if t, ok = parseTime(s + "Z"); !ok {
			return 0, false
		}
	}
	return t.UnixMilli(), true
}
