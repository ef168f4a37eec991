package lineage

import (
	"bytes"
	"sort"
	"unicode/utf8"
)

// fastInterpretFacet is interpretFacet without encoding/json for the
// usual facet: valid JSON whose strings have no escapes, control
// characters, invalid UTF-8 or characters encoding/json escapes on output
// (<, >, &, U+2028, U+2029). It reads the object in one pass and gives
// exactly what interpretFacet gives; ok is false for any other input,
// which then goes to interpretFacet (TestFastInterpretFacet compares both).
// Workers met facets too varied for the memo: interpretFacet was about
// half of a worker's CPU (bench/RESULTS.md, issue 16).
func fastInterpretFacet(kind int, raw []byte) (f facetVal, ok bool) {
	s := facetScanner{b: raw}
	var listKey string
	var listKeys *[3]string
	var members [3]string
	n := 0
	switch kind {
	case fSchema:
		listKey, listKeys = "fields", &schemaKeys
	case fOwnership:
		listKey, listKeys = "owners", &ownerKeys
	case fDataSource:
		members, n = [3]string{"uri", "name"}, 2
	case fDocumentation:
		members, n = [3]string{"description"}, 1
	case fVersion:
		members, n = [3]string{"datasetVersion"}, 1
	case fSQL:
		members, n = [3]string{"query"}, 1
	case fJobType:
		members, n = [3]string{"jobType", "processingType", "integration"}, 3
	case fSourceCodeLocation:
		members, n = [3]string{"url"}, 1
	default:
		return f, false
	}
	var list []byte // the raw value of listKey (last one wins, as in a map)
	if !s.ws() || !s.consume('{') {
		return f, false
	}
	if !s.consume('}') {
		for {
			key, ok := s.str()
			if !ok || !s.consume(':') {
				return f, false
			}
			start := s.skipWS()
			str, isStr, ok := s.value(0)
			if !ok {
				return f, false
			}
			if listKey != "" && string(key) == listKey {
				list = s.b[start:s.i]
			}
			for i := 0; i < n; i++ {
				if string(key) == members[i] {
					// A member that is not a string (null included) is absent.
					f.v[i], f.ok[i] = "", false
					if isStr {
						f.v[i], f.ok[i] = string(str), true
					}
				}
			}
			if s.consume(',') {
				continue
			}
			if s.consume('}') {
				break
			}
			return f, false
		}
	}
	if s.skipWS() != len(s.b) {
		return f, false
	}
	if listKey != "" {
		v, present, ok := fastListProp(list, listKeys)
		if !ok {
			return f, false
		}
		f.v[0], f.ok[0] = v, present
	}
	return f, true
}

// The members listProp reads ("" : none).
var (
	schemaKeys = [3]string{"name", "type", "description"}
	ownerKeys  = [3]string{"name", "type"}
)

// fastListProp is listProp on a validated raw value (ok false: not on the
// fast path).
func fastListProp(raw []byte, keys *[3]string) (string, bool, bool) {
	s := facetScanner{b: raw}
	if raw == nil || !s.consume('[') {
		return "", false, true // absent, null or not an array: nothing
	}
	out := []byte{'['}
	var vals [3][]byte
	var have [3]bool
	if !s.consume(']') {
		for {
			s.skipWS()
			switch {
			case s.consume('{'):
				have = [3]bool{}
				if !s.consume('}') {
					for {
						key, ok := s.str()
						if !ok || !s.consume(':') {
							return "", false, false
						}
						str, isStr, ok := s.value(0)
						if !ok {
							return "", false, false
						}
						for i, k := range keys {
							if k != "" && string(key) == k {
								vals[i], have[i] = str, isStr
							}
						}
						if s.consume(',') {
							continue
						}
						if s.consume('}') {
							break
						}
						return "", false, false
					}
				}
				if have[0] {
					if len(out) > 1 {
						out = append(out, ',')
					}
					out = append(out, '{')
					first := true
					for i, k := range keys {
						if k == "" || !have[i] {
							continue
						}
						if !first {
							out = append(out, ',')
						}
						first = false
						out = append(out, '"')
						out = append(out, k...)
						out = append(out, '"', ':', '"')
						out = append(out, vals[i]...)
						out = append(out, '"')
					}
					out = append(out, '}')
				}
			case s.literal("null"): // an element that is null is skipped
			default: // any other element: encoding/json fails the whole list
				if _, _, ok := s.value(0); !ok {
					return "", false, false
				}
				return "", false, true
			}
			if s.consume(',') {
				continue
			}
			if s.consume(']') {
				break
			}
			return "", false, false
		}
	}
	return string(append(out, ']')), true, true
}

