package explorer

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/lineage"
)

// index is the in-process name index behind search and the Marquez
// listings: every Dataset and Job vertex id (which encodes its namespace
// and name) and every DatasetAlias with the dataset it stands for. A
// substring search over 100k names in memory takes milliseconds; the same
// search as a Gremlin text predicate (TextP.containing) is a full vertex
// scan on TinkerGraph and on Neptune (without its OpenSearch integration).
//
// It is loaded in full at start and every Config.IndexFullRefresh (ids
// only, one request per label group: the only way to see deletions), and
// in between every Config.IndexRefresh counts the indexed labels
// (countVertices) and, while the counts changed recently, reads only what
// is new (loadNew: the endpoints of edges whose firstSeen is recent, one
// request returning a handful of rows); see Server.Start. It also grows with every vertex a lineage answer
// returns, so a node seen in a view is searchable at once.
type index struct {
	mu struct {
		sync.RWMutex
		names    *names              // immutable; replaced, never changed
		byID     map[string]struct{} // vertex ids, and alias keys (aliasKey), in names
		loaded   chan struct{}       // closed after the first successful load
		loadedAt time.Time
		err      error // of the last load
	}
	// Loads done (full), new-vertex reads done (delta) and refreshes that
	// found the vertex counts unchanged (skip), for tests and logs.
	fullLoads, deltaLoads, deltaSkips atomic.Int64
	// forceDelta (tests) makes a refresh read what is new even when the
	// last such read took longer than a full load.
	forceDelta atomic.Bool
}

// vertexCounts is the number of Dataset, Job and DatasetAlias vertices by
// label: one count request (no ids sent), the cheap test of whether
// anything was added or deleted since the last read.
type vertexCounts map[string]int64

func countVertices(ctx context.Context, gr *graph) (vertexCounts, error) {
	rows, err := gr.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		return g.V().HasLabel(lineage.LabelDataset, lineage.LabelJob, lineage.LabelDatasetAlias).GroupCount().By(gremlingo.T.Label)
	})
	if err != nil {
		return nil, err
	}
	c := vertexCounts{}
	for _, r := range rows {
		m, err := rowMap(r)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			n, _ := asInt64(v)
			c[asString(k)] = n
		}
	}
	return c, nil
}

func (c vertexCounts) equal(o vertexCounts) bool {
	if c == nil || o == nil || len(c) != len(o) {
		return false
	}
	for k, v := range c {
		if o[k] != v {
			return false
		}
	}
	return true
}

type indexEntry struct {
	vid   string // the Dataset/Job vertex (for an alias: the dataset it stands for)
	ref   Ref    // of vid
	alias *Ref   // set for an alias entry: the alias's own namespace and name
	lower string // lower-cased name searched (the alias's name for an alias)
}

// aliasKey is the byID key of an alias entry.
func aliasKey(aliasID, datasetID string) string { return aliasID + "\x00" + datasetID }

func newIndex() *index {
	ix := &index{}
	ix.mu.loaded = make(chan struct{})
	ix.mu.byID = map[string]struct{}{}
	return ix
}

// aliasEntry is the index entry of DatasetAlias aliasID standing for the
// Dataset datasetID (false when either id is not one).
func aliasEntry(aliasID, datasetID string) (indexEntry, bool) {
	a, ok := refOfVertexID(aliasID)
	if !ok || !strings.HasPrefix(aliasID, "alias:") {
		return indexEntry{}, false
	}
	t, ok := refOfVertexID(datasetID)
	if !ok || t.Kind != KindDataset || strings.HasPrefix(datasetID, "alias:") {
		return indexEntry{}, false
	}
	return indexEntry{vid: datasetID, ref: t, alias: &a, lower: strings.ToLower(a.Name)}, true
}

// vertexEntry is the index entry of a Dataset or Job vertex id (false for
// any other vertex: Run, DatasetField, DatasetAlias).
func vertexEntry(id string) (indexEntry, bool) {
	if strings.HasPrefix(id, "alias:") {
		return indexEntry{}, false
	}
	ref, ok := refOfVertexID(id)
	if !ok {
		return indexEntry{}, false
	}
	return indexEntry{vid: id, ref: ref, lower: strings.ToLower(ref.Name)}, true
}

