package lineage

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// benchEvents returns n realistic OpenLineage RunEvents of about 1.5 KB
// as the Spark integration sends them: parent facet, Spark noise facets,
// schema and dataSource facets on datasets, columnLineage on the output.
func benchEvents(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf(`{"eventTime":"2026-03-0%dT10:%02d:%02d.%03d+01:00","producer":"https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent","eventType":"COMPLETE",`+
			`"run":{"runId":"0190a1b2-%04x-7c3d-9e8f-0123456789ab","facets":{"parent":{"_producer":"https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark","run":{"runId":"0190a1b2-0000-7c3d-9e8f-%012d"},"job":{"namespace":"spark-prod","name":"nightly_orders_etl"}},`+
			`"spark_version":{"spark-version":"3.5.1"},"processing_engine":{"version":"3.5.1","name":"spark","openlineageAdapterVersion":"1.23.0"}}},`+
			`"job":{"namespace":"spark-prod","name":"nightly_orders_etl.warehouse_orders_%d","facets":{"jobType":{"processingType":"BATCH","integration":"SPARK","jobType":"SQL_JOB"}}},`+
			`"inputs":[{"namespace":"s3://raw-bucket","name":"landing/orders/dt=2026-03-0%d","facets":{"dataSource":{"name":"s3://raw-bucket","uri":"s3://raw-bucket"},"schema":{"fields":[{"name":"order_id","type":"long"},{"name":"customer_id","type":"long"},{"name":"note","type":"string","description":"free text, may hold \"quotes\" and \\ backslashes \u00e9"}]}},"inputFacets":{}},`+
			`{"namespace":"s3://raw-bucket","name":"landing/customers","facets":{"schema":{"fields":[{"name":"customer_id","type":"long"}]}}}],`+
			`"outputs":[{"namespace":"s3://warehouse","name":"warehouse/orders_%d","facets":{"schema":{"fields":[{"name":"order_id","type":"long"},{"name":"country","type":"string"},{"name":"amount","type":"decimal(12,2)"}]},"columnLineage":{"fields":{"order_id":{"inputFields":[{"namespace":"s3://raw-bucket","name":"landing/orders","field":"order_id"}]},"country":{"inputFields":[{"namespace":"s3://raw-bucket","name":"landing/customers","field":"country"}]}}}}}]}`,
			1+i%9, i%60, i%60, i%1000, i, i, i%16, 1+i%9, i%16))
	}
	return out
}

func BenchmarkDecode(b *testing.B) {
	evs := benchEvents(64)
	var d Decoder
	var ev Event
	n, size := 0, 0
	for _, e := range evs {
		size += len(e)
	}
	b.SetBytes(int64(size / len(evs)))
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU(b)
	for b.Loop() {
		if err := d.Decode(evs[n%len(evs)], &ev); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
	// CPU per event (every thread: GC too) compares with the pipeline's
	// on a shared machine (scripts/bench-cpu.sh).
	b.ReportMetric((processCPU(b)-cpu0).Seconds()*1e6/float64(n), "cpu-us/event")
}

// processCPU returns the user+system CPU time of this process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecodeEncodingJSON is the baseline: the same events into
// structs with encoding/json (no validation), for the ratio.
func BenchmarkDecodeEncodingJSON(b *testing.B) {
	type name struct {
		Namespace string          `json:"namespace"`
		Name      string          `json:"name"`
		Facets    json.RawMessage `json:"facets"`
	}
	type olEvent struct {
		EventType string    `json:"eventType"`
		EventTime time.Time `json:"eventTime"`
		Run       struct {
			RunID  string `json:"runId"`
			Facets struct {
				Parent *struct {
					Run struct {
						RunID string `json:"runId"`
					} `json:"run"`
					Job name `json:"job"`
				} `json:"parent"`
			} `json:"facets"`
		} `json:"run"`
		Job       name   `json:"job"`
		Inputs    []name `json:"inputs"`
		Outputs   []name `json:"outputs"`
		Producer  string `json:"producer"`
		SchemaURL string `json:"schemaURL"`
	}
	evs := benchEvents(64)
	size := 0
	for _, e := range evs {
		size += len(e)
	}
	b.SetBytes(int64(size / len(evs)))
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	start := time.Now()
	for b.Loop() {
		var ev olEvent
		if err := json.Unmarshal(evs[n%len(evs)], &ev); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkDecodeReference is the tests' reference decoder (encoding/json
// with the same validation as the fast decoder).
func BenchmarkDecodeReference(b *testing.B) {
	evs := benchEvents(64)
	b.ReportAllocs()
	n := 0
	start := time.Now()
	for b.Loop() {
		if _, err := refDecode(evs[n%len(evs)], 0); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
}
