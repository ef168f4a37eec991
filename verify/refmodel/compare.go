package refmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
)

// Diff is what separates a graph from the expected one. Entries are vertex
// or edge ids (vertex ids start with "dataset:" or "job:", edge ids with
// their label), sorted.
type Diff struct {
	Missing, Extra []string // ids expected but absent; present but not expected
	// Mismatched holds "id: description" for vertices and edges present in
	// both whose properties differ.
	Mismatched []string
}

// Empty reports whether the graphs have the same vertices and edges.
func (d Diff) Empty() bool {
	return len(d.Missing) == 0 && len(d.Extra) == 0 && len(d.Mismatched) == 0
}

// String lists the differences, at most 20 of each kind.
func (d Diff) String() string {
	if d.Empty() {
		return "no difference"
	}
	var b strings.Builder
	section := func(name string, xs []string) {
		if len(xs) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s (%d):\n", name, len(xs))
		for i, x := range xs {
			if i == 20 {
				fmt.Fprintf(&b, "  ... and %d more\n", len(xs)-20)
				break
			}
			fmt.Fprintf(&b, "  %s\n", x)
		}
	}
	section("missing", d.Missing)
	section("extra", d.Extra)
	section("mismatched", d.Mismatched)
	return strings.TrimSuffix(b.String(), "\n")
}

// Compare returns how got differs from want in vertices and edges (with
// their properties). Counts (Events, Invalid, Duplicates) are not compared:
// compare them yourself where they are meant to agree.
func Compare(want, got *Graph) Diff {
	var d Diff
	for id, w := range want.Vertices {
		g, ok := got.Vertices[id]
		switch {
		case !ok:
			d.Missing = append(d.Missing, id)
		case g != w:
			d.Mismatched = append(d.Mismatched, fmt.Sprintf("%s: vertex want %+v, got %+v", id, w, g))
		}
	}
	for id := range got.Vertices {
		if _, ok := want.Vertices[id]; !ok {
			d.Extra = append(d.Extra, id)
		}
	}
	for id, w := range want.Edges {
		g, ok := got.Edges[id]
		if !ok {
			d.Missing = append(d.Missing, id)
			continue
		}
		if desc := edgeDiff(w, g); desc != "" {
			d.Mismatched = append(d.Mismatched, fmt.Sprintf("%s (%s %s -> %s): %s", id, w.Label, w.OutV, w.InV, desc))
		}
	}
	for id := range got.Edges {
		if _, ok := want.Edges[id]; !ok {
			d.Extra = append(d.Extra, id)
		}
	}
	sort.Strings(d.Missing)
	sort.Strings(d.Extra)
	sort.Strings(d.Mismatched)
	return d
}

func edgeDiff(w, g lineage.Edge) string {
	var parts []string
	if w.Label != g.Label || w.OutV != g.OutV || w.InV != g.InV {
		parts = append(parts, fmt.Sprintf("endpoints want %s %s -> %s, got %s %s -> %s", w.Label, w.OutV, w.InV, g.Label, g.OutV, g.InV))
	}
	if w.FirstSeen != g.FirstSeen {
		parts = append(parts, fmt.Sprintf("firstSeen want %d (%s), got %d (%s)", w.FirstSeen, msTime(w.FirstSeen), g.FirstSeen, msTime(g.FirstSeen)))
	}
	if w.LastSeen != g.LastSeen {
		parts = append(parts, fmt.Sprintf("lastSeen want %d (%s), got %d (%s)", w.LastSeen, msTime(w.LastSeen), g.LastSeen, msTime(g.LastSeen)))
	}
	if w.LastRunID != g.LastRunID {
		parts = append(parts, fmt.Sprintf("lastRunId want %q, got %q", w.LastRunID, g.LastRunID))
	}
	if w.Props != g.Props {
		parts = append(parts, fmt.Sprintf("props want %s, got %s", w.Props, g.Props))
	}
	return strings.Join(parts, "; ")
}

func msTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// The JSON form of a Graph (the golden files in testdata/): counts, then
// vertices sorted by id, then edges sorted by label, outV, inV. The
// *Time fields are for readers and ignored when read back.

