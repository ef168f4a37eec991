package lineage

import (
	"strings"
	"testing"
)

// TestFacetProps: each facet read as a vertex property, stamped with the
// eventTime; wrong shapes give nothing; a value over MaxFacetPropBytes is
// left out and counted; both decoders give the same.
func TestFacetProps(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", MaxFacetPropBytes+1)
	in := `{"eventType":"COMPLETE","eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r"},
		"job":{"namespace":"n","name":"j","facets":{"sql":{"query":"SELECT 1"},"jobType":{"processingType":"BATCH","integration":"DBT","jobType":7},
			"sourceCodeLocation":{"type":"git","url":"https://g/x"},"documentation":{"description":"the job"},"ownership":{"owners":[{"name":"team:a","type":"TEAM"},{"type":"x"},{"name":"b"}]}}},
		"inputs":[{"namespace":"pg","name":"a","facets":{"dataSource":{"name":"pg-prod"},"version":{"datasetVersion":"v7"},"schema":{"fields":[{"name":"id","type":"int","description":"key"},{"name":"x","fields":[]},{"type":"lost"}]}}},
			{"namespace":"pg","name":"b","facets":{"dataSource":{"name":"n","uri":"pg://h/db"},"documentation":{"description":"` + big + `"},"schema":[],"ownership":{"owners":7}}}],
		"outputs":[{"namespace":"pg","name":"c","facets":{"sql":{"query":"not a dataset facet"}}}]}`
	const ts = 1772359200000
	want := []FacetProps{
		{Label: LabelDataset, Namespace: "pg", Name: "a", Props: []Prop{
			StrLWW(PropSchema, `[{"name":"id","type":"int","description":"key"},{"name":"x"}]`, ts),
			StrLWW(PropDataSource, "pg-prod", ts), StrLWW(PropVersion, "v7", ts)}},
		{Label: LabelDataset, Namespace: "pg", Name: "b", Props: []Prop{StrLWW(PropDataSource, "pg://h/db", ts)}, Capped: 1},
		{Label: LabelJob, Namespace: "n", Name: "j", Props: []Prop{
			StrLWW(PropSQL, "SELECT 1", ts), StrLWW(PropProcessingType, "BATCH", ts), StrLWW(PropIntegration, "DBT", ts),
			StrLWW(PropSourceCodeLocation, "https://g/x", ts), StrLWW(PropDescription, "the job", ts),
			StrLWW(PropOwners, `[{"name":"team:a","type":"TEAM"},{"name":"b"}]`, ts)}},
	}
	ev, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	exp := Event{Facets: want}
	got := Event{Facets: ev.Facets}
	if d := eventDiff(&got, &exp); d != "" {
		t.Fatalf("fast decoder: %s", d)
	}
	// A reused decoder answers from its memo: the same, also after the
	// record's buffer is overwritten.
	var d Decoder
	for i := 0; i < 2; i++ {
		buf := []byte(in)
		var ev2 Event
		if err := d.Decode(buf, &ev2); err != nil {
			t.Fatal(err)
		}
		for j := range buf {
			buf[j] = 'X'
		}
		got = Event{Facets: ev2.Facets}
		if diff := eventDiff(&got, &exp); diff != "" {
			t.Fatalf("reused decoder, pass %d: %s", i, diff)
		}
	}
	ref, err := refDecode([]byte(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	got = Event{Facets: ref.Facets}
	if d := eventDiff(&got, &exp); d != "" {
		t.Fatalf("reference decoder: %s", d)
	}
}
