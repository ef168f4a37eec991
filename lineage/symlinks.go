package lineage

import "encoding/json"

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
// name, or naming d itself, is skipped; a non-string type is absent).
// Both decoders share it: they agree on the raw spans, this gives them the
// same meaning.
func aliasesOf(dst []Alias, d Dataset, raw []byte) []Alias {
	if out, ok := fastAliases(dst, d, raw); ok {
		return out
	}
	return slowAliasesOf(dst, d, raw)
}

// slowAliasesOf is aliasesOf with encoding/json.
func slowAliasesOf(dst []Alias, d Dataset, raw []byte) []Alias {
	var f map[string]json.RawMessage
	if json.Unmarshal(raw, &f) != nil {
		return dst
	}
	var ids []map[string]json.RawMessage
	if json.Unmarshal(f["identifiers"], &ids) != nil {
		return dst
	}
	str := func(m map[string]json.RawMessage, k string) string {
		var s string
		if raw, ok := m[k]; ok && json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	for _, id := range ids {
		a := Dataset{Namespace: str(id, "namespace"), Name: str(id, "name")}
		if a.Namespace == "" || a.Name == "" || a == d {
			continue
		}
		dst = append(dst, Alias{Of: d, Alias: a, Type: str(id, "type")})
	}
	return dst
}