// load reads every Dataset, Job and DatasetAlias vertex and replaces the
// index.
func (ix *index) load(ctx context.Context, gr *graph) error {
	rows, err := gr.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		return g.V().HasLabel(lineage.LabelDataset, lineage.LabelJob).Id()
	})
	if err == nil {
		var aliasRows []*gremlingo.Result
		aliasRows, err = gr.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
			T, __ := gremlingo.T, gremlingo.T__
			return g.V().HasLabel(lineage.LabelDatasetAlias).Project("id", "t").By(T.Id).By(__.Out(edgeAliasOf).Id().Limit(maxAliasClaimants).Fold())
		})
		if err == nil {
			entries := make([]indexEntry, 0, len(rows)+len(aliasRows))
			byID := make(map[string]struct{}, len(rows)+len(aliasRows))
			for _, r := range rows {
				id := asString(r.GetInterface())
				if e, ok := vertexEntry(id); ok {
					entries = append(entries, e)
					byID[id] = struct{}{}
				}
			}
			for _, r := range aliasRows {
				m, e := rowMap(r)
				if e != nil {
					continue
				}
				// Every claimant of an alias is an entry (a search by
				// the alias lists them all), never one picked.
				l, _ := m["t"].([]any)
				for _, t := range l {
					aid, tid := asString(m["id"]), asString(t)
					if e, ok := aliasEntry(aid, tid); ok {
						entries = append(entries, e)
						byID[aliasKey(aid, tid)] = struct{}{}
					}
				}
			}
			nm := newNames(entries)
			ix.mu.Lock()
			ix.mu.names, ix.mu.byID, ix.mu.loadedAt, ix.mu.err = nm, byID, time.Now(), nil
			select {
			case <-ix.mu.loaded:
			default:
				close(ix.mu.loaded)
			}
			ix.mu.Unlock()
			ix.fullLoads.Add(1)
			return nil
		}
	}
	ix.mu.Lock()
	ix.mu.err = err
	ix.mu.Unlock()
	return err
}

// errDeltaTooBig: more new edges than one delta read takes; a full load is
// due instead.
var errDeltaTooBig = errors.New("explorer: too many new edges for an incremental index read")

// maxDeltaRows bounds the edges one loadNew reads.
const maxDeltaRows = 20_000

// loadNew adds to the index the Dataset and Job endpoints of every edge
// whose firstSeen is at least since (Unix ms), and the aliases of new
// ALIAS_OF edges: a vertex is new with its first edge, and an edge's
// firstSeen is the producer's eventTime of the first event that gave it.
// Vertices without any edge, edges first seen earlier (a late event) and
// deletions wait for the next full load. It returns how many entries it
// added; errDeltaTooBig when more than maxDeltaRows edges are new.
func (ix *index) loadNew(ctx context.Context, gr *graph, since int64) (int, error) {
	rows, err := gr.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		T, P, __ := gremlingo.T, gremlingo.P, gremlingo.T__
		return g.E().Has(lineage.PropFirstSeen, P.Gte(since)).Limit(maxDeltaRows+1).
			Project("l", "o", "i").By(T.Label).By(__.OutV().Id()).By(__.InV().Id())
	})
	if err != nil {
		return 0, err
	}
	if len(rows) > maxDeltaRows {
		return 0, errDeltaTooBig
	}
	var add []indexEntry
	var keys []string
	for _, r := range rows {
		m, e := rowMap(r)
		if e != nil {
			continue
		}
		o, i := asString(m["o"]), asString(m["i"])
		if asString(m["l"]) == edgeAliasOf {
			if e, ok := aliasEntry(o, i); ok {
				add, keys = append(add, e), append(keys, aliasKey(o, i))
			}
			continue
		}
		for _, id := range []string{o, i} {
			if e, ok := vertexEntry(id); ok {
				add, keys = append(add, e), append(keys, id)
			}
		}
	}
	n := ix.add(add, keys)
	ix.deltaLoads.Add(1)
	return n, nil
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
	var add []indexEntry
	var keys []string
	for _, id := range vids {
		if _, ok := ix.mu.byID[id]; !ok {
			if e, ok := vertexEntry(id); ok {
				add, keys = append(add, e), append(keys, id)
			}
		}
	}
	ix.mu.RUnlock()
	ix.add(add, keys)
}

