package verify

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/keyspace"
	"github.com/lineageflow/lineageflow/lineage"
)

// DiffOptions configure [Diff].
type DiffOptions struct {
	// KeyShare, if > 0, restricts the comparison to the mirrored key
	// space: what `lineageflow mirror -share KeyShare` sends to a canary.
	// See [Diff].
	KeyShare float64
}

// DiffReport is the difference between graph A (production) and graph B
// (canary). Missing: in A, not in B; extra: in B, not in A; different:
// in both with another label, endpoints or property values. Lists are
// capped at MaxListed (the counts are exact).
type DiffReport struct {
	Scope     string `json:"scope"`
	AVertices int    `json:"a_vertices"`
	BVertices int    `json:"b_vertices"`
	AEdges    int    `json:"a_edges"`
	BEdges    int    `json:"b_edges"`
	// Compared is the number of distinct vertex and edge ids in A or B
	// (in scope): the divergence ratio's denominator.
	Compared int `json:"compared"`

	MissingVertices   Items `json:"missing_vertices"`
	ExtraVertices     Items `json:"extra_vertices"`
	DifferentVertices Items `json:"different_vertices"`
	MissingEdges      Items `json:"missing_edges"`
	ExtraEdges        Items `json:"extra_edges"`
	DifferentEdges    Items `json:"different_edges"`

	// Divergence is (missing + extra + different) / Compared, 0 when
	// nothing is compared.
	Divergence float64 `json:"divergence"`
}

// Diverging is the number of ids missing, extra or different.
func (r *DiffReport) Diverging() int {
	return r.MissingVertices.Count + r.ExtraVertices.Count + r.DifferentVertices.Count +
		r.MissingEdges.Count + r.ExtraEdges.Count + r.DifferentEdges.Count
}

// Line is the one-line summary.
func (r *DiffReport) Line() string {
	return fmt.Sprintf("scope=%s a_vertices=%d b_vertices=%d a_edges=%d b_edges=%d compared=%d missing=%d extra=%d different=%d divergence=%.6g",
		r.Scope, r.AVertices, r.BVertices, r.AEdges, r.BEdges, r.Compared,
		r.MissingVertices.Count+r.MissingEdges.Count, r.ExtraVertices.Count+r.ExtraEdges.Count,
		r.DifferentVertices.Count+r.DifferentEdges.Count, r.Divergence)
}

