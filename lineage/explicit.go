package lineage

import (
	"encoding/json"
	"sort"
	"strings"
)

// DatasetPair is one input -> output dataset pair an explicit-lineage
// facet names: In feeds Out.
type DatasetPair struct {
	In, Out Dataset
}

// Explicit lineage (the OpenLineage LineageJobFacet, job.facets.lineage,
// and LineageDatasetFacet, outputs[].facets.lineage, spec facets 1-0-0)
// says which sources feed which target. Every source of type DATASET
// named at entity level (inputs) or at field level (fields.*.inputs)
// gives the pair source -> target; a target or source of another type
// (JOB) gives none. A facet counts (Event.Explicit) when it is an object
// with the array that carries its entries (LineageJobFacet: "lineage";
// LineageDatasetFacet: "inputs", or the object "fields"), even if it
// names no pair: an empty inputs array says the target has no upstream.
// Keys match exactly; a member of another shape is ignored.

type jsonObj = map[string]json.RawMessage

func objOf(raw json.RawMessage) jsonObj {
	var o jsonObj
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return o
}

func arrOf(raw json.RawMessage) ([]json.RawMessage, bool) {
	var a []json.RawMessage
	if raw == nil || json.Unmarshal(raw, &a) != nil || a == nil {
		return nil, false
	}
	return a, true
}

// lineageDataset reads an entity {namespace, name, type}: a dataset when
// its type is DATASET (any case) and its name is not empty.
func lineageDataset(o jsonObj) (Dataset, bool) {
	var ns, name, typ string
	if o == nil || json.Unmarshal(o["namespace"], &ns) != nil || json.Unmarshal(o["name"], &name) != nil ||
		json.Unmarshal(o["type"], &typ) != nil || !strings.EqualFold(typ, "DATASET") || name == "" {
		return Dataset{}, false
	}
	return Dataset{Namespace: ns, Name: name}, true
}

// appendSources appends the pairs of the entity-level sources (o.inputs)
// and field-level sources (o.fields.*.inputs) of target out.
func appendSources(dst []DatasetPair, out Dataset, o jsonObj) []DatasetPair {
	add := func(raw json.RawMessage) {
		srcs, _ := arrOf(raw)
		for _, s := range srcs {
			if in, ok := lineageDataset(objOf(s)); ok {
				dst = appendPair(dst, DatasetPair{In: in, Out: out})
			}
		}
	}
	add(o["inputs"])
	fields := objOf(o["fields"])
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		add(objOf(fields[k])["inputs"])
	}
	return dst
}

func appendPair(dst []DatasetPair, p DatasetPair) []DatasetPair {
	for _, q := range dst {
		if q == p {
			return dst
		}
	}
	return append(dst, p)
}

// JobLineagePairs appends the pairs of the LineageJobFacet object raw to
// dst and reports whether it counts as explicit lineage.
func JobLineagePairs(dst []DatasetPair, raw []byte) ([]DatasetPair, bool) {
	entries, ok := arrOf(objOf(raw)["lineage"])
	if !ok {
		return dst, false
	}
	for _, e := range entries {
		o := objOf(e)
		if out, ok := lineageDataset(o); ok {
			dst = appendSources(dst, out, o)
		}
	}
	return dst, true
}

// DatasetLineagePairs appends the pairs of the LineageDatasetFacet object
// raw of output out to dst and reports whether it counts as explicit
// lineage.
func DatasetLineagePairs(dst []DatasetPair, out Dataset, raw []byte) ([]DatasetPair, bool) {
	o := objOf(raw)
	_, hasInputs := arrOf(o["inputs"])
	if !hasInputs && objOf(o["fields"]) == nil {
		return dst, false
	}
	return appendSources(dst, out, o), true
}

// JobDependencies reads a jobDependencies run facet object raw
// (OpenLineage JobDependenciesRunFacet, 1.40): the jobs of its upstream
// and downstream entries ({"job": {"namespace", "name"}, ...}), each
// with a non-empty name, first occurrence only. Keys match exactly; an
// entry of another shape is ignored.
func JobDependencies(raw []byte) (upstream, downstream []Job) {
	o := objOf(raw)
	read := func(key string) []Job {
		var out []Job
		entries, _ := arrOf(o[key])
		for _, e := range entries {
			j := objOf(objOf(e)["job"])
			var ns, name string
			if j == nil || json.Unmarshal(j["namespace"], &ns) != nil || json.Unmarshal(j["name"], &name) != nil || name == "" {
				continue
			}
			job := Job{Namespace: ns, Name: name}
			dup := false
			for _, x := range out {
				dup = dup || x == job
			}
			if !dup {
				out = append(out, job)
			}
		}
		return out
	}
	if o == nil {
		return nil, nil
	}
	return read("upstream"), read("downstream")
}
