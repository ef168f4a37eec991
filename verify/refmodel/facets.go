package refmodel

import (
	"encoding/json"
	"strings"

	"github.com/lineageflow/lineageflow/lineage"
)

// facetProps reads the facets of the dataset or job object raw that become
// vertex properties (DESIGN.md "Graph model"), each last writer wins at
// eventTime t; values over lineage.MaxFacetPropBytes are left out.
// Leniently: a facet or member of another shape gives nothing.
func facetProps(raw json.RawMessage, job bool, t int64) []lineage.Prop {
	var obj, facets map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || json.Unmarshal(obj["facets"], &facets) != nil {
		return nil
	}
	facet := func(name string) map[string]json.RawMessage {
		var f map[string]json.RawMessage
		if json.Unmarshal(facets[name], &f) != nil {
			return nil
		}
		return f
	}
	str := func(f map[string]json.RawMessage, k string) (string, bool) {
		var s string
		v, ok := f[k]
		if !ok || isNull(v) || json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return s, true
	}
	var ps []lineage.Prop
	add := func(k, v string, ok bool) {
		if ok && len(v) <= lineage.MaxFacetPropBytes {
			ps = append(ps, lineage.StrLWW(k, v, t))
		}
	}
	if !job {
		v, ok := list(facet("schema"), "fields", "name", "type", "description")
		add(lineage.PropSchema, v, ok)
		ds := facet("dataSource")
		if v, ok := str(ds, "uri"); ok {
			add(lineage.PropDataSource, v, true)
		} else {
			v, ok := str(ds, "name")
			add(lineage.PropDataSource, v, ok)
		}
		v, ok = str(facet("version"), "datasetVersion")
		add(lineage.PropVersion, v, ok)
	} else {
		v, ok := str(facet("sql"), "query")
		add(lineage.PropSQL, v, ok)
		jt := facet("jobType")
		v, ok = str(jt, "jobType")
		add(lineage.PropJobType, v, ok)
		v, ok = str(jt, "processingType")
		add(lineage.PropProcessingType, v, ok)
		v, ok = str(jt, "integration")
		add(lineage.PropIntegration, v, ok)
		v, ok = str(facet("sourceCodeLocation"), "url")
		add(lineage.PropSourceCodeLocation, v, ok)
	}
	v, ok := str(facet("documentation"), "description")
	add(lineage.PropDescription, v, ok)
	v, ok = list(facet("ownership"), "owners", "name", "type")
	add(lineage.PropOwners, v, ok)
	v, ok = list(facet("tags"), "tags", "key", "value", "source")
	add(lineage.PropTags, v, ok)
	return ps
}

// list renders the array f[key] of objects as JSON text keeping the string
// members keys in that order (elements without the first are dropped).
func list(f map[string]json.RawMessage, key string, keys ...string) (string, bool) {
	var elems []map[string]json.RawMessage
	if f == nil || json.Unmarshal(f[key], &elems) != nil || elems == nil {
		return "", false
	}
	var b strings.Builder
	b.WriteByte('[')
	n := 0
	for _, e := range elems {
		var parts []string
		for i, k := range keys {
			var s string
			v, ok := e[k]
			if !ok || isNull(v) || json.Unmarshal(v, &s) != nil {
				if i == 0 {
					parts = nil
					break
				}
				continue
			}
			kj, _ := json.Marshal(k)
			sj, _ := json.Marshal(s)
			parts = append(parts, string(kj)+":"+string(sj))
		}
		if parts == nil {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString("{" + strings.Join(parts, ",") + "}")
	}
	b.WriteByte(']')
	return b.String(), true
}

// addFacets merges the facet properties of the datasets and job objects
// of a valid event into their vertices.
func (m *Model) addFacets(ev *event) {
	for _, f := range ev.facets {
		var v lineage.Vertex
		if f.job {
			v = lineage.JobVertex(lineage.Job(f.named))
		} else {
			v = lineage.DatasetVertex(f.named)
		}
		v.Props = lineage.MakeProps(f.props...)
		lineage.MergeVertexInto(m.vertices, v)
	}
}

// facetOf is the facet properties of one dataset or job of an event.
type facetOf struct {
	named lineage.Dataset
	job   bool
	props []lineage.Prop
}

func appendFacets(dst []facetOf, d lineage.Dataset, job bool, raw json.RawMessage, t int64) []facetOf {
	if ps := facetProps(raw, job, t); len(ps) > 0 {
		dst = append(dst, facetOf{named: d, job: job, props: ps})
	}
	return dst
}

// streamingJob reports whether the job object raw has a jobType facet
// whose processingType is the string STREAMING, in any case.
func streamingJob(raw json.RawMessage) bool {
	var job, facets, jt map[string]json.RawMessage // keys match exactly (a struct would not)
	if json.Unmarshal(raw, &job) != nil || json.Unmarshal(job["facets"], &facets) != nil ||
		json.Unmarshal(facets["jobType"], &jt) != nil {
		return false
	}
	var pt string
	return jt["processingType"] != nil && json.Unmarshal(jt["processingType"], &pt) == nil && strings.EqualFold(pt, "STREAMING")
}
