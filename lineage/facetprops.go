package lineage

import (
	"encoding/json"
	"strings"
)

// Facet property keys of Dataset and Job vertices (strings; JSON text for
// the structured ones). Each is last writer wins by eventTime ([StrLWW]).
const (
	PropSchema             = "schema"             // Dataset: JSON array of {name, type, description} (schema facet)
	PropDataSource         = "dataSource"         // Dataset: the dataSource facet's uri, else its name
	PropDescription        = "description"        // Dataset, Job: the documentation facet's description
	PropOwners             = "owners"             // Dataset, Job: JSON array of {name, type} (ownership facet)
	PropVersion            = "version"            // Dataset: the version facet's datasetVersion
	PropSQL                = "sql"                // Job: the sql facet's query
	PropJobType            = "jobType"            // Job: the jobType facet's jobType
	PropProcessingType     = "processingType"     // Job: the jobType facet's processingType
	PropIntegration        = "integration"        // Job: the jobType facet's integration
	PropSourceCodeLocation = "sourceCodeLocation" // Job: the sourceCodeLocation facet's url
)

// MaxFacetPropBytes caps one facet property value: a longer one (a huge
// SQL text or schema) is left out of the vertex and counted
// ([FacetProps.Capped]).
const MaxFacetPropBytes = 16 << 10

// facetRaws are the raw JSON objects of the facets read as vertex
// properties (nil when absent or not an object), spans into the record.
type facetRaws struct {
	schema, dataSource, documentation, ownership, version, sql, jobType, sourceCodeLocation []byte
}

// any reports whether a facet is present.
func (f *facetRaws) any() bool {
	return f.schema != nil || f.dataSource != nil || f.documentation != nil || f.ownership != nil ||
		f.version != nil || f.sql != nil || f.jobType != nil || f.sourceCodeLocation != nil
}

// set records the raw object of facet name, if it is one of facetRaws'.
func (f *facetRaws) set(name string, raw []byte) bool {
	switch name {
	case "schema":
		f.schema = raw
	case "dataSource":
		f.dataSource = raw
	case "documentation":
		f.documentation = raw
	case "ownership":
		f.ownership = raw
	case "version":
		f.version = raw
	case "sql":
		f.sql = raw
	case "jobType":
		f.jobType = raw
	case "sourceCodeLocation":
		f.sourceCodeLocation = raw
	default:
		return false
	}
	return true
}

// FacetProps are the vertex properties the facets of one dataset or job
// of an event give, stamped with its eventTime.
type FacetProps struct {
	Label     string // LabelDataset or LabelJob
	Namespace string
	Name      string
	Props     []Prop
	Capped    int // values over MaxFacetPropBytes left out
}

// facet kinds (index of facetMemo's maps).
const (
	fSchema = iota
	fDataSource
	fDocumentation
	fOwnership
	fVersion
	fSQL
	fJobType
	fSourceCodeLocation
	fKinds
)

// facetVal is what one facet object gives: up to three values (ok: given).
type facetVal struct {
	v  [3]string
	ok [3]bool
}

// facetMemo remembers the interpretation of facet objects by their raw
// bytes, per kind: producers repeat the same schema, dataSource and
// jobType facets on every event, and reading them with encoding/json costs
// far more than the rest of the decoding. Bounded (emptied past
// facetMemoMax entries per kind). A nil *facetMemo interprets every time.
type facetMemo struct{ m [fKinds]map[string]facetVal }

const facetMemoMax = 4096

// facetMax caps the raw size of a facet the memo keeps.
const facetMemoMaxRaw = 4 << 10

func (c *facetMemo) get(kind int, raw []byte) facetVal {
	if raw == nil {
		return facetVal{}
	}
	if c == nil || len(raw) > facetMemoMaxRaw {
		return interpretFacet(kind, raw)
	}
	if v, ok := c.m[kind][string(raw)]; ok {
		return v
	}
	v := interpretFacet(kind, raw)
	if c.m[kind] == nil || len(c.m[kind]) >= facetMemoMax {
		c.m[kind] = make(map[string]facetVal, 64)
	}
	c.m[kind][string(raw)] = v
	return v
}

// interpretFacet reads the facet object raw of the given kind: in one
// pass when it can (facetfast.go), else with encoding/json.
func interpretFacet(kind int, raw []byte) facetVal {
	if f, ok := fastInterpretFacet(kind, raw); ok {
		return f
	}
	return slowInterpretFacet(kind, raw)
}

