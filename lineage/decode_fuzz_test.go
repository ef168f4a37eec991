package lineage

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// fuzzMaxBytes is the record limit in the fuzz targets: small, so that the
// fuzzer reaches it (testdata/fuzz holds a seed just over it).
const fuzzMaxBytes = 16 << 10

// fuzzSeeds adds the in-code seeds; testdata/fuzz/<FuzzName>/ holds the
// rest (malformed kinds and what the fuzzer found).
func fuzzSeeds(f *testing.F) {
	for _, tc := range decodeErrorCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range decodeValidCases {
		f.Add([]byte(tc.in))
	}
	for _, ev := range benchEvents(4) {
		f.Add(ev)
	}
	for _, s := range modelSeeds {
		f.Add([]byte(s))
	}
}

// modelSeeds exercise what the graph model reads: run facets, symlinks,
// leniencies.
var modelSeeds = []string{
	`{"eventType":"START","eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r","facets":{"processing_engine":{"_producer":"p","name":"spark","version":"3.5.1","openlineageAdapterVersion":"1.40.0"},"externalQuery":{"externalQueryId":"q1","source":"bigquery"}}},"job":{"namespace":"n","name":"j"}}`,
	`{"eventType":"FAIL","eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r","facets":{"processing_engine":["spark"],"externalQuery":{"externalQueryId":7,"source":null}}},"job":{"namespace":"n","name":"j"}}`,
	`{"eventType":"COMPLETE","eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r","facets":{"processing_engine":{"name":"` + strings.Repeat("s", MaxRunFacetValue+1) + `","version":"1"},"externalQuery":"q"}},"job":{"namespace":"n","name":"j"}}`,
	`{"eventType":"COMPLETE","eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":"j"},"outputs":[{"namespace":"n","name":"t","facets":{"lifecycleStateChange":{"lifecycleStateChange":"DROP"},"symlinks":{"identifiers":[{"namespace":"a","name":"b"}]}}},{"namespace":"n","name":"u","facets":{"lifecycleStateChange":{"lifecycleStateChange":"TRUNCATE"},"columnLineage":{}}},{"namespace":"n","name":"v","facets":{"lifecycleStateChange":{"lifecycleStateChange":7}}}]}`,
	`{"eventType":"FAIL","eventTime":"2026-01-01T00:00:00","run":{"runId":"r","facets":{"errorMessage":{"message":"boom","stackTrace":"x"},"nominalTime":{"nominalStartTime":"2026-01-01T00:00:00Z","nominalEndTime":"2026-01-02T00:00:00"}}},"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"s3://b","name":"/p","facets":{"symlinks":{"identifiers":[{"namespace":"arn:aws:glue:us-east-1:1","name":"table/db/t","type":"TABLE"},{"namespace":"","name":"x"}]}}}],"outputs":[{"namespace":"s3://b","name":"/q","facets":{"symlinks":{"identifiers":[{"namespace":"hive://h","name":"db.q","type":7}]},"columnLineage":{"fields":{}}}}]}`,
	`{"eventType":"COMPLETE","eventTime":"2026-01-01T00:00:00Z","job":{"namespace":"n","name":"j"},"schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent","outputs":[{"namespace":"n","name":"o","facets":{"symlinks":null}}],"inputs":[{"namespace":"n","name":"i","facets":{"symlinks":{"identifiers":[{"namespace":"a","name":"b"}]},"symlinks":{"identifiers":"no"}}}]}`,
	`{"eventType":"START","eventTime":"2026-01-01T00:00:00Z","dataset":{"namespace":"n","name":"d","facets":{"symlinks":{"identifiers":[{"namespace":"a","name":"b","type":"TABLE"}]}}},"schemaURL":"x#/$defs/DatasetEvent"}`,
	// parent facets with a root: valid, job missing, job invalid, duplicated
	`{"eventType":"START","eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r","facets":{"parent":{"run":{"runId":"p"},"job":{"namespace":"n","name":"task"},"root":{"run":{"runId":"q"},"job":{"namespace":"n","name":"dag"}}}}},"job":{"namespace":"n","name":"j"}}`,
	`{"eventType":"START","eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r","facets":{"parent":{"run":{"runId":"p"},"job":{"namespace":"n","name":"task"},"root":{"run":{"runId":"q"}}}}},"job":{"namespace":"n","name":"j"}}`,
	`{"eventType":"START","eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r","facets":{"parent":{"run":{"runId":"p"},"job":{"namespace":"n","name":"task"},"root":{"job":{"namespace":"","name":7}}}}},"job":{"namespace":"n","name":"j"}}`,
	`{"eventType":"START","eventTime":"2026-01-01T00:00:00Z","run":{"runId":"r","facets":{"parent":{"run":{"runId":"p"},"job":{"namespace":"n","name":"task"},"root":{"job":{"namespace":"n","name":"a"}},"root":null}}},"job":{"namespace":"n","name":"j"}}`,
}

// fuzzDecoder is reused across inputs, as a shard's decoder is, so that
// state leaking from one record into the next shows up as a disagreement.
var (
	fuzzDecoder = Decoder{MaxBytes: fuzzMaxBytes}
	fuzzEvent   Event
)

