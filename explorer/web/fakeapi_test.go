package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fakeGraph is an in-memory graph behind a fake of the explorer API's own
// routes (/api/lf/v1/...), shaped as explorer/openapi.yaml says. It lets the UI
// tests and the render benchmark control the graph exactly (1,000 nodes, a
// graph that goes down); the same UI runs against the real server on the
// Gremlin stand-in in live_test.go.
type fakeGraph struct {
	mu    sync.Mutex
	nodes map[string]*fakeNode
	edges map[string]fakeEdge
	down  bool
	gen   int
	// columns: dataset node id -> field -> the input field it comes from
	columns map[string]map[string]map[string]any
}

type fakeNode struct {
	ID, Type, Namespace, Name string
	Failed                    bool
	Props                     map[string]any
	Runs                      []map[string]any
}

type fakeEdge struct {
	ID, Type, Origin, Destination string
}

func newFakeGraph() *fakeGraph {
	return &fakeGraph{nodes: map[string]*fakeNode{}, edges: map[string]fakeEdge{}, columns: map[string]map[string]map[string]any{}}
}

func dsID(ns, name string) string  { return "dataset:" + ns + ":" + name }
func jobID(ns, name string) string { return "job:" + ns + ":" + name }

func (g *fakeGraph) addNode(typ, ns, name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := dsID(ns, name)
	if typ == "JOB" {
		id = jobID(ns, name)
	}
	if g.nodes[id] == nil {
		g.nodes[id] = &fakeNode{ID: id, Type: typ, Namespace: ns, Name: name, Props: map[string]any{}}
		g.gen++
	}
	return id
}

func (g *fakeGraph) addEdge(typ, from, to string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := typ + ":" + from + "->" + to
	if _, ok := g.edges[id]; !ok {
		g.edges[id] = fakeEdge{ID: id, Type: typ, Origin: from, Destination: to}
		g.gen++
	}
	return id
}

func (g *fakeGraph) setDown(down bool) {
	g.mu.Lock()
	g.down = down
	g.mu.Unlock()
}

func (g *fakeGraph) node(id string) *fakeNode {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nodes[id]
}