// slowInterpretFacet reads the facet object raw of the given kind with
// encoding/json.
func slowInterpretFacet(kind int, raw []byte) facetVal {
	var f facetVal
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return f
	}
	member := func(i int, k string) {
		var s string
		if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil && string(v) != "null" {
			f.v[i], f.ok[i] = s, true
		}
	}
	switch kind {
	case fSchema:
		f.v[0], f.ok[0] = listProp(m["fields"], "name", "type", "description")
	case fDataSource:
		member(0, "uri")
		member(1, "name")
	case fDocumentation:
		member(0, "description")
	case fOwnership:
		f.v[0], f.ok[0] = listProp(m["owners"], "name", "type")
	case fVersion:
		member(0, "datasetVersion")
	case fSQL:
		member(0, "query")
	case fJobType:
		member(0, "jobType")
		member(1, "processingType")
		member(2, "integration")
	case fSourceCodeLocation:
		member(0, "url")
	}
	return f
}

// facetPropsOf appends to dst the properties the facets f of the dataset
// or job (label, ns, name) give at eventTime t, if any. Facets are read
// leniently: one of another shape, or a member that is not a string, gives
// nothing. Both decoders share it (memo may be nil).
func facetPropsOf(dst []FacetProps, memo *facetMemo, label, ns, name string, f *facetRaws, t int64) []FacetProps {
	if !f.any() {
		return dst
	}
	fp := FacetProps{Label: label, Namespace: ns, Name: name}
	add := func(k, v string, ok bool) {
		switch {
		case !ok:
		case len(v) > MaxFacetPropBytes:
			fp.Capped++
		default:
			fp.Props = append(fp.Props, StrLWW(k, v, t))
		}
	}
	if label == LabelDataset {
		sc := memo.get(fSchema, f.schema)
		add(PropSchema, sc.v[0], sc.ok[0])
		ds := memo.get(fDataSource, f.dataSource)
		if ds.ok[0] {
			add(PropDataSource, ds.v[0], true)
		} else {
			add(PropDataSource, ds.v[1], ds.ok[1])
		}
		ver := memo.get(fVersion, f.version)
		add(PropVersion, ver.v[0], ver.ok[0])
	} else {
		sql := memo.get(fSQL, f.sql)
		add(PropSQL, sql.v[0], sql.ok[0])
		jt := memo.get(fJobType, f.jobType)
		add(PropJobType, jt.v[0], jt.ok[0])
		add(PropProcessingType, jt.v[1], jt.ok[1])
		add(PropIntegration, jt.v[2], jt.ok[2])
		sc := memo.get(fSourceCodeLocation, f.sourceCodeLocation)
		add(PropSourceCodeLocation, sc.v[0], sc.ok[0])
	}
	doc := memo.get(fDocumentation, f.documentation)
	add(PropDescription, doc.v[0], doc.ok[0])
	own := memo.get(fOwnership, f.ownership)
	add(PropOwners, own.v[0], own.ok[0])
	if len(fp.Props) == 0 && fp.Capped == 0 {
		return dst
	}
	return append(dst, fp)
}

// listProp reads the array raw as a JSON array of objects with the string
// members keys (a member absent or not a string is left out; an element
// without the first key is skipped).
func listProp(raw json.RawMessage, keys ...string) (string, bool) {
	var elems []map[string]json.RawMessage
	if raw == nil || json.Unmarshal(raw, &elems) != nil || elems == nil {
		return "", false
	}
	out := make([]json.RawMessage, 0, len(elems))
	for _, e := range elems {
		b := []byte{'{'}
		for i, k := range keys {
			var s string
			if json.Unmarshal(e[k], &s) != nil || e[k] == nil || string(e[k]) == "null" {
				if i == 0 {
					b = nil
					break
				}
				continue
			}
			if len(b) > 1 {
				b = append(b, ',')
			}
			kb, _ := json.Marshal(k)
			vb, _ := json.Marshal(s)
			b = append(append(append(b, kb...), ':'), vb...)
		}
		if b != nil {
			out = append(out, append(b, '}'))
		}
	}
	j, err := json.Marshal(out)
	if err != nil {
		return "", false
	}
	return string(j), true
}

// ProcessingStreaming is the jobType facet's processingType of a streaming
// job (Flink, Spark Structured Streaming, Debezium).
const ProcessingStreaming = "STREAMING"

// StreamingJob reports whether the event's own job facets say
// jobType.processingType STREAMING (compared ignoring case): such a run
// commits its lineage before it ends (DESIGN.md, Lineage semantics 4). The
// compact format carries no facets: its runs are never streaming.
func (e *Event) StreamingJob() bool {
	for i := range e.Facets {
		f := &e.Facets[i]
		if f.Label != LabelJob || f.Namespace != e.Job.Namespace || f.Name != e.Job.Name {
			continue
		}
		for _, p := range f.Props {
			if p.Key == PropProcessingType && strings.EqualFold(p.Str, ProcessingStreaming) {
				return true
			}
		}
	}
	return false
}