// String is Line followed by the listed differences.
func (r *DiffReport) String() string {
	var b strings.Builder
	b.WriteString(r.Line())
	b.WriteByte('\n')
	for _, s := range []struct {
		name string
		it   Items
	}{
		{"missing vertex", r.MissingVertices}, {"extra vertex", r.ExtraVertices}, {"different vertex", r.DifferentVertices},
		{"missing edge", r.MissingEdges}, {"extra edge", r.ExtraEdges}, {"different edge", r.DifferentEdges},
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

// Diff compares two live graphs by vertex and edge id.
//
// Without a key share everything is compared, every property included.
// With one (the mirrored key space, see internal/keyspace), a Job is in
// scope when [keyspace.Selected]([keyspace.JobKey] of its namespace and
// name) holds. In scope then: those Job vertices; the INPUT_TO edges into
// them and OUTPUTS edges out of them; Run vertices whose job property
// names them; and the Dataset vertices at the
// ends of in-scope INPUT_TO/OUTPUTS edges, compared by label, namespace and
// name only (their other properties come from whichever job's event came
// last, mirrored or not). DERIVES, column lineage and aliases are left out:
// one of them can merge events of mirrored and unmirrored jobs.
func Diff(a, b *graph.Snapshot, opt DiffOptions) *DiffReport {
	r := &DiffReport{Scope: "all"}
	av, ae := indexVertices(a), indexEdges(a)
	bv, be := indexVertices(b), indexEdges(b)
	inV := func(string) bool { return true }
	inE := func(string) bool { return true }
	identityOnly := func(string) bool { return false }
	if opt.KeyShare > 0 {
		r.Scope = fmt.Sprintf("key-share=%g", opt.KeyShare)
		sv, se, ds := scope(av, ae, bv, be, opt.KeyShare)
		inV = func(id string) bool { return sv[id] }
		inE = func(id string) bool { return se[id] }
		identityOnly = func(id string) bool { return ds[id] }
	}
	ids := map[string]bool{}
	for id := range av {
		if inV(id) {
			ids[id] = true
			r.AVertices++
		}
	}
	for id := range bv {
		if inV(id) {
			ids[id] = true
			r.BVertices++
		}
	}
	for _, id := range sortedSet(ids) {
		x, inA := av[id]
		y, inB := bv[id]
		switch {
		case !inB:
			r.MissingVertices.add(fmt.Sprintf("%s %s", x.Label, id))
		case !inA:
			r.ExtraVertices.add(fmt.Sprintf("%s %s", y.Label, id))
		default:
			if d := vertexDelta(x, y, identityOnly(id)); d != "" {
				r.DifferentVertices.add(fmt.Sprintf("%s %s: %s", x.Label, id, d))
			}
		}
	}
	r.Compared = len(ids)
	ids = map[string]bool{}
	for id := range ae {
		if inE(id) {
			ids[id] = true
			r.AEdges++
		}
	}
	for id := range be {
		if inE(id) {
			ids[id] = true
			r.BEdges++
		}
	}
	for _, id := range sortedSet(ids) {
		x, inA := ae[id]
		y, inB := be[id]
		switch {
		case !inB:
			r.MissingEdges.add(fmt.Sprintf("%s %s->%s", x.Label, x.OutV, x.InV))
		case !inA:
			r.ExtraEdges.add(fmt.Sprintf("%s %s->%s", y.Label, y.OutV, y.InV))
		default:
			if d := edgeDelta(x, y); d != "" {
				r.DifferentEdges.add(fmt.Sprintf("%s %s->%s: %s", x.Label, x.OutV, x.InV, d))
			}
		}
	}
	r.Compared += len(ids)
	if r.Compared > 0 {
		r.Divergence = float64(r.Diverging()) / float64(r.Compared)
	}
	return r
}

// scope returns the in-scope vertex and edge ids of both graphs, and the
// vertices compared by identity only (datasets).
func scope(av map[string]graph.Vertex, ae map[string]graph.Edge, bv map[string]graph.Vertex, be map[string]graph.Edge,
	share float64) (vs, es, identity map[string]bool) {
	vs, es, identity = map[string]bool{}, map[string]bool{}, map[string]bool{}
	jobIn := func(v graph.Vertex) bool {
		return keyspace.Selected(keyspace.JobKey(prop(v, lineage.PropNamespace), prop(v, lineage.PropName)), share)
	}
	for _, m := range []map[string]graph.Vertex{av, bv} {
		for id, v := range m {
			if v.Label == lineage.LabelJob && jobIn(v) {
				vs[id] = true
			}
		}
	}
	for _, m := range []map[string]graph.Edge{ae, be} {
		for id, e := range m {
			switch {
			case e.Label == lineage.EdgeInputTo && vs[e.InV]:
				es[id], vs[e.OutV], identity[e.OutV] = true, true, true
			case e.Label == lineage.EdgeOutputs && vs[e.OutV]:
				es[id], vs[e.InV], identity[e.InV] = true, true, true
			}
		}
	}
	// A Run vertex names its job (its job property): no edge.
	for _, m := range []map[string]graph.Vertex{av, bv} {
		for id, v := range m {
			if v.Label == lineage.LabelRun && vs[prop(v, lineage.PropJob)] {
				vs[id] = true
			}
		}
	}
	return vs, es, identity
}

func prop(v graph.Vertex, k string) string {
	if vals := v.Props[k]; len(vals) > 0 {
		return fmt.Sprint(vals[0])
	}
	return ""
}

func indexVertices(s *graph.Snapshot) map[string]graph.Vertex {
	m := make(map[string]graph.Vertex, len(s.Vertices))
	for _, v := range s.Vertices {
		m[v.ID] = v
	}
	return m
}

func indexEdges(s *graph.Snapshot) map[string]graph.Edge {
	m := make(map[string]graph.Edge, len(s.Edges))
	for _, e := range s.Edges {
		m[e.ID] = e
	}
	return m
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// vertexDelta describes how y differs from x ("" when equal); with
// identityOnly only label, namespace and name count.
func vertexDelta(x, y graph.Vertex, identityOnly bool) string {
	var d []string
	if x.Label != y.Label {
		d = append(d, fmt.Sprintf("label %s != %s", x.Label, y.Label))
	}
	keys := map[string]bool{}
	for k := range x.Props {
		keys[k] = true
	}
	for k := range y.Props {
		keys[k] = true
	}
	for _, k := range sortedSet(keys) {
		if identityOnly && k != lineage.PropNamespace && k != lineage.PropName {
			continue
		}
		if xs, ys := fmt.Sprint(x.Props[k]), fmt.Sprint(y.Props[k]); xs != ys {
			d = append(d, fmt.Sprintf("%s %s != %s", k, xs, ys))
		}
	}
	return strings.Join(d, ", ")
}

func edgeDelta(x, y graph.Edge) string {
	var d []string
	if x.Label != y.Label || x.OutV != y.OutV || x.InV != y.InV {
		d = append(d, fmt.Sprintf("%s %s->%s != %s %s->%s", x.Label, x.OutV, x.InV, y.Label, y.OutV, y.InV))
	}
	keys := map[string]bool{}
	for k := range x.Props {
		keys[k] = true
	}
	for k := range y.Props {
		keys[k] = true
	}
	for _, k := range sortedSet(keys) {
		if xs, ys := fmt.Sprint(x.Props[k]), fmt.Sprint(y.Props[k]); xs != ys {
			d = append(d, fmt.Sprintf("%s %s != %s", k, xs, ys))
		}
	}
	return strings.Join(d, ", ")
}
