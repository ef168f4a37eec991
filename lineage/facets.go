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
