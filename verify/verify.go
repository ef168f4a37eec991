// Package verify compares a live lineage graph (a [graph.Snapshot]) with
// the graph that the input must give, as computed by the independent
// reference model (verify/refmodel, not the processor's code path). It
// reports missing, extra (ghost), duplicate and property-mismatched
// vertices and edges. [Diff] compares two live graphs (production and
// canary), optionally on the mirrored key space, and [WritePromText]
// exports its result. It reads no graph itself: the caller dumps one with
// package graph.
package verify

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
)

// Expected is the graph the input must give.
type Expected struct {
	Vertices map[string]lineage.Vertex
	Edges    map[string]lineage.Edge
}

// Report is the difference between the expected and the live graph. Each
// list holds readable descriptions, sorted, capped at MaxListed entries
// (the counts are exact).
type Report struct {
	ExpectedVertices int `json:"expected_vertices"`
	ActualVertices   int `json:"actual_vertices"`
	ExpectedEdges    int `json:"expected_edges"`
	ActualEdges      int `json:"actual_edges"`

	MissingVertices    Items `json:"missing_vertices"`
	ExtraVertices      Items `json:"extra_vertices"`
	MismatchedVertices Items `json:"mismatched_vertices"`
	MissingEdges       Items `json:"missing_edges"`
	ExtraEdges         Items `json:"extra_edges"` // ghost lineage: edges no committed run gives
	DuplicateEdges     Items `json:"duplicate_edges"`
	MismatchedEdges    Items `json:"mismatched_edges"`
}

// Items is a counted list of descriptions.
type Items struct {
	Count int      `json:"count"`
	List  []string `json:"list,omitempty"`
}

// MaxListed caps each list in a Report.
const MaxListed = 20

func (it *Items) add(s string) {
	it.Count++
	if len(it.List) < MaxListed {
		it.List = append(it.List, s)
	}
}

// OK reports whether the live graph is exactly the expected one.
func (r *Report) OK() bool {
	return r.MissingVertices.Count+r.ExtraVertices.Count+r.MismatchedVertices.Count+
		r.MissingEdges.Count+r.ExtraEdges.Count+r.DuplicateEdges.Count+r.MismatchedEdges.Count == 0
}

// Line is the one-line summary: counts of every kind of difference.
func (r *Report) Line() string {
	res := "PASS"
	if !r.OK() {
		res = "FAIL"
	}
	return fmt.Sprintf("expected_vertices=%d actual_vertices=%d expected_edges=%d actual_edges=%d missing=%d extra=%d duplicate=%d mismatched=%d result=%s",
		r.ExpectedVertices, r.ActualVertices, r.ExpectedEdges, r.ActualEdges,
		r.MissingVertices.Count+r.MissingEdges.Count, r.ExtraVertices.Count+r.ExtraEdges.Count,
		r.DuplicateEdges.Count, r.MismatchedVertices.Count+r.MismatchedEdges.Count, res)
}

// String is Line followed by the listed differences.
func (r *Report) String() string {
	var b strings.Builder
	b.WriteString(r.Line())
	b.WriteByte('\n')
	for _, s := range []struct {
		name string
		it   Items
	}{
		{"missing vertex", r.MissingVertices}, {"extra vertex", r.ExtraVertices},
		{"mismatched vertex", r.MismatchedVertices}, {"missing edge", r.MissingEdges},
		{"extra (ghost) edge", r.ExtraEdges}, {"duplicate edge", r.DuplicateEdges},
		{"mismatched edge", r.MismatchedEdges},
	} {
		for _, d := range s.it.List {
			fmt.Fprintf(&b, "  %s: %s\n", s.name, d)
		}
		if s.it.Count > len(s.it.List) {
			fmt.Fprintf(&b, "  ... %d more %s\n", s.it.Count-len(s.it.List), s.name)
		}
	}
	return b.String()
}

// Compare checks got against want. Edges are matched by (out, label, in),
// not by id, so that an edge written twice under two ids shows as a
// duplicate.
func Compare(want Expected, got *graph.Snapshot) *Report {
	r := &Report{
		ExpectedVertices: len(want.Vertices), ActualVertices: len(got.Vertices),
		ExpectedEdges: len(want.Edges), ActualEdges: len(got.Edges),
	}
	seenV := map[string]bool{}
	for _, v := range got.Vertices {
		seenV[v.ID] = true
		w, ok := want.Vertices[v.ID]
		if !ok {
			r.ExtraVertices.add(fmt.Sprintf("%s %q", v.Label, v.ID))
			continue
		}
		if d := vertexDiff(w, v); d != "" {
			r.MismatchedVertices.add(fmt.Sprintf("%q: %s", v.ID, d))
		}
	}
	for _, id := range sortedKeys(want.Vertices) {
		if !seenV[id] {
			r.MissingVertices.add(fmt.Sprintf("%s %q", want.Vertices[id].Label, id))
		}
	}

	type key struct{ label, out, in string }
	wantByKey := make(map[key]lineage.Edge, len(want.Edges))
	for _, e := range want.Edges {
		wantByKey[key{e.Label, e.OutV, e.InV}] = e
	}
	gotByKey := map[key][]graph.Edge{}
	for _, e := range got.Edges {
		k := key{e.Label, e.OutV, e.InV}
		gotByKey[k] = append(gotByKey[k], e)
	}
	keys := make([]key, 0, len(gotByKey))
	for k := range gotByKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.out != b.out {
			return a.out < b.out
		}
		if a.label != b.label {
			return a.label < b.label
		}
		return a.in < b.in
	})
	for _, k := range keys {
		es := gotByKey[k]
		desc := fmt.Sprintf("%q -[%s]-> %q", k.out, k.label, k.in)
		if len(es) > 1 {
			r.DuplicateEdges.add(fmt.Sprintf("%s x%d", desc, len(es)))
		}
		w, ok := wantByKey[k]
		if !ok {
			r.ExtraEdges.add(desc)
			continue
		}
		for _, e := range es {
			if d := edgeDiff(w, e); d != "" {
				r.MismatchedEdges.add(desc + ": " + d)
			}
		}
	}
	wantKeys := make([]key, 0, len(wantByKey))
	for k := range wantByKey {
		if _, ok := gotByKey[k]; !ok {
			wantKeys = append(wantKeys, k)
		}
	}
	sort.Slice(wantKeys, func(i, j int) bool {
		return wantKeys[i].out+wantKeys[i].label+wantKeys[i].in < wantKeys[j].out+wantKeys[j].label+wantKeys[j].in
	})
	for _, k := range wantKeys {
		r.MissingEdges.add(fmt.Sprintf("%q -[%s]-> %q", k.out, k.label, k.in))
	}
	return r
}

