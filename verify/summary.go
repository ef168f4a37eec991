package verify

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
)

// Summary describes a graph in a few lines: vertices and edges by label, and
// the longest origin->destination (DERIVES) path, as a sample of lineage.
func Summary(s *graph.Snapshot) string {
	var b strings.Builder
	vc, ec := map[string]int{}, map[string]int{}
	names := map[string]string{}
	for _, v := range s.Vertices {
		vc[v.Label]++
		ns, n := first(v.Props[lineage.PropNamespace]), first(v.Props[lineage.PropName])
		names[v.ID] = ns + "/" + n
		if ns == "" {
			names[v.ID] = n
		}
	}
	next := map[string][]string{}
	for _, e := range s.Edges {
		ec[e.Label]++
		if e.Label == lineage.EdgeDerives {
			next[e.OutV] = append(next[e.OutV], e.InV)
		}
	}
	fmt.Fprintf(&b, "graph: %d vertices (%s), %d edges (%s)\n",
		len(s.Vertices), counts(vc), len(s.Edges), counts(ec))
	if p := longestPath(next); len(p) > 1 {
		parts := make([]string, len(p))
		for i, id := range p {
			parts[i] = names[id]
			if parts[i] == "" {
				parts[i] = id
			}
		}
		fmt.Fprintf(&b, "longest lineage path (%d hops): %s\n", len(p)-1, strings.Join(parts, " -> "))
	}
	return b.String()
}

func first(vals []any) string {
	if len(vals) == 0 {
		return ""
	}
	return fmt.Sprint(vals[0])
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// longestPath finds the longest simple path in the DERIVES graph by memoized
// DFS; cycles (a dataset derived from itself through others) are cut.
func longestPath(next map[string][]string) []string {
	memo := map[string][]string{}
	onStack := map[string]bool{}
	var visit func(string) []string
	visit = func(v string) []string {
		if p, ok := memo[v]; ok {
			return p
		}
		onStack[v] = true
		best := []string{v}
		outs := append([]string(nil), next[v]...)
		sort.Strings(outs)
		for _, w := range outs {
			if onStack[w] {
				continue
			}
			if p := visit(w); len(p)+1 > len(best) {
				best = append([]string{v}, p...)
			}
		}
		onStack[v] = false
		memo[v] = best
		return best
	}
	starts := make([]string, 0, len(next))
	for v := range next {
		starts = append(starts, v)
	}
	sort.Strings(starts)
	var best []string
	for _, v := range starts {
		if p := visit(v); len(p) > len(best) {
			best = p
		}
	}
	return best
}
