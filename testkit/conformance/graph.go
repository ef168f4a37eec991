package conformance

import (
	"context"
	"fmt"
	"sort"
	"strings"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
)

// Graph is a writer under test with a way to read back what it wrote.
type Graph interface {
	sink.Writer
	// Read returns the vertices among ids that the graph holds and every
	// edge out of them, with their properties, sorted by id.
	Read(ctx context.Context, ids []string) ([]lineage.Vertex, []lineage.Edge, error)
}

// MemoryGraph is m as a [Graph].
func MemoryGraph(m *sink.Memory) Graph { return memoryGraph{m} }

type memoryGraph struct{ *sink.Memory }

func (g memoryGraph) Read(_ context.Context, ids []string) ([]lineage.Vertex, []lineage.Edge, error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	var vs []lineage.Vertex
	for _, v := range g.Vertices() {
		if want[v.ID] {
			vs = append(vs, v)
		}
	}
	var es []lineage.Edge
	for _, e := range g.Edges() {
		if want[e.OutV] {
			es = append(es, e)
		}
	}
	return vs, es, nil
}

// GremlinGraph is w, a writer to the Gremlin Server at endpoint, as a
// [Graph]: Read reads the graph back over Gremlin, rebuilding each
// property with its stamp (key + [lineage.StampSuffix]), and fails on a
// property with more than one value (single cardinality broken).
func GremlinGraph(w sink.Writer, endpoint string) Graph { return gremlinGraph{w, endpoint} }

type gremlinGraph struct {
	sink.Writer
	endpoint string
}

func (g gremlinGraph) Read(_ context.Context, ids []string) ([]lineage.Vertex, []lineage.Edge, error) {
	if len(ids) == 0 {
		return nil, nil, nil // g.V() of no ids is every vertex
	}
	src, closeFn, err := graph.Connect(g.endpoint)
	if err != nil {
		return nil, nil, err
	}
	defer closeFn()
	T, T__ := gremlingo.T, gremlingo.T__
	args := make([]interface{}, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	vrows, err := src.V(args...).Project("id", "label", "props").By(T.Id).By(T.Label).By(T__.ValueMap()).ToList()
	if err != nil {
		return nil, nil, fmt.Errorf("read vertices: %w", err)
	}
	var vs []lineage.Vertex
	for _, r := range vrows {
		m := r.GetInterface().(map[interface{}]interface{})
		v := lineage.Vertex{ID: fmt.Sprint(m["id"]), Label: fmt.Sprint(m["label"])}
		props := map[string]any{}
		for k, val := range m["props"].(map[interface{}]interface{}) {
			list, _ := val.([]interface{})
			if len(list) != 1 {
				return nil, nil, fmt.Errorf("vertex %s: property %v has %d values, want 1 (single cardinality)", v.ID, k, len(list))
			}
			props[fmt.Sprint(k)] = list[0]
		}
		v.Namespace, _ = props[lineage.PropNamespace].(string)
		v.Name, _ = props[lineage.PropName].(string)
		delete(props, lineage.PropNamespace)
		delete(props, lineage.PropName)
		if v.Props, err = propsOf(props); err != nil {
			return nil, nil, fmt.Errorf("vertex %s: %w", v.ID, err)
		}
		vs = append(vs, v)
	}
	erows, err := src.V(args...).OutE().Project("id", "label", "out", "in", "props").
		By(T.Id).By(T.Label).By(T__.OutV().Id()).By(T__.InV().Id()).By(T__.ValueMap()).ToList()
	if err != nil {
		return nil, nil, fmt.Errorf("read edges: %w", err)
	}
	var es []lineage.Edge
	for _, r := range erows {
		m := r.GetInterface().(map[interface{}]interface{})
		e := lineage.Edge{ID: fmt.Sprint(m["id"]), Label: fmt.Sprint(m["label"]), OutV: fmt.Sprint(m["out"]), InV: fmt.Sprint(m["in"])}
		props := map[string]any{}
		for k, val := range m["props"].(map[interface{}]interface{}) {
			props[fmt.Sprint(k)] = val
		}
		var ok1, ok2 bool
		e.FirstSeen, ok1 = graph.AsInt64(props[lineage.PropFirstSeen])
		e.LastSeen, ok2 = graph.AsInt64(props[lineage.PropLastSeen])
		run, ok3 := props[lineage.PropLastRunID].(string)
		if !ok1 || !ok2 || !ok3 {
			return nil, nil, fmt.Errorf("edge %s: firstSeen, lastSeen or lastRunId missing: %v", e.ID, props)
		}
		e.LastRunID = run
		delete(props, lineage.PropFirstSeen)
		delete(props, lineage.PropLastSeen)
		delete(props, lineage.PropLastRunID)
		if e.Props, err = propsOf(props); err != nil {
			return nil, nil, fmt.Errorf("edge %s: %w", e.ID, err)
		}
		es = append(es, e)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].ID < vs[j].ID })
	sort.Slice(es, func(i, j int) bool { return es[i].ID < es[j].ID })
	return vs, es, nil
}

// propsOf rebuilds mergeable properties from graph values: key k holds
// the value, k + StampSuffix its stamp.
func propsOf(m map[string]any) (lineage.Props, error) {
	var ps []lineage.Prop
	for k, val := range m {
		if strings.HasSuffix(k, lineage.StampSuffix) {
			if _, ok := m[strings.TrimSuffix(k, lineage.StampSuffix)]; !ok {
				return "", fmt.Errorf("stamp %s without its property", k)
			}
			continue
		}
		stamp, ok := graph.AsInt64(m[k+lineage.StampSuffix])
		if !ok {
			return "", fmt.Errorf("property %s has no stamp", k)
		}
		p := lineage.Prop{Key: k, Stamp: stamp}
		switch x := val.(type) {
		case string:
			p.Str = x
		default:
			n, ok := graph.AsInt64(x)
			if !ok {
				return "", fmt.Errorf("property %s is a %T", k, val)
			}
			p.Num, p.IsNum = n, true
		}
		ps = append(ps, p)
	}
	return lineage.MakeProps(ps...), nil
}