func FuzzDecodeAgreesWithEncodingJSON(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := refDecode(data, fuzzMaxBytes)
		gotErr := fuzzDecoder.Decode(data, &fuzzEvent)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("input %q\nencoding/json: %v\nfast decoder:  %v", data, wantErr, gotErr)
		}
		if wantErr != nil {
			var w, g *DecodeError
			if !errors.As(wantErr, &w) || !errors.As(gotErr, &g) {
				t.Fatalf("not *DecodeError: %T %T", wantErr, gotErr)
			}
			// Syntax error messages differ (the fast decoder gives the
			// offset); everything else must match word for word.
			if w.Reason != g.Reason || w.Reason != ReasonNotJSON && *w != *g {
				t.Fatalf("input %q\nencoding/json: %v\nfast decoder:  %v", data, wantErr, gotErr)
			}
			return
		}
		if d := eventDiff(&fuzzEvent, &want); d != "" {
			t.Fatalf("input %q\nfast decoder vs encoding/json: %s", data, d)
		}
	})
}

func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is %T, not *DecodeError", err, err)
			}
			if de.Reason == "" || de.Msg == "" {
				t.Fatalf("incomplete error %#v", de)
			}
			return
		}
		checkInvariants(t, &ev)
		if ev.Kind == KindDataset {
			return
		}
		// What was decoded, written back in the compact format, decodes
		// to the same event: escaping, names and parents survive.
		rt, err := Decode(compactJSON(t, &ev))
		if err != nil {
			t.Fatalf("compact round trip of %+v: %v", ev, err)
		}
		ev.Columns, ev.SchemaURL, ev.Lenient, ev.Run, ev.Aliases, ev.Lifecycle, ev.Facets = nil, "", 0, RunFacets{}, nil, nil, nil
		ev.KeyJob = Job{} // the compact format has no parent facet (its parent keys it)
		if d := eventDiff(&rt, &ev); d != "" {
			t.Fatalf("compact round trip: %s", d)
		}
	})
}

// checkInvariants checks what every decoded event promises.
func checkInvariants(t *testing.T, ev *Event) {
	t.Helper()
	if ev.Time.Location().String() != "UTC" {
		t.Fatalf("time %v not in UTC", ev.Time)
	}
	switch ev.Kind {
	case KindRun:
		if ev.RunID == "" {
			t.Fatal("run event without run id")
		}
	case KindJob:
		if ev.RunID != "" || ev.Type != TypeUnspecified || ev.Parent != nil {
			t.Fatalf("job event with run fields: %+v", ev)
		}
	case KindDataset:
		if len(ev.Datasets) != 1 || len(ev.Inputs)+len(ev.Outputs)+len(ev.Columns) != 0 {
			t.Fatalf("dataset event shape: %+v", ev)
		}
		return
	default:
		t.Fatalf("kind %v", ev.Kind)
	}
	if ev.Job.Namespace == "" || ev.Job.Name == "" {
		t.Fatalf("job %+v", ev.Job)
	}
	if ev.Parent != nil && (ev.Parent.RunID == "" || ev.Parent.Job.Namespace == "" || ev.Parent.Job.Name == "") {
		t.Fatalf("parent %+v", ev.Parent)
	}
	for _, l := range [][]Dataset{ev.Inputs, ev.Outputs} {
		for _, d := range l {
			if d.Namespace == "" || d.Name == "" {
				t.Fatalf("dataset %+v", d)
			}
		}
	}
}

// compactJSON writes a run or job event in the compact format with
// encoding/json.
func compactJSON(t *testing.T, ev *Event) []byte {
	type name struct {
		NS   string `json:"ns"`
		Name string `json:"name"`
	}
	type parent struct {
		Run string `json:"run"`
		Job name   `json:"job"`
	}
	c := struct {
		V        int     `json:"v"`
		Type     string  `json:"type,omitempty"`
		Time     string  `json:"time"`
		Run      string  `json:"run,omitempty"`
		Job      name    `json:"job"`
		In       []name  `json:"in,omitempty"`
		Out      []name  `json:"out,omitempty"`
		Parent   *parent `json:"parent,omitempty"`
		Producer string  `json:"producer,omitempty"`
	}{V: 1, Type: string(ev.Type), Time: ev.Time.Format("2006-01-02T15:04:05.999999999Z07:00"), Run: ev.RunID,
		Job: name{ev.Job.Namespace, ev.Job.Name}, Producer: ev.Producer}
	for _, d := range ev.Inputs {
		c.In = append(c.In, name{d.Namespace, d.Name})
	}
	for _, d := range ev.Outputs {
		c.Out = append(c.Out, name{d.Namespace, d.Name})
	}
	if ev.Parent != nil {
		c.Parent = &parent{ev.Parent.RunID, name{ev.Parent.Job.Namespace, ev.Parent.Job.Name}}
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzScanAgreesWithEncodingJSON holds the scanner alone to encoding/json:
// the same records are valid JSON, and a JSON string unescapes to the same
// Go string.
func FuzzScanAgreesWithEncodingJSON(f *testing.F) {
	f.Add([]byte(`"caf\u00e9 \ud83d\ude00 \ud800\u0041 \udc00 \\ \/ \" \b\f\n\r\t"`))
	f.Add([]byte("\"\xff\xed\xa0\x80\xc3\x28 ok \xe2\x82\xac\""))
	f.Add([]byte(`{"a":[1,-0.5e+3,true,false,null,{}],"b":{"c":""}}`))
	f.Add([]byte(`[01]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s scanner
		s.reset(data)
		first := s.peek()
		s.skip(1)
		s.end()
		if valid := json.Valid(data); valid != (s.err == nil) {
			t.Fatalf("%q: json.Valid %v, scanner error %v", data, valid, s.err)
		}
		if s.err != nil || first != '"' {
			return
		}
		var want string
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		s.reset(data)
		s.peek()
		raw, fl := s.str()
		d := Decoder{noIntern: true}
		if got := d.string(raw, fl, false); got != want {
			t.Fatalf("%q: unescaped to %q, encoding/json says %q", data, got, want)
		}
	})
}
