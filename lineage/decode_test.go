package lineage

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// decodeErrorCases holds one record per malformed kind and the exact error
// a user sees for it (dead letters carry this text).
var decodeErrorCases = []struct {
	name, in, want string
}{
	// Not JSON.
	{"not json", `hello`, `lineage: invalid character 'h' at byte 0 (not_json)`},
	{"empty record", ``, `lineage: unexpected end of JSON input at byte 0 (truncated?) (not_json)`},
	{"truncated", `{"eventType":"COMPLETE","eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"`, `lineage: unexpected end of JSON input at byte 78 (truncated?) (not_json)`},
	{"truncated in a skipped facet", `{"run":{"runId":"r1","facets":{"spark":{"x":[1,2`, `lineage: unexpected end of JSON input at byte 48 (truncated?) (not_json)`},
	{"trailing data", `{"job":{"namespace":"n","name":"j"},"eventTime":"2026-03-01T10:00:00Z"} {}`, `lineage: invalid character '{' at byte 72 (not_json)`},
	{"control character in a string", "{\"run\":{\"runId\":\"a\tb\"}}", `lineage: invalid character 0x09 at byte 18 (not_json)`},
	{"bad escape", `{"run":{"runId":"a\x"}}`, `lineage: invalid character 'x' at byte 19 (not_json)`},
	{"bad number in a skipped field", `{"run":{"runId":"r1"},"x":01}`, `lineage: invalid character '1' at byte 27 (not_json)`},
	{"too deep", `{"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`, `lineage: invalid character '[' at byte 10004 (not_json)`},

	// Neither format.
	{"unknown format", `{"hello":"world","eventTime":"2026-03-01T10:00:00Z"}`, `lineage: neither an OpenLineage event (no "run", "eventType", "job" or "dataset") nor a compact event (no "v") (unknown_format)`},
	{"top-level array", `[{"run":{"runId":"r1"}}]`, `lineage: top-level JSON value is an array, not an object (unknown_format)`},
	{"top-level null", `null`, `lineage: top-level JSON value is null, not an object (unknown_format)`},

	// OpenLineage RunEvent.
	{"missing run id", `{"eventType":"START","eventTime":"2026-03-01T10:00:00Z","run":{"facets":{}},"job":{"namespace":"n","name":"j"}}`, `lineage: run.runId: required field is missing (missing_field)`},
	{"null run id", `{"eventType":"START","eventTime":"2026-03-01T10:00:00Z","run":{"runId":null},"job":{"namespace":"n","name":"j"}}`, `lineage: run.runId: required field is missing (missing_field)`},
	{"empty run id", `{"eventType":"START","eventTime":"2026-03-01T10:00:00Z","run":{"runId":""},"job":{"namespace":"n","name":"j"}}`, `lineage: run.runId: required field is empty (missing_field)`},
	{"run id wrong type", `{"eventType":"START","eventTime":"2026-03-01T10:00:00Z","run":{"runId":42},"job":{"namespace":"n","name":"j"}}`, `lineage: run.runId: must be a string, not a number (wrong_type)`},
	{"run wrong type", `{"eventType":"START","eventTime":"2026-03-01T10:00:00Z","run":"r1","job":{"namespace":"n","name":"j"}}`, `lineage: run: must be an object, not a string (wrong_type)`},
	{"eventType without run", `{"eventType":"COMPLETE","eventTime":"2026-03-01T10:00:00Z","job":{"namespace":"n","name":"j"}}`, `lineage: run: required field is missing (missing_field)`},
	{"unknown eventType", `{"eventType":"DONE","eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`, `lineage: eventType: "DONE" is not one of START, RUNNING, COMPLETE, ABORT, FAIL, OTHER (unknown_event_type)`},
	{"lower-case eventType", `{"eventType":"complete","eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`, `lineage: eventType: "complete" is not one of START, RUNNING, COMPLETE, ABORT, FAIL, OTHER (unknown_event_type)`},
	{"eventType wrong type", `{"eventType":1,"eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`, `lineage: eventType: must be a string, not a number (wrong_type)`},
	{"missing eventTime", `{"eventType":"START","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`, `lineage: eventTime: required field is missing (missing_field)`},
	{"bad eventTime", `{"eventType":"START","eventTime":"2026-03-01 10:00:00","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`, `lineage: eventTime: "2026-03-01 10:00:00" is not an RFC 3339 date-time such as 2026-01-02T15:04:05.123Z (invalid_value)`},
	{"eventTime without offset nor a valid form", `{"eventType":"START","eventTime":"2026-03-01T10:00","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`, `lineage: eventTime: "2026-03-01T10:00" is not an RFC 3339 date-time such as 2026-01-02T15:04:05.123Z (invalid_value)`},
	{"eventType without run, schemaURL RunEvent", `{"eventType":"START","eventTime":"2026-03-01T10:00:00Z","job":{"namespace":"n","name":"j"},"schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`, `lineage: run: required field is missing (missing_field)`},
	{"eventTime as epoch millis", `{"eventType":"START","eventTime":1772359200000,"run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`, `lineage: eventTime: must be a string, not a number (wrong_type)`},
	{"missing job", `{"eventType":"START","eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"}}`, `lineage: job: required field is missing (missing_field)`},
	{"missing job name", `{"eventType":"START","eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n"}}`, `lineage: job.name: required field is missing (missing_field)`},
	{"job namespace wrong type", `{"eventType":"START","eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"namespace":["n"],"name":"j"}}`, `lineage: job.namespace: must be a string, not an array (wrong_type)`},
	{"missing input name", `{"eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"a","name":"x"},{"namespace":"a","name":"y"},{"namespace":"a","facets":{}}]}`, `lineage: inputs[2].name: required field is missing (missing_field)`},
	{"inputs wrong type", `{"eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},"inputs":{"namespace":"a","name":"x"}}`, `lineage: inputs: must be an array, not an object (wrong_type)`},
	{"output not an object", `{"eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},"outputs":["s3://a/x"]}`, `lineage: outputs[0]: must be an object, not a string (wrong_type)`},
	{"null output", `{"eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},"outputs":[null]}`, `lineage: outputs[0]: must be an object, not null (wrong_type)`},
	{"columnLineage wrong type", `{"eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},"outputs":[{"namespace":"a","name":"x","facets":{"columnLineage":[]}}]}`, `lineage: outputs[0].facets.columnLineage: must be an object, not an array (wrong_type)`},
	{"producer wrong type", `{"eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},"producer":{}}`, `lineage: producer: must be a string, not an object (wrong_type)`},
	{"first problem in field order", `{"job":{"name":5},"run":{},"eventTime":"yesterday"}`, `lineage: eventTime: "yesterday" is not an RFC 3339 date-time such as 2026-01-02T15:04:05.123Z (invalid_value)`},

	// OpenLineage DatasetEvent and JobEvent.
	{"dataset event without name", `{"eventTime":"2026-03-01T10:00:00Z","dataset":{"namespace":"s3://a"}}`, `lineage: dataset.name: required field is missing (missing_field)`},
	{"dataset event empty namespace", `{"eventTime":"2026-03-01T10:00:00Z","dataset":{"namespace":"","name":"x"}}`, `lineage: dataset.namespace: required field is empty (missing_field)`},
	{"job event bad output", `{"eventTime":"2026-03-01T10:00:00Z","job":{"namespace":"n","name":"j"},"outputs":[{"namespace":7,"name":"x"}]}`, `lineage: outputs[0].namespace: must be a string, not a number (wrong_type)`},

	// Compact format.
	{"compact unsupported version", `{"v":2,"type":"COMPLETE","time":"2026-03-01T10:00:00Z","run":"r1","job":{"ns":"n","name":"j"}}`, `lineage: v: unsupported compact format version "2", want 1 (invalid_value)`},
	{"compact version wrong type", `{"v":"1","type":"COMPLETE","time":"2026-03-01T10:00:00Z","run":"r1","job":{"ns":"n","name":"j"}}`, `lineage: v: must be a number, not a string (wrong_type)`},
	{"compact missing time", `{"v":1,"type":"COMPLETE","run":"r1","job":{"ns":"n","name":"j"}}`, `lineage: time: required field is missing (missing_field)`},
	{"compact bad time", `{"v":1,"type":"COMPLETE","time":"2026-02-30T10:00:00Z","run":"r1","job":{"ns":"n","name":"j"}}`, `lineage: time: "2026-02-30T10:00:00Z" is not an RFC 3339 date-time such as 2026-01-02T15:04:05.123Z (invalid_value)`},
	{"compact unknown type", `{"v":1,"type":"SUCCEEDED","time":"2026-03-01T10:00:00Z","run":"r1","job":{"ns":"n","name":"j"}}`, `lineage: type: "SUCCEEDED" is not one of START, RUNNING, COMPLETE, ABORT, FAIL, OTHER (unknown_event_type)`},
	{"compact type without run", `{"v":1,"type":"COMPLETE","time":"2026-03-01T10:00:00Z","job":{"ns":"n","name":"j"}}`, `lineage: run: required field is missing (missing_field)`},
	{"compact run wrong type", `{"v":1,"type":"COMPLETE","time":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"ns":"n","name":"j"}}`, `lineage: run: must be a string, not an object (wrong_type)`},
	{"compact OpenLineage job names", `{"v":1,"type":"COMPLETE","time":"2026-03-01T10:00:00Z","run":"r1","job":{"namespace":"n","name":"j"}}`, `lineage: job.ns: required field is missing (missing_field)`},
	{"compact missing input name", `{"v":1,"type":"COMPLETE","time":"2026-03-01T10:00:00Z","run":"r1","job":{"ns":"n","name":"j"},"in":[{"ns":"a"}]}`, `lineage: in[0].name: required field is missing (missing_field)`},
	{"compact parent without run", `{"v":1,"type":"COMPLETE","time":"2026-03-01T10:00:00Z","run":"r1","job":{"ns":"n","name":"j"},"parent":{"job":{"ns":"n","name":"p"}}}`, `lineage: parent.run: required field is missing (missing_field)`},
	{"compact parent job wrong type", `{"v":1,"type":"COMPLETE","time":"2026-03-01T10:00:00Z","run":"r1","job":{"ns":"n","name":"j"},"parent":{"run":"p1","job":"n/p"}}`, `lineage: parent.job: must be an object, not a string (wrong_type)`},
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	var d Decoder
	for _, tc := range decodeErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			var ev Event
			err := d.Decode([]byte(tc.in), &ev)
			if err == nil {
				t.Fatalf("accepted: %+v", ev)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is %T", err, err)
			}
			if err.Error() != tc.want {
				t.Fatalf("error\n got %s\nwant %s", err, tc.want)
			}
			// The reference decoder agrees (word for word but for syntax
			// errors, whose wording differs).
			_, refErr := refDecode([]byte(tc.in), 0)
			var re *DecodeError
			if !errors.As(refErr, &re) || re.Reason != de.Reason || re.Reason != ReasonNotJSON && *re != *de {
				t.Fatalf("reference decoder says %v", refErr)
			}
		})
	}
}

