package explorer

import (
	"strings"
)

// What a search result matched (SearchResult.Matched).
const (
	MatchName      = "name"      // a part of the name
	MatchAlias     = "alias"     // a part of a DatasetAlias's name
	MatchURI       = "uri"       // namespace + name as the producer wrote it, with or without scheme
	MatchNamespace = "namespace" // the namespace, with or without scheme
	MatchGlue      = "glueTable" // a Glue/Hive "db.table" (name table/db/t or db/t or db.t)
)

// findHit is one search result with what it matched.
type findHit struct {
	searchHit
	matched string
}

// stripScheme drops "scheme://" from a lower-cased string.
func stripScheme(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		return s[i+3:]
	}
	return s
}

// fullURI joins a namespace and a name the way producers write a dataset's
// location: "s3://bucket" + "path/f" -> "s3://bucket/path/f" (a name that
// starts with '/' is joined as it is).
func fullURI(ns, name string) string {
	if strings.HasPrefix(name, "/") || strings.HasSuffix(ns, "/") {
		return ns + name
	}
	return ns + "/" + name
}

// glueParts reads q as a Glue "db.table" (one dot, no '/', ':' or space).
func glueParts(q string) (db, table string, ok bool) {
	if strings.ContainsAny(q, "/: ") || strings.Count(q, ".") != 1 {
		return "", "", false
	}
	db, table, _ = strings.Cut(q, ".")
	return db, table, db != "" && table != ""
}

// find answers a search box query: exact full URIs (with or without
// scheme), Glue "db.table" names, whole namespaces, then names and aliases
// containing q (search). Each dataset or job appears once, with the first
// thing it matched in that order; at most limit hits.
func find(n *names, q string, limit int) []findHit {
	ql := strings.ToLower(strings.TrimSpace(q))
	if ql == "" || n == nil {
		return nil
	}
	var out []findHit
	seen := map[string]bool{}
	put := func(e *indexEntry, matched string) bool {
		id := e.vid
		if seen[id] || len(out) >= limit {
			return len(out) < limit
		}
		seen[id] = true
		out = append(out, findHit{searchHit: searchHit{ref: e.ref}, matched: matched})
		return len(out) < limit
	}
	all := n.all()
	// Full URIs: only a query with a '/' or ':' can be one.
	if strings.ContainsAny(ql, "/:") {
		bare := strings.TrimSuffix(stripScheme(ql), "/")
		for i := range all {
			e := &all[i]
			if e.alias != nil || e.ref.Kind != KindDataset {
				continue
			}
			u := strings.ToLower(fullURI(e.ref.Namespace, e.ref.Name))
			if u == ql || stripScheme(u) == bare {
				if !put(e, MatchURI) {
					return out
				}
			}
		}
	}
	if db, t, ok := glueParts(ql); ok {
		suffix := "/" + db + "/" + t
		for i := range all {
			e := &all[i]
			if e.alias != nil || e.ref.Kind != KindDataset {
				continue
			}
			l := e.lower
			if strings.HasSuffix(l, suffix) || l == db+"/"+t || l == ql {
				if !put(e, MatchGlue) {
					return out
				}
			}
		}
	}
	bareNS := strings.TrimSuffix(stripScheme(ql), "/")
	for i := range all {
		e := &all[i]
		if e.alias != nil {
			continue
		}
		ns := strings.ToLower(e.ref.Namespace)
		if ns == ql || (bareNS != "" && strings.TrimSuffix(stripScheme(ns), "/") == bareNS) {
			if !put(e, MatchNamespace) {
				return out
			}
		}
	}
	hits, _ := search(n, q, limit, "")
	for _, h := range hits {
		id := h.ref.VertexID()
		if seen[id] || len(out) >= limit {
			continue
		}
		seen[id] = true
		m := MatchName
		if h.alias != nil {
			m = MatchAlias
		}
		out = append(out, findHit{searchHit: h, matched: m})
	}
	return out
}
