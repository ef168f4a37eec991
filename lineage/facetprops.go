package lineage

import (
	"strings"
	"unicode/utf8"
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
	PropTags               = "tags"               // Dataset, Job: JSON array of {key, value, source} (tags facet)
)

// MaxFacetPropBytes caps one facet property value: a longer one (a huge
// SQL text or schema) is left out of the vertex and counted
// ([FacetProps.Capped]).
const MaxFacetPropBytes = 16 << 10

// facetRaws are the raw JSON objects of the facets read as vertex
// properties (nil when absent or not an object), spans into the record.
type facetRaws struct {
	schema, dataSource, documentation, ownership, version, sql, jobType, sourceCodeLocation, tags []byte
}

// any reports whether a facet is present.
func (f *facetRaws) any() bool {
	return f.schema != nil || f.dataSource != nil || f.documentation != nil || f.ownership != nil ||
		f.version != nil || f.sql != nil || f.jobType != nil || f.sourceCodeLocation != nil || f.tags != nil
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
	case "tags":
		f.tags = raw
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
	fTags
	fKinds
)

// facetVal is what one facet object gives: up to three values (ok: given).
type facetVal struct {
	v  [3]string
	ok [3]bool
}

// facetMemo remembers the interpretation of facet objects by their raw
// bytes, per kind: producers repeat the same schema, dataSource and
// jobType facets on every event, and a lookup costs less than reading one
// again and allocates nothing. Bounded (emptied past
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

// interpretFacet reads the facet object raw of the given kind as
// encoding/json reads it into a map[string]json.RawMessage: invalid JSON
// or another type gives nothing, a repeated member the last one, a member
// that is not a string (null included) is absent.
func interpretFacet(kind int, raw []byte) facetVal {
	var names [3]string // the string members, in facetVal order
	var list string     // the member listProp reads
	var listKeys []string
	switch kind {
	case fSchema:
		list, listKeys = "fields", []string{"name", "type", "description"}
	case fOwnership:
		list, listKeys = "owners", []string{"name", "type"}
	case fTags:
		list, listKeys = "tags", []string{"key", "value", "source"}
	case fDataSource:
		names = [3]string{"uri", "name"}
	case fDocumentation:
		names[0] = "description"
	case fVersion:
		names[0] = "datasetVersion"
	case fSQL:
		names[0] = "query"
	case fJobType:
		names = [3]string{"jobType", "processingType", "integration"}
	case fSourceCodeLocation:
		names[0] = "url"
	}
	var f facetVal
	var listRaw []byte
	var s scanner
	s.reset(raw)
	if s.peek() != '{' {
		return f // null or not an object: nothing
	}
member:
	for ok := s.objBegin(); ok; ok = s.objNext() {
		k := s.key()
		if list != "" && string(k) == list {
			listRaw = s.span(2)
			continue
		}
		for i, name := range names {
			if name != "" && string(k) == name {
				f.v[i], f.ok[i] = s.optStr(2)
				continue member
			}
		}
		s.skip(2)
	}
	s.end()
	if s.err != nil {
		return facetVal{}
	}
	if list != "" {
		f.v[0], f.ok[0] = listProp(listRaw, listKeys)
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
	tags := memo.get(fTags, f.tags)
	add(PropTags, tags.v[0], tags.ok[0])
	if len(fp.Props) == 0 && fp.Capped == 0 {
		return dst
	}
	return append(dst, fp)
}

// listProp reads raw, a validated JSON value, as an array of objects with
// the string members keys (a member absent or not a string is left out;
// an element without the first key is skipped) and writes them back as
// encoding/json's Marshal would. Not an array (or absent: nil) gives
// nothing, and so does an element that is neither an object nor null, as
// it fails encoding/json's Unmarshal.
func listProp(raw []byte, keys []string) (string, bool) {
	var s scanner
	s.reset(raw)
	if s.peek() != '[' {
		return "", false
	}
	type member struct {
		raw []byte
		fl  uint8
		ok  bool
	}
	var vals [3]member // keys has at most 3
	out := make([]byte, 1, len(raw)+2)
	out[0] = '['
	for ok := s.arrBegin(); ok; ok = s.arrNext() {
		switch s.peek() {
		case 'n':
			s.null()
			continue
		case '{':
		default:
			return "", false
		}
		vals = [len(vals)]member{}
	key:
		for ok := s.objBegin(); ok; ok = s.objNext() {
			k := s.key()
			for i, name := range keys {
				if string(k) == name {
					v := &vals[i]
					v.raw, v.fl, v.ok = s.optRaw(4)
					continue key
				}
			}
			s.skip(4)
		}
		if !vals[0].ok {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '{')
		for i, name := range keys {
			if !vals[i].ok {
				continue
			}
			if i > 0 {
				out = append(out, ',')
			}
			out = append(append(append(out, '"'), name...), '"', ':')
			out = s.appendJSONString(out, vals[i].raw, vals[i].fl)
		}
		out = append(out, '}')
	}
	if s.err != nil {
		return "", false
	}
	return string(append(out, ']')), true
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

// appendJSONString appends the string whose raw contents and flags str
// gave as encoding/json's Marshal writes it: quoted, with '"', '\\',
// control characters, '<', '>', '&', U+2028 and U+2029 escaped.
func (s *scanner) appendJSONString(b, raw []byte, fl uint8) []byte {
	src := s.unescape(raw, fl)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, src[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, src[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, src[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, src[start:]...), '"')
}

const hexDigits = "0123456789abcdef"
