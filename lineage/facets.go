package lineage

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
	// The processing_engine facet's name, version and
	// openlineageAdapterVersion, and the externalQuery facet's
	// externalQueryId and source: each when a string of at most
	// MaxRunFacetValue bytes.
	EngineName, EngineVersion, AdapterVersion OptStr
	ExternalQueryID, ExternalQuerySource      OptStr
}

// OptStr is an optional string (Ok: given).
type OptStr struct {
	V  string
	Ok bool
}

// MaxRunFacetValue caps a processing_engine or externalQuery value (bytes,
// unescaped): a longer one is dropped and the record counted with
// LenientCappedRunFacet.
const MaxRunFacetValue = 1024

// runExtraFacetsOf interprets the raw JSON objects of the
// processing_engine and externalQuery run facets (nil when absent) into f,
// by runFacetsOf's rules; capped reports a value dropped for its length.
// refRunExtraFacetsOf is its encoding/json reference.
func runExtraFacetsOf(f *RunFacets, engRaw, extRaw []byte) (capped bool) {
	var s scanner
	read := func(raw []byte, keys []string, dst []*OptStr) {
		if raw == nil {
			return
		}
		s.reset(raw)
		if s.peek() != '{' {
			return
		}
		vals := make([]OptStr, len(keys))
		for more := s.objBegin(); more; more = s.objNext() {
			k, hit := string(s.key()), false
			for i, name := range keys {
				if k == name {
					vals[i].V, vals[i].Ok = s.optStr(2)
					hit = true
					break
				}
			}
			if !hit {
				s.skip(2)
			}
		}
		if s.end(); s.err != nil {
			return
		}
		for i, v := range vals {
			if v.Ok && len(v.V) > MaxRunFacetValue {
				v, capped = OptStr{}, true
			}
			*dst[i] = v
		}
	}
	read(engRaw, []string{"name", "version", "openlineageAdapterVersion"}, []*OptStr{&f.EngineName, &f.EngineVersion, &f.AdapterVersion})
	read(extRaw, []string{"externalQueryId", "source"}, []*OptStr{&f.ExternalQueryID, &f.ExternalQuerySource})
	return capped
}

// runFacetsOf interprets the raw JSON objects of the errorMessage and
// nominalTime run facets (nil when absent): a member that is not a string
// (null included) is absent, a repeated one the last; invalid JSON or
// another type than an object gives nothing. refRunFacetsOf is its
// encoding/json reference.
func runFacetsOf(errRaw, nomRaw []byte) RunFacets {
	var f RunFacets
	var s scanner
	if errRaw != nil {
		s.reset(errRaw)
		if s.peek() == '{' {
			var msg string
			var ok bool
			for more := s.objBegin(); more; more = s.objNext() {
				if string(s.key()) == "message" {
					msg, ok = s.optStr(2)
				} else {
					s.skip(2)
				}
			}
			if s.end(); s.err == nil {
				f.ErrorMessage, f.HasError = msg, ok
			}
		}
	}
	if nomRaw != nil {
		s.reset(nomRaw)
		if s.peek() == '{' {
			var nf RunFacets
			for more := s.objBegin(); more; more = s.objNext() {
				switch string(s.key()) {
				case "nominalStartTime":
					nf.NominalStart, nf.HasNominalStart = s.facetTime()
				case "nominalEndTime":
					nf.NominalEnd, nf.HasNominalEnd = s.facetTime()
				default:
					s.skip(2)
				}
			}
			if s.end(); s.err == nil {
				f.NominalStart, f.HasNominalStart, f.NominalEnd, f.HasNominalEnd = nf.NominalStart, nf.HasNominalStart, nf.NominalEnd, nf.HasNominalEnd
			}
		}
	}
	return f
}

// facetTime reads a member's value that should be a date-time string.
func (s *scanner) facetTime() (int64, bool) {
	raw, fl, ok := s.optRaw(2)
	if !ok {
		return 0, false
	}
	return facetTime(string(s.unescape(raw, fl)))
}

// facetTime reads a date-time string of a facet (zone-less read as UTC).
func facetTime(s string) (int64, bool) {
	t, ok := parseTime(s)
	if !ok {
		if t, ok = parseTime(s + "Z"); !ok {
			return 0, false
		}
	}
	return t.UnixMilli(), true
}
