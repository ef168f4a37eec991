package explorer

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
)

// index is the in-process name index behind search and the Marquez
// listings: every Dataset and Job vertex id (which encodes its namespace
// and name) and every DatasetAlias with the dataset it stands for. A
// substring search over 100k names in memory takes milliseconds; the same
// search as a Gremlin text predicate (TextP.containing) is a full vertex
// scan on TinkerGraph and on Neptune (without its OpenSearch integration).
//
// It is loaded at start, reloaded every Config.IndexRefresh (ids only, one
// request), and grows between reloads with every vertex a lineage answer
// returns, so a node seen in a view is searchable at once.
type index struct {
	mu struct {
		sync.RWMutex
		entries  []indexEntry // sorted by (len(name), lower name, vertex id)
		byID     map[string]struct{}
		loaded   chan struct{} // closed after the first successful load
		loadedAt time.Time
		err      error // of the last load
	}
}

type indexEntry struct {
	vid   string // the Dataset/Job vertex (for an alias: the dataset it stands for)
	ref   Ref    // of vid
	alias *Ref   // set for an alias entry: the alias's own namespace and name
	lower string // lower-cased name searched (the alias's name for an alias)
}

func newIndex() *index {
	ix := &index{}
	ix.mu.loaded = make(chan struct{})
	ix.mu.byID = map[string]struct{}{}
	return ix
}

// load reads every Dataset, Job and DatasetAlias vertex and replaces the
// index.
func (ix *index) load(ctx context.Context, gr *graph) error {
	rows, err := gr.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		return g.V().HasLabel("Dataset", "Job").Id()
	})
	if err == nil {
		var aliasRows []*gremlingo.Result
		aliasRows, err = gr.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
			T, __ := gremlingo.T, gremlingo.T__
			return g.V().HasLabel("DatasetAlias").Project("id", "t").By(T.Id).By(__.Out(edgeAliasOf).Id().Limit(1).Fold())
		})
		if err == nil {
			entries := make([]indexEntry, 0, len(rows)+len(aliasRows))
			byID := make(map[string]struct{}, len(rows))
			for _, r := range rows {
				id := asString(r.GetInterface())
				if ref, ok := refOfVertexID(id); ok {
					entries = append(entries, indexEntry{vid: id, ref: ref, lower: strings.ToLower(ref.Name)})
					byID[id] = struct{}{}
				}
			}
			for _, r := range aliasRows {
				m, e := rowMap(r)
				if e != nil {
					continue
				}
				l, _ := m["t"].([]any)
				a, ok := refOfVertexID(asString(m["id"]))
				if !ok || len(l) != 1 {
					continue
				}
				tid := asString(l[0])
				t, ok := refOfVertexID(tid)
				if !ok || t.Kind != KindDataset {
					continue
				}
				alias := a
				entries = append(entries, indexEntry{vid: tid, ref: t, alias: &alias, lower: strings.ToLower(a.Name)})
			}
			sortEntries(entries)
			ix.mu.Lock()
			ix.mu.entries, ix.mu.byID, ix.mu.loadedAt, ix.mu.err = entries, byID, time.Now(), nil
			select {
			case <-ix.mu.loaded:
			default:
				close(ix.mu.loaded)
			}
			ix.mu.Unlock()
			return nil
		}
	}
	ix.mu.Lock()
	ix.mu.err = err
	ix.mu.Unlock()
	return err
}

func sortEntries(e []indexEntry) {
	sort.Slice(e, func(i, j int) bool {
		a, b := e[i], e[j]
		if len(a.lower) != len(b.lower) {
			return len(a.lower) < len(b.lower)
		}
		if a.lower != b.lower {
			return a.lower < b.lower
		}
		return a.vid < b.vid
	})
}

// observe adds vertices seen in an answer that the index lacks.
func (ix *index) observe(vids []string) {
	ix.mu.RLock()
	var missing []string
	for _, id := range vids {
		if _, ok := ix.mu.byID[id]; !ok {
			missing = append(missing, id)
		}
	}
	ix.mu.RUnlock()
	if len(missing) == 0 {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	added := false
	for _, id := range missing {
		if _, ok := ix.mu.byID[id]; ok {
			continue
		}
		if ref, ok := refOfVertexID(id); ok {
			ix.mu.byID[id] = struct{}{}
			// Copy on write: readers may hold the old slice.
			ix.mu.entries = append(ix.mu.entries[:len(ix.mu.entries):len(ix.mu.entries)],
				indexEntry{vid: id, ref: ref, lower: strings.ToLower(ref.Name)})
			added = true
		}
	}
	if added {
		sortEntries(ix.mu.entries)
	}
}

// snapshot waits (up to ctx) for the first load and returns the entries.
func (ix *index) snapshot(ctx context.Context) ([]indexEntry, error) {
	ix.mu.RLock()
	loaded, err := ix.mu.loaded, ix.mu.err
	ix.mu.RUnlock()
	select {
	case <-loaded:
	case <-ctx.Done():
		if err != nil {
			return nil, err
		}
		return nil, &GraphError{Class: ClassTimeout, Err: ctx.Err()}
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.mu.entries, nil
}

// searchHit is one search result.
type searchHit struct {
	ref   Ref
	alias *Ref
}

// search returns up to limit entries whose name (or alias name) contains
// q, case-insensitively, best first (exact name, then prefix, then
// substring; shorter names first), the total number of matches, and only
// kinds in kinds (all when empty).
func search(entries []indexEntry, q string, limit int, kind string) ([]searchHit, int) {
	q = strings.ToLower(q)
	var exact, prefix, sub []searchHit
	total := 0
	seen := map[string]bool{}
	for i := range entries {
		e := &entries[i]
		if kind != "" && e.ref.Kind != kind {
			continue
		}
		pos := strings.Index(e.lower, q)
		if pos < 0 {
			continue
		}
		if seen[e.vid] {
			continue
		}
		seen[e.vid] = true
		total++
		h := searchHit{ref: e.ref, alias: e.alias}
		switch {
		case len(e.lower) == len(q):
			if len(exact) < limit {
				exact = append(exact, h)
			}
		case pos == 0:
			if len(prefix) < limit {
				prefix = append(prefix, h)
			}
		default:
			if len(sub) < limit {
				sub = append(sub, h)
			}
		}
	}
	out := append(append(exact, prefix...), sub...)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, total
}

// failing reports whether the index has never loaded or its last load
// failed (the refresh loop then retries sooner).
func (ix *index) failing() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.mu.err != nil || ix.mu.loadedAt.IsZero()
}