// lineage: breadth-first up (against edge direction) and down, each edge a hop.
func (g *fakeGraph) lineage(center string, up, down, maxNodes int) (map[string]any, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.nodes[center] == nil {
		return nil, false
	}
	in := map[string][]fakeEdge{}
	out := map[string][]fakeEdge{}
	for _, e := range g.edges {
		if e.Type == "DERIVES" {
			continue // hops are dataset -> job -> dataset, as Marquez counts depth
		}
		out[e.Origin] = append(out[e.Origin], e)
		in[e.Destination] = append(in[e.Destination], e)
	}
	seen := map[string]bool{center: true}
	order := []string{center}
	walk := func(depth int, next func(string) []string) {
		frontier := []string{center}
		for d := 0; d < depth && len(frontier) > 0; d++ {
			var nf []string
			for _, n := range frontier {
				for _, m := range next(n) {
					if !seen[m] && len(order) < maxNodes {
						seen[m] = true
						order = append(order, m)
						nf = append(nf, m)
					}
				}
			}
			frontier = nf
		}
	}
	walk(up, func(n string) []string {
		var r []string
		for _, e := range in[n] {
			r = append(r, e.Origin)
		}
		sort.Strings(r)
		return r
	})
	walk(down, func(n string) []string {
		var r []string
		for _, e := range out[n] {
			r = append(r, e.Destination)
		}
		sort.Strings(r)
		return r
	})
	var nodes []map[string]any
	for _, id := range order {
		n := g.nodes[id]
		mu, md := 0, 0
		for _, e := range in[id] {
			if !seen[e.Origin] {
				mu++
			}
		}
		for _, e := range out[id] {
			if !seen[e.Destination] {
				md++
			}
		}
		state := any(nil)
		if n.Type == "JOB" {
			state = "COMPLETE"
		}
		nodes = append(nodes, map[string]any{"id": id, "type": n.Type, "namespace": n.Namespace, "name": n.Name,
			"lastSeen": 1764000000000, "hasFailedRuns": n.Failed, "lastRunState": state, "more": map[string]int{"up": mu, "down": md}})
	}
	var edges []map[string]any
	var ids []string
	for _, e := range g.edges {
		if seen[e.Origin] && seen[e.Destination] {
			ids = append(ids, e.ID)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		e := g.edges[id]
		edges = append(edges, map[string]any{"id": e.ID, "type": e.Type, "origin": e.Origin, "destination": e.Destination,
			"firstSeen": 1764000000000, "lastSeen": 1764000000000, "lastRunId": "r1"})
	}
	return map[string]any{"center": center, "nodes": nodes, "edges": edges, "truncated": len(order) >= maxNodes,
		"version": fmt.Sprintf("%d/%d/%d", len(nodes), len(edges), g.gen)}, true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func intParam(r *http.Request, k string, def int) int {
	if v, err := strconv.Atoi(r.URL.Query().Get(k)); err == nil {
		return v
	}
	return def
}

func (g *fakeGraph) isDown() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.down
}

// api is the fake of the explorer API.
func (g *fakeGraph) api() http.Handler {
	mux := http.NewServeMux()
	unreachable := map[string]any{"code": 503, "message": "graph unreachable: connection refused", "error": "graph_unreachable"}
	mux.HandleFunc("/api/lf/v1/lineage", func(w http.ResponseWriter, r *http.Request) {
		if g.isDown() {
			writeJSON(w, 503, unreachable)
			return
		}
		l, ok := g.lineage(r.URL.Query().Get("nodeId"), intParam(r, "up", 1), intParam(r, "down", 1), intParam(r, "maxNodes", 300))
		if !ok {
			writeJSON(w, 404, map[string]any{"code": 404, "message": "no such node"})
			return
		}
		writeJSON(w, 200, l)
	})
	mux.HandleFunc("/api/lf/v1/watch", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		center, up, down, maxN := q.Get("nodeId"), intParam(r, "up", 1), intParam(r, "down", 1), intParam(r, "maxNodes", 300)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		fl := w.(http.Flusher)
		last := ""
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if g.isDown() {
				if last != "down" {
					_, _ = fmt.Fprintf(w, "event: error\ndata: {\"error\":\"graph_unreachable\",\"message\":\"connection refused\"}\n\n")
					fl.Flush()
					last = "down"
				}
			} else if l, ok := g.lineage(center, up, down, maxN); ok && l["version"] != last {
				b, _ := json.Marshal(l)
				_, _ = fmt.Fprintf(w, "event: lineage\ndata: %s\n\n", b)
				fl.Flush()
				last = l["version"].(string)
			}
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	})
	mux.HandleFunc("/api/lf/v1/node", func(w http.ResponseWriter, r *http.Request) {
		if g.isDown() {
			writeJSON(w, 503, unreachable)
			return
		}
		n := g.node(r.URL.Query().Get("nodeId"))
		if n == nil {
			writeJSON(w, 404, map[string]any{"code": 404, "message": "no such node"})
			return
		}
		runs := n.Runs
		if runs == nil {
			runs = []map[string]any{}
		}
		writeJSON(w, 200, map[string]any{"id": n.ID, "type": n.Type, "namespace": n.Namespace, "name": n.Name,
			"properties": n.Props, "aliases": []any{}, "firstSeen": 1763000000000, "lastSeen": 1764000000000,
			"lastRunId": "r1", "runs": runs, "inputs": []string{}, "outputs": []string{}})
	})
	mux.HandleFunc("/api/lf/v1/column-lineage", func(w http.ResponseWriter, r *http.Request) {
		n := g.node(r.URL.Query().Get("nodeId"))
		if n == nil {
			writeJSON(w, 404, map[string]any{"code": 404, "message": "no such node"})
			return
		}
		g.mu.Lock()
		cols := g.columns[n.ID]
		g.mu.Unlock()
		fields, edges := []map[string]any{}, []map[string]any{}
		for field, in := range cols {
			id := "datasetField:" + n.Namespace + ":" + n.Name + ":" + field
			from := fmt.Sprintf("datasetField:%s:%s:%s", in["namespace"], in["dataset"], in["field"])
			fields = append(fields, map[string]any{"id": id, "namespace": n.Namespace, "dataset": n.Name, "field": field},
				map[string]any{"id": from, "namespace": in["namespace"], "dataset": in["dataset"], "field": in["field"]})
			edges = append(edges, map[string]any{"origin": from, "destination": id, "transformationType": "IDENTITY", "transformationDescription": nil})
		}
		writeJSON(w, 200, map[string]any{"center": n.ID, "fields": fields, "edges": edges})
	})
	mux.HandleFunc("/api/lf/v1/search", func(w http.ResponseWriter, r *http.Request) {
		if g.isDown() {
			writeJSON(w, 503, unreachable)
			return
		}
		q := strings.ToLower(r.URL.Query().Get("q"))
		g.mu.Lock()
		var res []map[string]any
		for _, n := range g.nodes {
			if strings.Contains(strings.ToLower(n.Name), q) {
				res = append(res, map[string]any{"id": n.ID, "type": n.Type, "namespace": n.Namespace, "name": n.Name, "matchedAlias": nil})
			}
		}
		g.mu.Unlock()
		sort.Slice(res, func(i, j int) bool { return res[i]["id"].(string) < res[j]["id"].(string) })
		if len(res) > 20 {
			res = res[:20]
		}
		writeJSON(w, 200, map[string]any{"results": res})
	})
	return mux
}
