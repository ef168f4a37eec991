package lineage

import "testing"

// TestColumnLineageTransformations: the 1-2-0 transformations of an input
// field (type/subtype joined, descriptions joined) win over the output
// field's older transformationType/transformationDescription, which are
// read when there are none; a pair without either has no properties.
func TestColumnLineageTransformations(t *testing.T) {
	t.Parallel()
	raw := `{"fields":{
	  "total":{"inputFields":[
	    {"namespace":"s3","name":"orders","field":"amount","transformations":[
	      {"type":"DIRECT","subtype":"AGGREGATION","description":"sum(amount)","masking":false},
	      {"type":"INDIRECT","subtype":"FILTER"},{"subtype":"no type: left out","description":"x"}]},
	    {"namespace":"s3","name":"orders","field":"day","transformations":[]}],
	    "transformationType":"IDENTITY","transformationDescription":"old"},
	  "id":{"inputFields":[{"namespace":"s3","name":"orders","field":"id"}]}}}`
	es := ColumnLineage{Output: Dataset{Namespace: "s3", Name: "daily"}, Raw: []byte(raw)}.Edges(nil)
	got := map[string][2]string{}
	for _, e := range es {
		got[e.InField+">"+e.OutField] = [2]string{e.TransformationType, e.TransformationDescription}
	}
	want := map[string][2]string{
		"amount>total": {"DIRECT/AGGREGATION, INDIRECT/FILTER", "sum(amount)"},
		"day>total":    {"IDENTITY", "old"},
		"id>id":        {"", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("pairs %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
	for _, e := range es {
		p := e.Props(42)
		typ, hasT := p.Get(PropTransformationType)
		if (e.TransformationType != "") != hasT || hasT && (typ.Str != e.TransformationType || typ.Stamp != 42) {
			t.Errorf("%s>%s: props %s", e.InField, e.OutField, p)
		}
		if e.TransformationType == "" && e.TransformationDescription == "" && p != "" {
			t.Errorf("%s>%s: props %s, want none", e.InField, e.OutField, p)
		}
	}
}