func vertexDiff(w lineage.Vertex, v graph.Vertex) string {
	var diffs []string
	if w.Label != v.Label {
		diffs = append(diffs, fmt.Sprintf("label %q, want %q", v.Label, w.Label))
	}
	type prop struct {
		name string
		want any // string or int64
	}
	var ps []prop
	if w.Namespace != "" || w.Name != "" {
		ps = append(ps, prop{lineage.PropNamespace, w.Namespace}, prop{lineage.PropName, w.Name})
	}
	for _, p := range w.Props.List() {
		ps = append(ps, prop{p.Key, p.Value()}, prop{p.Key + lineage.StampSuffix, p.Stamp})
	}
	known := map[string]bool{}
	for _, p := range ps {
		known[p.name] = true
		vals := v.Props[p.name]
		switch {
		case len(vals) == 0:
			diffs = append(diffs, fmt.Sprintf("%s missing, want %v", p.name, p.want))
		case len(vals) > 1:
			diffs = append(diffs, fmt.Sprintf("%s has %d values (single cardinality broken)", p.name, len(vals)))
		default:
			if n, isNum := p.want.(int64); isNum {
				if got, ok := graph.AsInt64(vals[0]); !ok || got != n {
					diffs = append(diffs, fmt.Sprintf("%s %v, want %d", p.name, vals[0], n))
				}
			} else if fmt.Sprint(vals[0]) != p.want {
				diffs = append(diffs, fmt.Sprintf("%s %q, want %q", p.name, fmt.Sprint(vals[0]), p.want))
			}
		}
	}
	for _, k := range sortedKeys(v.Props) {
		if !known[k] {
			diffs = append(diffs, fmt.Sprintf("unexpected property %s=%v", k, v.Props[k]))
		}
	}
	return strings.Join(diffs, "; ")
}

func edgeDiff(w lineage.Edge, e graph.Edge) string {
	var diffs []string
	if e.ID != w.ID {
		diffs = append(diffs, fmt.Sprintf("id %q, want %q", e.ID, w.ID))
	}
	for _, p := range []struct {
		name string
		want int64
	}{{lineage.PropFirstSeen, w.FirstSeen}, {lineage.PropLastSeen, w.LastSeen}} {
		got, ok := graph.AsInt64(e.Props[p.name])
		if !ok || got != p.want {
			diffs = append(diffs, fmt.Sprintf("%s %v, want %d", p.name, e.Props[p.name], p.want))
		}
	}
	if got := fmt.Sprint(e.Props[lineage.PropLastRunID]); got != w.LastRunID && !(w.LastRunID == "" && e.Props[lineage.PropLastRunID] == nil) {
		diffs = append(diffs, fmt.Sprintf("lastRunId %q, want %q", got, w.LastRunID))
	}
	// Further properties (lineage.Edge.Props), each with its stamp, and
	// nothing else.
	known := map[string]bool{lineage.PropFirstSeen: true, lineage.PropLastSeen: true, lineage.PropLastRunID: true}
	for _, p := range w.Props.List() {
		ts := p.Key + lineage.StampSuffix
		known[p.Key], known[ts] = true, true
		if n, isNum := p.Value().(int64); isNum {
			if got, ok := graph.AsInt64(e.Props[p.Key]); !ok || got != n {
				diffs = append(diffs, fmt.Sprintf("%s %v, want %d", p.Key, e.Props[p.Key], n))
			}
		} else if got := fmt.Sprint(e.Props[p.Key]); e.Props[p.Key] == nil || got != p.Str {
			diffs = append(diffs, fmt.Sprintf("%s %q, want %q", p.Key, got, p.Str))
		}
		if got, ok := graph.AsInt64(e.Props[ts]); !ok || got != p.Stamp {
			diffs = append(diffs, fmt.Sprintf("%s %v, want %d", ts, e.Props[ts], p.Stamp))
		}
	}
	for _, k := range sortedKeys(e.Props) {
		if !known[k] {
			diffs = append(diffs, fmt.Sprintf("unexpected property %s=%v", k, e.Props[k]))
		}
	}
	return strings.Join(diffs, "; ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
