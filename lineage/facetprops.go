package lineage

import "encoding/json"

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

// facetPropsOf appends to dst the properties the facets f of the dataset
// or job (label, ns, name) give at eventTime t, if any. Facets are read
// leniently: one of another shape, or a member that is not a string, gives
// nothing. Both decoders share it.
func facetPropsOf(dst []FacetProps, label, ns, name string, f *facetRaws, t int64) []FacetProps {
	fp := FacetProps{Label: label, Namespace: ns, Name: name}
	add := func(k string) func(v string, ok bool) {
		return func(v string, ok bool) {
			switch {
			case !ok:
			case len(v) > MaxFacetPropBytes:
				fp.Capped++
			default:
				fp.Props = append(fp.Props, StrLWW(k, v, t))
			}
		}
	}
	member := func(raw []byte, k string) (string, bool) {
		var m map[string]json.RawMessage
		if raw == nil || json.Unmarshal(raw, &m) != nil {
			return "", false
		}
		var s string
		if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil && string(v) != "null" {
			return s, true
		}
		return "", false
	}
	if label == LabelDataset {
		add(PropSchema)(listProp(f.schema, "fields", "name", "type", "description"))
		if v, ok := member(f.dataSource, "uri"); ok {
			add(PropDataSource)(v, true)
		} else {
			add(PropDataSource)(member(f.dataSource, "name"))
		}
		add(PropVersion)(member(f.version, "datasetVersion"))
	} else {
		add(PropSQL)(member(f.sql, "query"))
		add(PropJobType)(member(f.jobType, "jobType"))
		add(PropProcessingType)(member(f.jobType, "processingType"))
		add(PropIntegration)(member(f.jobType, "integration"))
		add(PropSourceCodeLocation)(member(f.sourceCodeLocation, "url"))
	}
	add(PropDescription)(member(f.documentation, "description"))
	add(PropOwners)(listProp(f.ownership, "owners", "name", "type"))
	if len(fp.Props) == 0 && fp.Capped == 0 {
		return dst
	}
	return append(dst, fp)
}

// listProp reads the array at key of the facet raw as a JSON array of
// objects with the string members keys (a member absent or not a string
// is left out; an element without the first key is skipped).
func listProp(raw []byte, key string, keys ...string) (string, bool) {
	var m map[string]json.RawMessage
	var elems []map[string]json.RawMessage
	if raw == nil || json.Unmarshal(raw, &m) != nil || json.Unmarshal(m[key], &elems) != nil || elems == nil {
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