func TestDecodeOversized(t *testing.T) {
	t.Parallel()
	valid := []byte(`{"v":1,"time":"2026-03-01T10:00:00Z","job":{"ns":"n","name":"j"}}`)
	d := Decoder{MaxBytes: len(valid)}
	var ev Event
	if err := d.Decode(valid, &ev); err != nil {
		t.Fatalf("record of exactly MaxBytes: %v", err)
	}
	d.MaxBytes = len(valid) - 1
	err := d.Decode(valid, &ev)
	if want := `lineage: record is 65 bytes, over the 64-byte limit (oversized)`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	// The size is checked before parsing: an oversized record that is not
	// JSON is oversized.
	_, err = Decode(make([]byte, DefaultMaxBytes+1))
	if want := `lineage: record is 1048577 bytes, over the 1048576-byte limit (oversized)`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

var decodeValidCases = []struct {
	name string
	in   string
	want Event
}{
	{
		name: "spark run event with parent and column lineage",
		in: `{"eventType":"COMPLETE","eventTime":"2026-03-01T11:30:00.123456+01:00",
			"run":{"runId":"0190a1b2-0001-7c3d-9e8f-0123456789ab","facets":{
				"spark_version":{"spark-version":"3.5.1"},
				"parent":{"_producer":"p","run":{"runId":"0190a1b2-0000-7c3d-9e8f-0123456789ab"},"job":{"namespace":"spark-prod","name":"nightly_etl"},"root":{"run":{"runId":"x"}}}}},
			"job":{"namespace":"spark-prod","name":"nightly_etl.insert_into","facets":{"jobType":{"jobType":"SQL_JOB"}}},
			"inputs":[{"namespace":"s3://raw","name":"orders/dt=2026-03-01","facets":{"schema":{"fields":[{"name":"id","type":"long"}]}}}],
			"outputs":[{"namespace":"s3://wh","name":"orders","facets":{"columnLineage":{"fields":{"id":{"inputFields":[{"namespace":"s3://raw","name":"orders/dt=2026-03-01","field":"id"}]}}}}},
				{"namespace":"s3://wh","name":"orders_audit","facets":{"schema":{"fields":[]}}}],
			"producer":"https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark",
			"schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`,
		want: Event{
			Kind: KindRun, Type: TypeComplete, Time: mustTime("2026-03-01T10:30:00.123456Z"),
			RunID:   "0190a1b2-0001-7c3d-9e8f-0123456789ab",
			Job:     Job{"spark-prod", "nightly_etl.insert_into"},
			Parent:  &ParentRun{RunID: "0190a1b2-0000-7c3d-9e8f-0123456789ab", Job: Job{"spark-prod", "nightly_etl"}},
			KeyJob:  Job{"spark-prod", "nightly_etl"},
			Inputs:  []Dataset{{"s3://raw", "orders/dt=2026-03-01"}},
			Outputs: []Dataset{{"s3://wh", "orders"}, {"s3://wh", "orders_audit"}},
			Columns: []ColumnLineage{{Output: Dataset{"s3://wh", "orders"},
				Raw: []byte(`{"fields":{"id":{"inputFields":[{"namespace":"s3://raw","name":"orders/dt=2026-03-01","field":"id"}]}}}`)}},
			Facets: []FacetProps{
				{Label: LabelDataset, Namespace: "s3://raw", Name: "orders/dt=2026-03-01", Props: []Prop{StrLWW(PropSchema, `[{"name":"id","type":"long"}]`, 1772361000123)}},
				{Label: LabelDataset, Namespace: "s3://wh", Name: "orders_audit", Props: []Prop{StrLWW(PropSchema, `[]`, 1772361000123)}},
				{Label: LabelJob, Namespace: "spark-prod", Name: "nightly_etl.insert_into", Props: []Prop{StrLWW(PropJobType, "SQL_JOB", 1772361000123)}},
			},
			Producer:  "https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark",
			SchemaURL: "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
		},
	},
	{
		name: "run event without eventType",
		in:   `{"eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"}}`,
		want: Event{Kind: KindRun, Time: mustTime("2026-03-01T10:00:00Z"), RunID: "r1", Job: Job{"n", "j"}},
	},
	{
		name: "null is absent, unknown fields ignored",
		in:   `{"eventType":null,"eventTime":"2026-03-01T10:00:00-05:30","run":{"runId":"r1","facets":null},"job":{"namespace":"n","name":"j","facets":7},"inputs":null,"extra":{"a":[true,false,null,-1.5e3]},"producer":null}`,
		want: Event{Kind: KindRun, Time: mustTime("2026-03-01T15:30:00Z"), RunID: "r1", Job: Job{"n", "j"}},
	},
	{
		name: "duplicate keys: the last one wins",
		in:   `{"eventType":"START","eventTime":"bad","run":{"runId":1},"job":{"namespace":"n","name":"j"},"eventType":"FAIL","eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r2","runId":"r3"}}`,
		want: Event{Kind: KindRun, Type: TypeFail, Time: mustTime("2026-03-01T10:00:00Z"), RunID: "r3", Job: Job{"n", "j"}},
	},
	{
		name: "names with escapes, quotes, slashes and unicode",
		in:   `{"eventTime":"2026-03-01T10:00:00Z","run":{"runId":"r\u0031"},"job":{"namespace":"a\"b\\c/d","name":"caf\u00e9 \ud83d\ude00 \ud800 x\/y"},"inputs":[{"namespace":"s3://bucket/a","name":"b|c:d"}],"\u006futputs":[{"namespace":"ß","name":"` + "\xff\xfe" + `"}]}`,
		want: Event{Kind: KindRun, Time: mustTime("2026-03-01T10:00:00Z"), RunID: "r1",
			Job:     Job{`a"b\c/d`, "café 😀 \uFFFD x/y"},
			Inputs:  []Dataset{{"s3://bucket/a", "b|c:d"}},
			Outputs: []Dataset{{"ß", "\uFFFD\uFFFD"}}},
	},
	{
		name: "job event",
		in:   `{"eventTime":"2026-03-01T10:00:00Z","job":{"namespace":"airflow","name":"dag.task"},"inputs":[{"namespace":"pg://db","name":"public.a"}],"outputs":[{"namespace":"pg://db","name":"public.b","facets":{"columnLineage":{"fields":{}}}}],"producer":"p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent"}`,
		want: Event{Kind: KindJob, Time: mustTime("2026-03-01T10:00:00Z"), Job: Job{"airflow", "dag.task"},
			Inputs: []Dataset{{"pg://db", "public.a"}}, Outputs: []Dataset{{"pg://db", "public.b"}},
			Columns:  []ColumnLineage{{Output: Dataset{"pg://db", "public.b"}, Raw: []byte(`{"fields":{}}`)}},
			Producer: "p", SchemaURL: "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent"},
	},
	{
		name: "columnLineage of an input, after the outputs: not read",
		in:   `{"eventTime":"2026-03-01T10:00:00Z","job":{"namespace":"n","name":"j"},"outputs":[{"namespace":"n","name":"o"}],"inputs":[{"namespace":"n","name":"i","facets":{"columnLineage":{"fields":{}}}}]}`,
		want: Event{Kind: KindJob, Time: mustTime("2026-03-01T10:00:00Z"), Job: Job{"n", "j"},
			Inputs: []Dataset{{"n", "i"}}, Outputs: []Dataset{{"n", "o"}}},
	},
	{
		name: "dataset event",
		in:   `{"eventTime":"2026-03-01T10:00:00.5Z","dataset":{"namespace":"s3://wh","name":"orders","facets":{"schema":{"fields":[]}}},"producer":"p"}`,
		want: Event{Kind: KindDataset, Time: mustTime("2026-03-01T10:00:00.5Z"), Datasets: []Dataset{{"s3://wh", "orders"}}, Producer: "p",
			Facets: []FacetProps{{Label: LabelDataset, Namespace: "s3://wh", Name: "orders", Props: []Prop{StrLWW(PropSchema, `[]`, 1772359200500)}}}},
	},
	{
		name: "compact run event with parent",
		in:   `{"v":1,"type":"COMPLETE","time":"2026-03-01T10:00:00.250Z","run":"r1","job":{"ns":"batch","name":"load/orders"},"in":[{"ns":"s3://raw","name":"orders"}],"out":[{"ns":"s3://wh","name":"orders"},{"ns":"s3://wh","name":"orders/by_day"}],"parent":{"run":"p1","job":{"ns":"batch","name":"nightly"}},"producer":"cron-loader/2.1","extra":true}`,
		want: Event{Kind: KindRun, Type: TypeComplete, Time: mustTime("2026-03-01T10:00:00.25Z"), RunID: "r1",
			Job:     Job{"batch", "load/orders"},
			Parent:  &ParentRun{RunID: "p1", Job: Job{"batch", "nightly"}},
			Inputs:  []Dataset{{"s3://raw", "orders"}},
			Outputs: []Dataset{{"s3://wh", "orders"}, {"s3://wh", "orders/by_day"}}, Producer: "cron-loader/2.1"},
	},
	{
		name: "compact run event without type",
		in:   `{"v":1.0,"time":"2026-03-01T10:00:00Z","run":"r1","job":{"ns":"n","name":"j"}}`,
		want: Event{Kind: KindRun, Time: mustTime("2026-03-01T10:00:00Z"), RunID: "r1", Job: Job{"n", "j"}},
	},
	{
		name: "compact job event",
		in:   `{"time":"2026-03-01T10:00:00Z","job":{"ns":"n","name":"j"},"in":[{"ns":"a","name":"x"}],"out":[{"ns":"a","name":"y"}],"parent":"ignored for job events","v":1}`,
		want: Event{Kind: KindJob, Time: mustTime("2026-03-01T10:00:00Z"), Job: Job{"n", "j"},
			Inputs: []Dataset{{"a", "x"}}, Outputs: []Dataset{{"a", "y"}}},
	},
}

func TestDecodeValid(t *testing.T) {
	t.Parallel()
	var d Decoder
	ev := Event{Inputs: make([]Dataset, 5), Columns: make([]ColumnLineage, 3)} // dirty, to check reuse
	for _, tc := range decodeValidCases {
		t.Run(tc.name, func(t *testing.T) {
			if err := d.Decode([]byte(tc.in), &ev); err != nil {
				t.Fatal(err)
			}
			if diff := eventDiff(&ev, &tc.want); diff != "" {
				t.Fatalf("got vs want: %s", diff)
			}
			checkInvariants(t, &ev)
			fresh, err := Decode([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := eventDiff(&fresh, &tc.want); diff != "" {
				t.Fatalf("Decode: got vs want: %s", diff)
			}
			ref, err := refDecode([]byte(tc.in), 0)
			if err != nil {
				t.Fatalf("reference decoder: %v", err)
			}
			if diff := eventDiff(&ref, &tc.want); diff != "" {
				t.Fatalf("reference decoder: got vs want: %s", diff)
			}
		})
	}
}

// TestDecodeKeepsNothingOfTheRecord checks that decoded strings and Raw
// survive the record's buffer being reused.
func TestDecodeKeepsNothingOfTheRecord(t *testing.T) {
	t.Parallel()
	in := []byte(decodeValidCases[0].in)
	ev, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 'X'
	}
	if diff := eventDiff(&ev, &decodeValidCases[0].want); diff != "" {
		t.Fatal(diff)
	}
}

func TestDecodeParentAndPartitionKey(t *testing.T) {
	t.Parallel()
	ev, err := Decode([]byte(decodeValidCases[0].in))
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.PartitionKey(); got != "run:spark-prod/nightly_etl" {
		t.Fatalf("partition key %q", got)
	}
	ev, err = Decode([]byte(decodeValidCases[1].in))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Parent != nil || ev.PartitionKey() != "run:n/j" {
		t.Fatalf("no parent: %+v %q", ev.Parent, ev.PartitionKey())
	}
}

// TestDecodeRootParent: the parent facet's root job keys the event as the
// OpenLineage Kinesis transport does (root first, then parent, then the
// event's job); a root without a valid job is ignored.
func TestDecodeRootParent(t *testing.T) {
	t.Parallel()
	ev := func(root string) string {
		return `{"eventType":"START","eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r","facets":{"parent":{"run":{"runId":"p"},"job":{"namespace":"airflow","name":"dag.task"}` +
			root + `}}},"job":{"namespace":"spark","name":"app.exec"}}`
	}
	for _, tc := range []struct{ root, key string }{
		{`,"root":{"run":{"runId":"q"},"job":{"namespace":"airflow","name":"dag"}}`, "run:airflow/dag"},
		{`,"root":{"run":{"runId":"q"}}`, "run:airflow/dag.task"},
		{`,"root":{"job":{"namespace":"airflow"}}`, "run:airflow/dag.task"},
		{`,"root":null`, "run:airflow/dag.task"},
		{``, "run:airflow/dag.task"},
	} {
		e, err := Decode([]byte(ev(tc.root)))
		if err != nil {
			t.Fatalf("%s: %v", tc.root, err)
		}
		if got := e.PartitionKey(); got != tc.key || e.Parent == nil || e.Parent.Job.Name != "dag.task" {
			t.Errorf("root %s: key %q, parent %+v; want %q", tc.root, got, e.Parent, tc.key)
		}
	}
}

func TestDecodeBenchEvents(t *testing.T) {
	t.Parallel()
	for i, in := range benchEvents(3) {
		ev, err := Decode(in)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := refDecode(in, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d := eventDiff(&ev, &ref); d != "" {
			t.Fatal(d)
		}
		if len(ev.Inputs) != 2 || len(ev.Outputs) != 1 || len(ev.Columns) != 1 || ev.Parent == nil {
			t.Fatalf("event %d: %+v", i, ev)
		}
		if i == 0 {
			t.Logf("bench event: %d bytes", len(in))
		}
	}
}

func TestParseTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // UTC, RFC 3339; "" when refused
	}{
		{"2026-03-01T10:00:00Z", "2026-03-01T10:00:00Z"},
		{"2026-03-01T10:00:00.1Z", "2026-03-01T10:00:00.1Z"},
		{"2026-03-01T10:00:00.123456789+05:30", "2026-03-01T04:30:00.123456789Z"},
		{"2026-03-01T23:30:00-01:00", "2026-03-02T00:30:00Z"},
		{"2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z"},
		{"2026-03-01T10:00:00-00:00", "2026-03-01T10:00:00Z"},
		{"2025-02-29T00:00:00Z", ""},
		{"2026-03-01T10:00:60Z", ""},
		{"2026-03-01T24:00:00Z", ""},
		{"2026-03-01T10:00:00", ""},
		{"2026-03-01 10:00:00Z", ""},
		{"2026-03-01t10:00:00z", ""},
		{"2026-03-01T10:00:00.Z", ""},
		{"2026-03-01T10:00:00.1234567891Z", ""},
		{"2026-03-01T10:00:00+0100", ""},
		{"2026-03-01T10:00:00+24:00", ""},
		{"2026-3-01T10:00:00Z", ""},
		{"0000-01-01T00:30:00+01:00", ""}, // year -1 in UTC
		{"9999-12-31T23:30:00-01:00", ""}, // year 10000 in UTC
		{"1772359200000", ""},
	}
	for _, tc := range tests {
		got, ok := parseTime(tc.in)
		ref, refOK := refParseTime(tc.in)
		if ok != refOK || ok && !got.Equal(ref) {
			t.Errorf("%q: parseTime %v %v, reference %v %v", tc.in, got, ok, ref, refOK)
		}
		if tc.want == "" {
			if ok {
				t.Errorf("%q: accepted as %v", tc.in, got)
			}
			continue
		}
		if !ok || got.Format(time.RFC3339Nano) != tc.want || got.Location() != time.UTC {
			t.Errorf("%q: got %v %v, want %s", tc.in, got, ok, tc.want)
		}
	}
}

func FuzzParseTimeAgrees(f *testing.F) {
	f.Add("2026-03-01T10:00:00.123456789+05:30")
	f.Add("0000-01-01T00:30:00+01:00")
	f.Add("2024-02-29T23:59:59-23:59")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseTime(s)
		ref, refOK := refParseTime(s)
		if ok != refOK || ok && (!got.Equal(ref) || got.Location() != ref.Location()) {
			t.Fatalf("%q: parseTime %v %v, reference %v %v", s, got, ok, ref, refOK)
		}
	})
}

// TestCompactSchemaInSync checks that docs/compact-event.schema.json
// documents exactly the fields the decoder reads, and that the valid
// compact examples carry only those.
func TestCompactSchemaInSync(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../docs/compact-event.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Schema     string                     `json:"$schema"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("$schema %q", schema.Schema)
	}
	var got []string
	for k := range schema.Properties {
		got = append(got, k)
	}
	sort.Strings(got)
	want := []string{"in", "job", "out", "parent", "producer", "run", "time", "type", "v"}
	if !slices.Equal(got, want) {
		t.Fatalf("schema properties %q, decoder reads %q", got, want)
	}
	if r := strings.Join(schema.Required, ","); r != "v,time,job" {
		t.Fatalf("schema requires %s", r)
	}
}