// add puts the entries the index lacks (keys[i]: the byID key of add[i])
// into its observed part, and folds that part into the sorted one once it
// holds mergeExtra entries (a search scans the observed part entry by
// entry). It returns how many entries were new.
func (ix *index) add(add []indexEntry, keys []string) int {
	if len(add) == 0 {
		return 0
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	old := ix.mu.names
	if old == nil {
		old = newNames(nil)
	}
	nm := *old
	nm.extra = append([]indexEntry(nil), old.extra...)
	n := 0
	for i, e := range add {
		if _, ok := ix.mu.byID[keys[i]]; ok {
			continue
		}
		ix.mu.byID[keys[i]] = struct{}{}
		nm.extra = append(nm.extra, e)
		n++
	}
	if n == 0 {
		return 0
	}
	if len(nm.extra) >= mergeExtra {
		ix.mu.names = newNames(append(append(make([]indexEntry, 0, len(nm.entries)+len(nm.extra)), nm.entries...), nm.extra...))
		return n
	}
	ix.mu.names = &nm
	return n
}

// mergeExtra is the size of the observed part at which it is folded into
// the sorted one.
const mergeExtra = 5_000

// names is one immutable state of the index: the loaded entries, sorted,
// their lower-cased names concatenated (NUL-separated) so that a search is
// a few strings.Index calls over one buffer instead of one per name, and
// the entries observed since the load.
type names struct {
	entries []indexEntry // sorted by (len(name), lower name, vertex id)
	buf     string       // entries' lower names, each followed by NUL
	offs    []int        // offs[i]: start of entries[i] in buf; offs[len] = len(buf)
	extra   []indexEntry // observed since the load, unsorted
}

func newNames(entries []indexEntry) *names {
	sortEntries(entries)
	n := &names{entries: entries, offs: make([]int, 0, len(entries)+1)}
	var b strings.Builder
	for i := range entries {
		n.offs = append(n.offs, b.Len())
		b.WriteString(entries[i].lower)
		b.WriteByte(0)
	}
	n.offs = append(n.offs, b.Len())
	n.buf = b.String()
	return n
}

// all returns every entry (loaded and observed).
func (n *names) all() []indexEntry {
	if len(n.extra) == 0 {
		return n.entries
	}
	return append(append([]indexEntry(nil), n.entries...), n.extra...)
}

// snapshot waits (up to ctx) for the first load and returns the names.
func (ix *index) snapshot(ctx context.Context) (*names, error) {
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
	return ix.mu.names, nil
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
func search(n *names, q string, limit int, kind string) ([]searchHit, int) {
	q = strings.ToLower(strings.ReplaceAll(q, "\x00", ""))
	var exact, prefix, sub []searchHit
	total := 0
	var aliasSeen map[string]bool // datasets already hit through an alias
	consider := func(e *indexEntry, pos int) {
		if kind != "" && e.ref.Kind != kind {
			return
		}
		if e.alias != nil {
			// A dataset whose own name matches is a hit through its own
			// entry; one hit per dataset through its aliases.
			if strings.Contains(strings.ToLower(e.ref.Name), q) || aliasSeen[e.vid] {
				return
			}
			if aliasSeen == nil {
				aliasSeen = map[string]bool{}
			}
			aliasSeen[e.vid] = true
		}
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
	if q == "" {
		return nil, 0
	}
	// q has no NUL, so a match never spans two names; after a match in
	// name i the scan goes on at name i+1 (one hit per name, its first
	// occurrence).
	for at := 0; at < len(n.buf); {
		j := strings.Index(n.buf[at:], q)
		if j < 0 {
			break
		}
		m := at + j
		i := sort.Search(len(n.entries), func(k int) bool { return n.offs[k+1] > m })
		consider(&n.entries[i], m-n.offs[i])
		at = n.offs[i+1]
	}
	for i := range n.extra {
		if pos := strings.Index(n.extra[i].lower, q); pos >= 0 {
			consider(&n.extra[i], pos)
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
