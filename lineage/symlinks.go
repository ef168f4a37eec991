package lineage

// LabelDatasetAlias is another name of a dataset (an identifier of its
// symlinks facet: a Glue or Hive table for an S3 or HDFS path).
const LabelDatasetAlias = "DatasetAlias"

// EdgeAliasOf is DatasetAlias -[ALIAS_OF]-> Dataset.
const EdgeAliasOf = "ALIAS_OF"

// PropAliasType is the DatasetAlias property holding the symlink's type
// (TABLE, LOCATION...).
const PropAliasType = "type"

// Alias is one identifier of a dataset's symlinks facet. The dataset keeps
// the name the event gives it (the canonical name: what the producer
// reads or writes, e.g. the S3 path); the identifier becomes a
// DatasetAlias vertex with an ALIAS_OF edge to it.
type Alias struct {
	Of    Dataset // the dataset, as the event names it
	Alias Dataset // the identifier's namespace and name
	Type  string  // the identifier's type, "" when absent
}

// AliasID is the vertex id of a dataset alias, encoded like [DatasetID]
// with "alias:".
func AliasID(a Dataset) string { return vertexID("alias:", a.Namespace, a.Name) }

// AliasVertex returns the DatasetAlias vertex of a.
func AliasVertex(a Alias) Vertex {
	v := Vertex{ID: AliasID(a.Alias), Label: LabelDatasetAlias, Namespace: a.Alias.Namespace, Name: a.Alias.Name}
	if a.Type != "" {
		v.Props = MakeProps(StrConst(PropAliasType, a.Type))
	}
	return v
}

// aliasesOf appends to dst the aliases of dataset d given by the raw
// symlinks facet: {"identifiers": [{"namespace", "name", "type"}]}. It is
// read leniently (an identifier without a non-empty string namespace and
// name, or naming d itself, is skipped; a non-string type is absent), as
// encoding/json reads it into a map[string]json.RawMessage and the last
// "identifiers" into a []map[string]json.RawMessage: invalid JSON, or an
// identifiers that is not an array of objects and nulls, gives none.
// refAliasesOf (decode_facets_ref_test.go) is its encoding/json reference.
func aliasesOf(dst []Alias, d Dataset, raw []byte) []Alias {
	n := len(dst)
	var s scanner
	s.reset(raw)
	if s.peek() != '{' {
		return dst // null or not an object
	}
	bad := false // the last "identifiers" is of another shape
	for ok := s.objBegin(); ok; ok = s.objNext() {
		if string(s.key()) != "identifiers" {
			s.skip(2)
			continue
		}
		dst, bad = dst[:n], false
		switch s.peek() {
		case '[':
		case 'n':
			s.null()
			continue
		default:
			bad = true
			s.skip(2)
			continue
		}
		for ok := s.arrBegin(); ok; ok = s.arrNext() {
			switch s.peek() {
			case '{':
			case 'n':
				s.null()
				continue
			default:
				bad = true
				s.skip(3)
				continue
			}
			var a Dataset
			var typ string
			for ok := s.objBegin(); ok; ok = s.objNext() {
				switch string(s.key()) {
				case "namespace":
					a.Namespace, _ = s.optStr(4)
				case "name":
					a.Name, _ = s.optStr(4)
				case "type":
					typ, _ = s.optStr(4)
				default:
					s.skip(4)
				}
			}
			if !bad && a.Namespace != "" && a.Name != "" && a != d {
				dst = append(dst, Alias{Of: d, Alias: a, Type: typ})
			}
		}
	}
	s.end()
	if s.err != nil || bad {
		return dst[:n]
	}
	return dst
}
