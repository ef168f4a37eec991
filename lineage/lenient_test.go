package lineage

import (
	"testing"
	"time"
)

// TestLenient: what Marquez accepts and the spec does not is read, and
// reported in Event.Lenient; the reference decoder agrees.
func TestLenient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		kind EventKind
		when time.Time
		len  Leniency
	}{
		{"zone-less eventTime is UTC",
			`{"eventType":"START","eventTime":"2021-11-03T10:53:52.427343","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`,
			KindRun, time.Date(2021, 11, 3, 10, 53, 52, 427343000, time.UTC), LenientZonelessTime},
		{"JobEvent with an eventType, by schemaURL",
			`{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"n","name":"a"}],"schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent"}`,
			KindJob, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), LenientKindFromSchemaURL},
		{"both",
			`{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00","dataset":{"namespace":"n","name":"d"},"schemaURL":"https://openlineage.io/spec/2-0-0/OpenLineage.json#/$defs/DatasetEvent"}`,
			KindDataset, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), LenientKindFromSchemaURL | LenientZonelessTime},
		{"parent facet without run: ignored",
			`{"eventType":"START","eventTime":"2021-01-01T00:00:01Z","run":{"runId":"r","facets":{"parent":{"job":{"namespace":"n","name":"p"},"root":{"run":{"runId":"x"}}}}},"job":{"namespace":"n","name":"j"}}`,
			KindRun, time.Date(2021, 1, 1, 0, 0, 1, 0, time.UTC), LenientInvalidParent},
		{"parent facet of the wrong type: ignored",
			`{"eventType":"START","eventTime":"2021-01-01T00:00:01Z","run":{"runId":"r","facets":{"parent":"p1"}},"job":{"namespace":"n","name":"j"}}`,
			KindRun, time.Date(2021, 1, 1, 0, 0, 1, 0, time.UTC), LenientInvalidParent},
		{"spec-conforming: none",
			`{"eventType":"START","eventTime":"2021-11-03T10:53:52.427343+01:00","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`,
			KindRun, time.Date(2021, 11, 3, 9, 53, 52, 427343000, time.UTC), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := Decode([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != tt.kind || !ev.Time.Equal(tt.when) || ev.Lenient != tt.len {
				t.Fatalf("kind %v time %v lenient %b, want %v %v %b", ev.Kind, ev.Time, ev.Lenient, tt.kind, tt.when, tt.len)
			}
			ref, err := refDecode([]byte(tt.data), 0)
			if err != nil {
				t.Fatal(err)
			}
			if d := eventDiff(&ev, &ref); d != "" {
				t.Fatalf("reference disagrees: %s", d)
			}
		})
	}
}
