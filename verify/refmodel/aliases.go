package refmodel

import (
	"encoding/json"
	"strings"

	"github.com/lineageflow/lineageflow/lineage"
)

// alias is one identifier of a dataset's symlinks facet.
type alias struct {
	of, alias lineage.Dataset
	typ       string
}

// symlinks reads the symlinks facet of the dataset object raw (named d):
// {"facets": {"symlinks": {"identifiers": [{"namespace", "name",
// "type"}]}}}. Leniently: anything of another shape gives nothing; an
// identifier without a non-empty string namespace and name, or naming d
// itself, is skipped; a type that is not a string is absent.
func symlinks(d lineage.Dataset, raw json.RawMessage) []alias {
	var ds struct {
		Facets map[string]json.RawMessage
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil || json.Unmarshal(top["facets"], &ds.Facets) != nil {
		return nil
	}
	sraw, ok := ds.Facets["symlinks"]
	var sl map[string]json.RawMessage
	if !ok || json.Unmarshal(sraw, &sl) != nil || sl == nil {
		return nil
	}
	var ids []map[string]json.RawMessage
	if json.Unmarshal(sl["identifiers"], &ids) != nil {
		return nil
	}
	str := func(m map[string]json.RawMessage, k string) string {
		var s string
		if json.Unmarshal(m[k], &s) != nil {
			return ""
		}
		return s
	}
	var out []alias
	for _, id := range ids {
		a := lineage.Dataset{Namespace: str(id, "namespace"), Name: str(id, "name")}
		if a.Namespace == "" || a.Name == "" || a == d {
			continue
		}
		out = append(out, alias{of: d, alias: a, typ: str(id, "type")})
	}
	return out
}

// addAliases adds the DatasetAlias vertices and ALIAS_OF edges of a
// valid event (every kind, every outcome: identity, not lineage).
func (m *Model) addAliases(ev *event) {
	for _, a := range ev.aliases {
		av := lineage.Vertex{ID: lineage.AliasID(a.alias), Label: lineage.LabelDatasetAlias,
			Namespace: a.alias.Namespace, Name: a.alias.Name}
		if a.typ != "" {
			av.Props = lineage.MakeProps(lineage.StrConst(lineage.PropAliasType, a.typ))
		}
		dv := lineage.DatasetVertex(a.of)
		lineage.MergeVertexInto(m.vertices, av)
		lineage.MergeVertexInto(m.vertices, dv)
		lineage.MergeInto(m.aliasEdges, lineage.NewEdge(lineage.EdgeAliasOf, av.ID, dv.ID, ev.time, ev.time, ev.runID))
	}
}

// lifecycleState reads the lifecycleStateChange facet of the output
// dataset object raw: its state, "" when absent or of another shape.
func lifecycleState(raw json.RawMessage) string {
	var ds map[string]json.RawMessage
	var facets map[string]json.RawMessage
	var lc map[string]json.RawMessage
	var st string
	if json.Unmarshal(raw, &ds) != nil || json.Unmarshal(ds["facets"], &facets) != nil ||
		json.Unmarshal(facets["lifecycleStateChange"], &lc) != nil || json.Unmarshal(lc["lifecycleStateChange"], &st) != nil {
		return ""
	}
	return st
}

// fieldPair is one input field -> output field pair of a columnLineage
// facet.
type fieldPair struct {
	in, out         lineage.Dataset
	inField, outFld string
	typ, desc       string // transformation type and description ("": none)
}

// columnLineage reads the columnLineage facet of the output dataset object
// raw (named d): {"facets": {"columnLineage": {"fields": {outField:
// {"inputFields": [{"namespace", "name", "field"}]}}}}}. Leniently: what
// lacks a non-empty string namespace, name or field is skipped, as is a
// field derived from itself; anything of another shape gives nothing.
func columnLineage(d lineage.Dataset, raw json.RawMessage) []fieldPair {
	var top, facets map[string]json.RawMessage
	var cl struct {
		Fields map[string]json.RawMessage `json:"fields"`
	}
	if json.Unmarshal(raw, &top) != nil || json.Unmarshal(top["facets"], &facets) != nil ||
		json.Unmarshal(facets["columnLineage"], &cl) != nil {
		return nil
	}
	var out []fieldPair
	for of, fraw := range cl.Fields {
		var f struct {
			InputFields []map[string]json.RawMessage `json:"inputFields"`
		}
		if of == "" {
			continue
		}
		var fm map[string]json.RawMessage
		if json.Unmarshal(fraw, &fm) != nil || json.Unmarshal(fm["inputFields"], &f.InputFields) != nil {
			continue
		}
		str := func(m map[string]json.RawMessage, k string) string {
			var s string
			if json.Unmarshal(m[k], &s) != nil {
				return ""
			}
			return s
		}
		for _, in := range f.InputFields {
			src := lineage.Dataset{Namespace: str(in, "namespace"), Name: str(in, "name")}
			field := str(in, "field")
			if src.Namespace == "" || src.Name == "" || field == "" || src == d && field == of {
				continue
			}
			fp := fieldPair{in: src, out: d, inField: field, outFld: of}
			fp.typ, fp.desc = transformationsOf(in["transformations"])
			if fp.typ == "" && fp.desc == "" {
				fp.typ, fp.desc = str(fm, "transformationType"), str(fm, "transformationDescription")
			}
			out = append(out, fp)
		}
	}
	return out
}

// parentRun reads the parent run facet of a run object, leniently: one
// that is not {"run": {"runId": non-empty string}, "job": {"namespace",
// "name": non-empty strings}} is ignored (ok false).
func parentRun(runObj object) (runID string, job lineage.Job, ok bool) {
	var facets, p, run object
	if json.Unmarshal(runObj["facets"], &facets) != nil || json.Unmarshal(facets["parent"], &p) != nil ||
		json.Unmarshal(p["run"], &run) != nil || p == nil || run == nil {
		return "", lineage.Job{}, false
	}
	id, err := run.str("runId", "parent.run")
	if err != nil || id == "" {
		return "", lineage.Job{}, false
	}
	ns, name, err := p.named("job", "parent")
	if err != nil {
		return "", lineage.Job{}, false
	}
	return id, lineage.Job{Namespace: ns, Name: name}, true
}

// addParents adds the job dependencies of a valid RunEvent (its
// jobDependencies run facet: Job -[DEPENDS_ON]-> each upstream job, each
// downstream job -[DEPENDS_ON]-> Job) and, with a parent run facet, its
// hierarchy (every outcome: structure, not lineage): Job -[CHILD_OF]-> the
// parent's Job; none to itself. The parent run is the child Run vertex's
// parentRunId property (runVertex).
func (m *Model) addParents(ev *event) {
	if ev.kind != lineage.KindRun {
		return
	}
	dep := func(from, to lineage.Job) {
		if from == to {
			return
		}
		f, t := lineage.JobVertex(from), lineage.JobVertex(to)
		lineage.MergeVertexInto(m.vertices, f)
		lineage.MergeVertexInto(m.vertices, t)
		lineage.MergeInto(m.aliasEdges, lineage.NewEdge(lineage.EdgeDependsOn, f.ID, t.ID, ev.time, ev.time, ev.runID))
	}
	for _, u := range ev.upstream {
		dep(ev.job, u)
	}
	for _, d := range ev.downstream {
		dep(d, ev.job)
	}
	if !ev.hasParent {
		return
	}
	if ev.parentJob != ev.job {
		c, p := lineage.JobVertex(ev.job), lineage.JobVertex(ev.parentJob)
		lineage.MergeVertexInto(m.vertices, c)
		lineage.MergeVertexInto(m.vertices, p)
		lineage.MergeInto(m.aliasEdges, lineage.NewEdge(lineage.EdgeChildOf, c.ID, p.ID, ev.time, ev.time, ev.runID))
	}
}

// transformationsOf reads the transformations of an input field (facet
// 1-2-0): each "TYPE" or "TYPE/SUBTYPE" (a non-string or empty type: left
// out, with its description), joined by ", "; their descriptions by "; ".
func transformationsOf(raw json.RawMessage) (typ, desc string) {
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return "", ""
	}
	s := func(m map[string]json.RawMessage, k string) string {
		var v string
		if json.Unmarshal(m[k], &v) != nil {
			return ""
		}
		return v
	}
	var types, descs []string
	for _, t := range list {
		ty := s(t, "type")
		if ty == "" {
			continue
		}
		if sub := s(t, "subtype"); sub != "" {
			ty += "/" + sub
		}
		types = append(types, ty)
		if d := s(t, "description"); d != "" {
			descs = append(descs, d)
		}
	}
	return strings.Join(types, ", "), strings.Join(descs, "; ")
}

// key is the pair without its transformation (the COLUMN_DERIVES edge).
func (f fieldPair) key() fieldPair { f.typ, f.desc = "", ""; return f }

// props are the COLUMN_DERIVES properties of f named at eventTime t.
func (f fieldPair) props(t int64) lineage.Props {
	var ps []lineage.Prop
	if f.typ != "" {
		ps = append(ps, lineage.StrLWW(lineage.PropTransformationType, f.typ, t))
	}
	if f.desc != "" {
		ps = append(ps, lineage.StrLWW(lineage.PropTransformationDescription, f.desc, t))
	}
	if len(ps) == 0 {
		return ""
	}
	return lineage.MakeProps(ps...)
}
