package explorer

import (
	"net/http"
	"strconv"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/lineage"
)

// TimeFilter keeps the lineage edges whose seen interval [firstSeen,
// lastSeen] (the producers' event times, Unix ms) meets a time window:
// firstSeen <= MaxFirst and lastSeen >= MinLast (0: that bound is open).
// It is built from since/until (the window), asOf (an instant: MaxFirst =
// asOf) and the stale rule (an edge not seen for Config.StaleAfter before
// the window's end, or now, is stale: MinLast rises to that point unless
// stale edges are asked for). See DESIGN.md "Lineage in time".
type TimeFilter struct {
	MaxFirst int64 `json:"maxFirstSeen,omitempty"` // edges first seen after this are left out
	MinLast  int64 `json:"minLastSeen,omitempty"`  // edges last seen before this are left out
	// StaleBefore is the lastSeen under which an edge counts as stale
	// (0: stale edges are shown).
	StaleBefore int64 `json:"staleBefore,omitempty"`
}

// active reports whether f leaves any edge out.
func (f TimeFilter) active() bool { return f.MaxFirst != 0 || f.MinLast != 0 }

// keep appends to an edge traversal the steps that keep the edges f
// passes.
func (f TimeFilter) keep(t *gremlingo.GraphTraversal) *gremlingo.GraphTraversal {
	P := gremlingo.P
	if f.MaxFirst != 0 {
		t = t.Has(lineage.PropFirstSeen, P.Lte(f.MaxFirst))
	}
	if f.MinLast != 0 {
		t = t.Has(lineage.PropLastSeen, P.Gte(f.MinLast))
	}
	return t
}

// dropped is an edge traversal's filter of the edges f leaves out.
func (f TimeFilter) dropped() *gremlingo.GraphTraversal {
	return gremlingo.T__.Not(f.keep(gremlingo.T__.Identity()))
}

// parseTime reads a time parameter: Unix milliseconds, RFC 3339, or a
// date (YYYY-MM-DD, midnight UTC).
func parseTime(name, v string) (int64, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
		return n, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UnixMilli(), nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t.UnixMilli(), nil
	}
	return 0, badRequest("%s=%s: want Unix milliseconds, an RFC 3339 time (2026-01-31T12:00:00Z) or a date (2026-01-31)", name, quoteShort(v))
}

// timeFilter reads since, until, asOf and stale (hide, the default when
// Config.StaleAfter is set, or show) from r. now is the reference of the
// stale rule when neither until nor asOf is given.
func (s *Server) timeFilter(r *http.Request, now time.Time) (TimeFilter, error) {
	q := r.URL.Query()
	var f TimeFilter
	var since, until, asOf int64
	var err error
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"since", &since}, {"until", &until}, {"asOf", &asOf}} {
		if v := q.Get(p.name); v != "" {
			if *p.dst, err = parseTime(p.name, v); err != nil {
				return f, err
			}
		}
	}
	if asOf != 0 && (since != 0 || until != 0) {
		return f, badRequest("asOf cannot be combined with since or until: give an instant (asOf) or a range (since, until)")
	}
	if since != 0 && until != 0 && since > until {
		return f, badRequest("since (%d) is after until (%d)", since, until)
	}
	hideStale := s.cfg.StaleAfter > 0
	switch v := q.Get("stale"); v {
	case "":
	case "hide":
		if s.cfg.StaleAfter <= 0 {
			return f, badRequest("stale=hide: the server has no stale age (serve -explorer-stale-after)")
		}
	case "show":
		hideStale = false
	default:
		return f, badRequest("stale=%s: want hide or show", quoteShort(v))
	}
	if asOf != 0 {
		until = asOf
	}
	f.MaxFirst, f.MinLast = until, since
	if hideStale {
		ref := now.Truncate(time.Minute).UnixMilli() // shared by the watches of one minute
		if until != 0 {
			ref = until
		}
		f.StaleBefore = ref - s.cfg.StaleAfter.Milliseconds()
		f.MinLast = max(f.MinLast, f.StaleBefore)
	}
	return f, nil
}
