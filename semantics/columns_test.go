package semantics

import (
	"testing"

	"github.com/lineageflow/lineageflow/lineage"
)

var (
	rawOrders = lineage.Dataset{Namespace: "s3://raw", Name: "orders"}
	martDaily = lineage.Dataset{Namespace: "s3://mart", Name: "daily"}
)

// TestEventColsMemo: the pairs eventCols gives from its memo of recent
// facets are the pairs the facet gives, and the same facet bytes under
// another output dataset are read again, not taken from the memo.
func TestEventColsMemo(t *testing.T) {
	raw := []byte(`{"fields":{"id":{"inputFields":[{"namespace":"s3://raw","name":"orders","field":"order_id"}]},"day":{"inputFields":[{"namespace":"s3://raw","name":"orders","field":"ts"}]}}}`)
	other := lineage.Dataset{Namespace: "s3://mart", Name: "weekly"}
	t.Parallel()
	x := NewRules(Config{Policy: PolicyStrict, Runs: RunsFailed}, NewIDs())
	var ev lineage.Event
	for i, c := range []lineage.ColumnLineage{
		{Output: martDaily, Raw: raw},
		{Output: martDaily, Raw: append([]byte(nil), raw...)}, // from the memo
		{Output: other, Raw: raw},                             // same bytes, another output
		{Output: martDaily, Raw: raw},
	} {
		ev.Columns = []lineage.ColumnLineage{c}
		got := x.eventCols(&ev)
		want := c.Edges(nil)
		if len(want) != 2 {
			t.Fatalf("%d: the facet gives %d pairs, want 2", i, len(want))
		}
		if len(got) != len(want) {
			t.Fatalf("%d: %d pairs, want %d", i, len(got), len(want))
		}
		for j := range want {
			if got[j] != want[j] {
				t.Errorf("%d: pair %d = %+v, want %+v", i, j, got[j], want[j])
			}
		}
	}
	if len(x.colMemo.m) != 1 {
		t.Errorf("memo holds %d facets, want 1 (the last output read)", len(x.colMemo.m))
	}
}

// TestFieldVertex: fieldVertex is DatasetFieldVertex with the id given.
func TestFieldVertex(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"order_id", "", "a/b:c"} {
		want := lineage.DatasetFieldVertex(rawOrders, f)
		if got := fieldVertex(rawOrders, f, lineage.DatasetFieldID(rawOrders, f)); got != want {
			t.Errorf("fieldVertex(%q) = %+v, want %+v", f, got, want)
		}
	}
}