// facetScanner validates and reads JSON for fastInterpretFacet.
type facetScanner struct {
	b []byte
	i int
}

func (s *facetScanner) skipWS() int {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return s.i
		}
	}
	return s.i
}

func (s *facetScanner) ws() bool { s.skipWS(); return s.i < len(s.b) }

func (s *facetScanner) consume(c byte) bool {
	s.skipWS()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *facetScanner) literal(lit string) bool {
	s.skipWS()
	if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		s.i += len(lit)
		return true
	}
	return false
}

// str reads a string that needs no unescaping and that encoding/json
// writes back unchanged (ok false otherwise).
func (s *facetScanner) str() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	start := s.i
	j := bytes.IndexByte(s.b[start:], '"')
	if j < 0 {
		return nil, false
	}
	v := s.b[start : start+j]
	ascii := true
	for _, c := range v {
		if c < 0x20 || c == '\\' || c == '<' || c == '>' || c == '&' {
			return nil, false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && (!utf8.Valid(v) || bytes.Contains(v, []byte("\u2028")) || bytes.Contains(v, []byte("\u2029"))) {
		return nil, false
	}
	s.i = start + j + 1
	return v, true
}

// value validates one JSON value and returns its contents if it is a
// string.
func (s *facetScanner) value(depth int) (str []byte, isStr, ok bool) {
	if depth > 64 {
		return nil, false, false
	}
	s.skipWS()
	if s.i >= len(s.b) {
		return nil, false, false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		v, ok := s.str()
		return v, ok, ok
	case c == '{':
		s.i++
		if s.consume('}') {
			return nil, false, true
		}
		for {
			if _, ok := s.str(); !ok || !s.consume(':') {
				return nil, false, false
			}
			if _, _, ok := s.value(depth + 1); !ok {
				return nil, false, false
			}
			if s.consume(',') {
				continue
			}
			return nil, false, s.consume('}')
		}
	case c == '[':
		s.i++
		if s.consume(']') {
			return nil, false, true
		}
		for {
			if _, _, ok := s.value(depth + 1); !ok {
				return nil, false, false
			}
			if s.consume(',') {
				continue
			}
			return nil, false, s.consume(']')
		}
	case c == 't':
		return nil, false, s.literal("true")
	case c == 'f':
		return nil, false, s.literal("false")
	case c == 'n':
		return nil, false, s.literal("null")
	default:
		return nil, false, s.number()
	}
}

// number reads a number of JSON's grammar.
func (s *facetScanner) number() bool {
	b, i := s.b, s.i
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	s.i = i
	return true
}

// fastEdges is ColumnLineage.Edges without encoding/json, for facets
// facetScanner reads (see fastInterpretFacet); ok false: Edges decides
// with encoding/json (TestFastColumnEdges compares both).
func (c ColumnLineage) fastEdges(dst []FieldEdge) ([]FieldEdge, bool) {
	s := facetScanner{b: c.Raw}
	var fields []byte
	seen := false
	if !s.ws() || !s.consume('{') {
		return dst, false
	}
	if !s.consume('}') {
		for {
			key, ok := s.str()
			if !ok || !s.consume(':') {
				return dst, false
			}
			start := s.skipWS()
			if _, _, ok := s.value(0); !ok {
				return dst, false
			}
			if bytes.EqualFold(key, []byte("fields")) {
				// encoding/json matches struct fields case-insensitively and
				// merges repeated ones: not on the fast path.
				if seen || string(key) != "fields" {
					return dst, false
				}
				seen, fields = true, s.b[start:s.i]
			}
			if s.consume(',') {
				continue
			}
			if s.consume('}') {
				break
			}
			return dst, false
		}
	}
	if s.skipWS() != len(s.b) {
		return dst, false
	}
	f := facetScanner{b: fields}
	if fields == nil || !f.consume('{') {
		return dst, true // absent, null or not an object: no pairs
	}
	type outField struct {
		name string
		val  []byte
	}
	var outs []outField
	if !f.consume('}') {
		for {
			key, _ := f.str() // validated above
			f.consume(':')
			start := f.skipWS()
			f.value(0)
			for _, o := range outs {
				if o.name == string(key) {
					return dst, false // repeated key: the map keeps the last
				}
			}
			if len(key) > 0 {
				outs = append(outs, outField{string(key), f.b[start:f.i]})
			}
			if !f.consume(',') {
				break
			}
		}
	}
	sort.Slice(outs, func(i, j int) bool { return outs[i].name < outs[j].name })
	for _, o := range outs {
		v := facetScanner{b: o.val}
		if !v.consume('{') {
			continue // null or not an object: nothing
		}
		var ins, tType, tDesc []byte
		if !v.consume('}') {
			for {
				key, _ := v.str()
				v.consume(':')
				start := v.skipWS()
				v.value(0)
				switch string(key) {
				case "inputFields":
					ins = v.b[start:v.i]
				case "transformationType":
					tType = v.b[start:v.i]
				case "transformationDescription":
					tDesc = v.b[start:v.i]
				}
				if !v.consume(',') {
					break
				}
			}
		}
		n := len(dst)
		dst = appendInputFields(dst, ins, c.Output, o.name)
		if tType != nil || tDesc != nil {
			// The older facets' transformation of the output field, for
			// the pairs whose input field gives none.
			typ, desc := jsonStr(tType), jsonStr(tDesc)
			for i := n; i < len(dst); i++ {
				if dst[i].TransformationType == "" && dst[i].TransformationDescription == "" {
					dst[i].TransformationType, dst[i].TransformationDescription = typ, desc
				}
			}
		}
	}
	return dst, true
}

// appendInputFields appends the pairs of one output field's validated
// inputFields array (nothing if it is not an array of objects and nulls).
func appendInputFields(dst []FieldEdge, raw []byte, out Dataset, of string) []FieldEdge {
	a := facetScanner{b: raw}
	if !a.consume('[') || a.consume(']') {
		return dst
	}
	n := len(dst)
	for {
		a.skipWS()
		switch {
		case a.consume('{'):
			var vals [3][]byte
			var trans []byte // the input field's transformations (facet 1-2-0)
			if !a.consume('}') {
				for {
					key, _ := a.str()
					a.consume(':')
					start := a.skipWS()
					str, isStr, _ := a.value(0)
					if !isStr {
						str = nil
					}
					switch string(key) {
					case "namespace":
						vals[0] = str
					case "name":
						vals[1] = str
					case "field":
						vals[2] = str
					case "transformations":
						trans = a.b[start:a.i]
					}
					if !a.consume(',') {
						a.consume('}')
						break
					}
				}
			}
			d := Dataset{Namespace: string(vals[0]), Name: string(vals[1])}
			f := string(vals[2])
			if d.Namespace != "" && d.Name != "" && f != "" && (d != out || f != of) {
				fe := FieldEdge{In: d, InField: f, Out: out, OutField: of}
				if trans != nil {
					fe.TransformationType, fe.TransformationDescription = transformations(trans)
				}
				dst = append(dst, fe)
			}
		case a.literal("null"):
		default:
			return dst[:n] // an element of another type: encoding/json fails the array
		}
		if !a.consume(',') {
			return dst
		}
	}
}

// fastAliases is aliasesOf without encoding/json, for facets facetScanner
// reads; ok false: aliasesOf decides with encoding/json
// (TestFastAliases compares both).
func fastAliases(dst []Alias, d Dataset, raw []byte) ([]Alias, bool) {
	s := facetScanner{b: raw}
	var ids []byte
	if !s.ws() || !s.consume('{') {
		return dst, false
	}
	if !s.consume('}') {
		for {
			key, ok := s.str()
			if !ok || !s.consume(':') {
				return dst, false
			}
			start := s.skipWS()
			if _, _, ok := s.value(0); !ok {
				return dst, false
			}
			if string(key) == "identifiers" {
				ids = s.b[start:s.i] // a map: the last one wins
			}
			if s.consume(',') {
				continue
			}
			if s.consume('}') {
				break
			}
			return dst, false
		}
	}
	if s.skipWS() != len(s.b) {
		return dst, false
	}
	a := facetScanner{b: ids}
	if ids == nil || !a.consume('[') || a.consume(']') {
		return dst, true // absent, null, not an array or empty: no aliases
	}
	n := len(dst)
	for {
		a.skipWS()
		switch {
		case a.consume('{'):
			var vals [3][]byte // namespace, name, type
			if !a.consume('}') {
				for {
					key, _ := a.str() // validated above
					a.consume(':')
					str, isStr, _ := a.value(0)
					if !isStr {
						str = nil // not a string: absent
					}
					switch string(key) {
					case "namespace":
						vals[0] = str
					case "name":
						vals[1] = str
					case "type":
						vals[2] = str
					}
					if !a.consume(',') {
						a.consume('}')
						break
					}
				}
			}
			al := Dataset{Namespace: string(vals[0]), Name: string(vals[1])}
			if al.Namespace != "" && al.Name != "" && al != d {
				dst = append(dst, Alias{Of: d, Alias: al, Type: string(vals[2])})
			}
		case a.literal("null"):
		default:
			return dst[:n], true // an element of another type: encoding/json fails the array
		}
		if !a.consume(',') {
			return dst, true
		}
	}
}
