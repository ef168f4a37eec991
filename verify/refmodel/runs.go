package refmodel

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
)

// runVertex folds one RunEvent into its run's vertex state: every event
// of a run, whatever its outcome, counts here (DESIGN.md, "Graph model").
func (m *Model) runVertex(r *run, ev *event) {
	t := ev.time
	r.tMin, r.tMax = min(r.tMin, t), max(r.tMax, t)
	if ev.typ.Terminal() {
		if !r.hasEnd || t > r.endMax {
			r.endMax = t
		}
		r.hasEnd = true
	}
	ps := []lineage.Prop{}
	if p, ok := lineage.RunStateProp(ev.typ, t); ok {
		ps = append(ps, p)
	}
	if ev.hasError {
		ps = append(ps, lineage.StrLWW(lineage.PropErrorMessage, ev.errorMessage, t))
	}
	if ev.hasNomStart {
		ps = append(ps, lineage.NumLWW(lineage.PropNominalStartTime, ev.nomStart, t))
	}
	if ev.hasNomEnd {
		ps = append(ps, lineage.NumLWW(lineage.PropNominalEndTime, ev.nomEnd, t))
	}
	for k, v := range ev.runStrs {
		ps = append(ps, lineage.StrLWW(k, v, t))
	}
	if ev.hasParent && ev.parentRunID != r.id {
		ps = append(ps, lineage.StrLWW(lineage.PropParentRunID, ev.parentRunID, t))
	}
	r.props = r.props.With(ps...)
	for _, d := range ev.inputs {
		span(r.reads, d, t)
	}
	for _, d := range ev.outputs {
		span(r.writes, d, t)
	}
}

// addRun adds run r's vertex: its properties, its job's vertex id and
// the ids of the datasets it read and wrote (capped lists and counts), no
// edge.
func (m *Model) addRun(g *Graph, r *run) {
	ps := []lineage.Prop{
		lineage.StrConst(lineage.PropRunID, r.id),
		lineage.StrConst(lineage.PropJobNamespace, r.job.Namespace),
		lineage.StrConst(lineage.PropJobName, r.job.Name),
		lineage.StrConst(lineage.PropJob, lineage.JobID(r.job)),
		lineage.NumMin(lineage.PropStartedAt, r.tMin),
		lineage.NumMax(lineage.PropUpdatedAt, r.tMax),
	}
	if r.hasEnd {
		ps = append(ps, lineage.NumMax(lineage.PropEndedAt, r.endMax))
		if r.endMax >= r.tMin {
			ps = append(ps, lineage.NumMax(lineage.PropDurationMs, r.endMax-r.tMin))
		}
	}
	ids := func(set map[lineage.Dataset][2]int64) []string {
		out := make([]string, 0, len(set))
		for d := range set {
			out = append(out, lineage.DatasetID(d))
		}
		return out
	}
	ps = lineage.AppendRunDatasetProps(ps, ids(r.reads), ids(r.writes))
	rv := lineage.RunVertex(r.id)
	rv.Props = r.props.With(ps...)
	lineage.MergeVertexInto(g.Vertices, rv)
}

// runFacets reads the errorMessage, nominalTime, processing_engine and
// externalQuery run facets of a run object, ignoring any of another shape
// (they never make a record invalid) and any processing_engine or
// externalQuery value longer than 1 KiB.
func (ev *event) runFacets(runObj object) {
	var facets map[string]json.RawMessage
	if raw, ok := runObj["facets"]; !ok || json.Unmarshal(raw, &facets) != nil {
		return
	}
	var em map[string]*string // keys match exactly (a struct would not)
	if raw, ok := facets["errorMessage"]; ok && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) &&
		json.Unmarshal(raw, &em) == nil {
		if msg, ok := em["message"]; ok && msg != nil {
			ev.errorMessage, ev.hasError = *msg, true
		}
	}
	var nt map[string]json.RawMessage
	if raw, ok := facets["nominalTime"]; ok && json.Unmarshal(raw, &nt) == nil && nt != nil {
		ev.nomStart, ev.hasNomStart = facetTime(nt["nominalStartTime"])
		ev.nomEnd, ev.hasNomEnd = facetTime(nt["nominalEndTime"])
	}
	for facet, members := range map[string]map[string]string{
		"processing_engine": {"name": lineage.PropProcessingEngine, "version": lineage.PropProcessingEngineVersion,
			"openlineageAdapterVersion": lineage.PropOpenlineageAdapterVersion},
		"externalQuery": {"externalQueryId": lineage.PropExternalQueryID, "source": lineage.PropExternalQuerySource},
	} {
		var m map[string]*string
		raw, ok := facets[facet]
		if !ok || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			continue
		}
		if json.Unmarshal(raw, &m) != nil {
			// A member of another type than a string: read them one by one.
			var o map[string]json.RawMessage
			if json.Unmarshal(raw, &o) != nil {
				continue
			}
			m = map[string]*string{}
			for k, v := range o {
				var s *string
				if json.Unmarshal(v, &s) == nil {
					m[k] = s
				}
			}
		}
		for member, key := range members {
			if v, ok := m[member]; ok && v != nil && len(*v) <= 1024 {
				if ev.runStrs == nil {
					ev.runStrs = map[string]string{}
				}
				ev.runStrs[key] = *v
			}
		}
	}
}

// facetTime reads an RFC 3339 date-time of a facet; one without a zone
// is UTC.
func facetTime(raw json.RawMessage) (int64, bool) {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return 0, false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), true
		}
	}
	return 0, false
}

// IsLineage reports whether label is a lineage edge label (INPUT_TO,
// OUTPUTS, DERIVES): only committed runs and JobEvents give them.
func IsLineage(label string) bool {
	return label == lineage.EdgeInputTo || label == lineage.EdgeOutputs || label == lineage.EdgeDerives
}

// Lineage returns the lineage part of g, the graph of the model before
// runs had vertices: the lineage edges, their endpoints, and the vertices
// no edge touches (DatasetEvents), all without their run-history
// properties (lineage.IsRunHistoryProp); Run vertices, and a vertex no
// edge touches that held only those, are left out. Counts are kept.
func (g *Graph) Lineage() *Graph {
	out := &Graph{Vertices: map[string]lineage.Vertex{}, Edges: map[string]lineage.Edge{},
		Invalid: g.Invalid, Duplicates: g.Duplicates, Events: g.Events}
	touched := map[string]bool{}
	for id, e := range g.Edges {
		touched[e.OutV], touched[e.InV] = true, true
		if IsLineage(e.Label) {
			out.Edges[id] = e
			out.Vertices[e.OutV] = withoutRunHistory(g.Vertices[e.OutV])
			out.Vertices[e.InV] = withoutRunHistory(g.Vertices[e.InV])
		}
	}
	for id, v := range g.Vertices {
		if !touched[id] && v.Label != lineage.LabelRun {
			w := withoutRunHistory(v)
			if w.Props == "" && v.Props != "" {
				continue
			}
			out.Vertices[id] = w
		}
	}
	return out
}

// withoutRunHistory returns v without its run-history properties.
func withoutRunHistory(v lineage.Vertex) lineage.Vertex {
	if v.Props == "" {
		return v
	}
	var keep []lineage.Prop
	for _, p := range v.Props.List() {
		if !lineage.IsRunHistoryProp(p.Key) {
			keep = append(keep, p)
		}
	}
	v.Props = lineage.MakeProps(keep...)
	return v
}
