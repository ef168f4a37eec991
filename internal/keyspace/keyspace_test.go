package keyspace

import (
	"fmt"
	"testing"
)

func TestSelectedShareAndDeterminism(t *testing.T) {
	t.Parallel()
	const n = 100000
	for _, share := range []float64{0.01, 0.1, 0.5} {
		in := 0
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("run:ns/job-%d", i)
			if Selected(k, share) {
				in++
			}
			if again := Selected(string([]byte(k)), share); again != Selected(k, share) {
				t.Fatal("not deterministic")
			}
			if Selected(k, share) && !Selected(k, share*1.5) {
				t.Fatalf("%s in share %v but not in the larger %v", k, share, share*1.5)
			}
		}
		got := float64(in) / n
		if got < share*0.9 || got > share*1.1 {
			t.Errorf("share %v: %v of the keys selected", share, got)
		}
	}
	if Selected("x", 0) || !Selected("x", 1) {
		t.Error("share 0 must select nothing and 1 everything")
	}
	if k, ok := EventKey([]byte(`{"eventType":"START","job":{"namespace":"n","name":"j"},"run":{"runId":"r"}}`)); !ok || k != "job:n/j" {
		t.Errorf("EventKey of a RunEvent = %q, %v", k, ok)
	}
	if k, ok := EventKey([]byte(`{"dataset":{"namespace":"n","name":"d"}}`)); !ok || k != "dataset:n/d" {
		t.Errorf("EventKey of a DatasetEvent = %q, %v", k, ok)
	}
	if _, ok := EventKey([]byte(`not json`)); ok {
		t.Error("EventKey of garbage: ok")
	}
	if ValidateShare("-share", 0) == nil || ValidateShare("-share", 1.5) == nil || ValidateShare("-share", 0.1) != nil {
		t.Error("ValidateShare")
	}
}