type graphJSON struct {
	Events     int          `json:"events"`
	Valid      int          `json:"valid"`
	Invalid    int          `json:"invalid"`
	Duplicates int          `json:"duplicates"`
	Vertices   []vertexJSON `json:"vertices"`
	Edges      []edgeJSON   `json:"edges"`
}

type vertexJSON struct {
	ID        string        `json:"id"`
	Label     string        `json:"label"`
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	Props     lineage.Props `json:"props,omitempty"`
}

type edgeJSON struct {
	ID            string `json:"id"`
	Label         string `json:"label"`
	OutV          string `json:"outV"`
	InV           string `json:"inV"`
	FirstSeen     int64  `json:"firstSeen"`
	LastSeen      int64  `json:"lastSeen"`
	LastRunID     string `json:"lastRunId"`
	FirstSeenTime string `json:"firstSeenTime,omitempty"`
	LastSeenTime  string `json:"lastSeenTime,omitempty"`
	// Props: lineage.Edge.Props (COLUMN_DERIVES transformations).
	Props lineage.Props `json:"props,omitempty"`
}

// MarshalJSON writes the graph in its golden-file form, sorted.
func (g *Graph) MarshalJSON() ([]byte, error) {
	return json.Marshal(g.sorted())
}

// GoldenJSON is MarshalJSON laid out for a golden file: one vertex or
// edge per line, so that diffs read well.
func (g *Graph) GoldenJSON() []byte {
	out := g.sorted()
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n\"events\": %d,\n\"valid\": %d,\n\"invalid\": %d,\n\"duplicates\": %d,\n\"vertices\": [",
		out.Events, out.Valid, out.Invalid, out.Duplicates)
	for i, v := range out.Vertices {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n")
		b.Write(mustMarshal(v))
	}
	b.WriteString("\n],\n\"edges\": [")
	for i, e := range out.Edges {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n")
		b.Write(mustMarshal(e))
	}
	b.WriteString("\n]\n}\n")
	return b.Bytes()
}

func mustMarshal(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

func (g *Graph) sorted() graphJSON {
	out := graphJSON{Events: g.Events, Valid: g.Events - g.Invalid, Invalid: g.Invalid, Duplicates: g.Duplicates,
		Vertices: []vertexJSON{}, Edges: []edgeJSON{}}
	for _, v := range g.Vertices {
		out.Vertices = append(out.Vertices, vertexJSON{ID: v.ID, Label: v.Label, Namespace: v.Namespace, Name: v.Name, Props: v.Props})
	}
	sort.Slice(out.Vertices, func(i, j int) bool { return out.Vertices[i].ID < out.Vertices[j].ID })
	for _, e := range g.Edges {
		out.Edges = append(out.Edges, edgeJSON{ID: e.ID, Label: e.Label, OutV: e.OutV, InV: e.InV,
			FirstSeen: e.FirstSeen, LastSeen: e.LastSeen, LastRunID: e.LastRunID,
			FirstSeenTime: msTime(e.FirstSeen), LastSeenTime: msTime(e.LastSeen), Props: e.Props})
	}
	sort.Slice(out.Edges, func(i, j int) bool {
		a, b := out.Edges[i], out.Edges[j]
		if a.Label != b.Label {
			return a.Label < b.Label
		}
		if a.OutV != b.OutV {
			return a.OutV < b.OutV
		}
		return a.InV < b.InV
	})
	return out
}

// UnmarshalJSON reads a graph written by MarshalJSON.
func (g *Graph) UnmarshalJSON(data []byte) error {
	var in graphJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("refmodel: graph: %w", err)
	}
	*g = Graph{Vertices: make(map[string]lineage.Vertex, len(in.Vertices)), Edges: make(map[string]lineage.Edge, len(in.Edges)),
		Invalid: in.Invalid, Duplicates: in.Duplicates, Events: in.Events}
	for _, v := range in.Vertices {
		g.Vertices[v.ID] = lineage.Vertex{ID: v.ID, Label: v.Label, Namespace: v.Namespace, Name: v.Name, Props: v.Props}
	}
	for _, e := range in.Edges {
		g.Edges[e.ID] = lineage.Edge{ID: e.ID, Label: e.Label, OutV: e.OutV, InV: e.InV,
			FirstSeen: e.FirstSeen, LastSeen: e.LastSeen, LastRunID: e.LastRunID, Props: e.Props}
	}
	return nil
}
