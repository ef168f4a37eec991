package main

import (
	"testing"
	"time"
)

// TestClassify: each sample goes to the component of its frame nearest the
// leaf (malloc counts for the decoder that called it), label lines are
// skipped, and samples without a component frame fall to tier 2.
func TestClassify(t *testing.T) {
	traces := `File: lineageflow
Type: cpu
-----------+-------------------------------------------------------
      30ms   runtime.mallocgc /usr/local/go/src/runtime/malloc.go:1
             github.com/lineageflow/lineageflow/lineage.(*Decoder).Decode /w/lineage/decode.go:93
             github.com/lineageflow/lineageflow/processor.(*Shard).record /w/processor/shard.go:305
             github.com/vmware/vmware-go-kcl-v2/clientlibrary/worker.(*PollingShardConsumer).getRecords /m/polling-shard-consumer.go:211
-----------+-------------------------------------------------------
    pebble:  wal-sync
      10ms   internal/runtime/syscall/linux.Syscall6 /usr/local/go/src/internal/runtime/syscall/linux/asm_linux_amd64.s:36
             github.com/cockroachdb/pebble/v2.(*LogWriter).flushLoop /m/pebble/record/log_writer.go:1
-----------+-------------------------------------------------------
      1.2s   encoding/base64.(*Encoding).Decode /usr/local/go/src/encoding/base64/base64.go:1
             github.com/lineageflow/lineageflow/source.(*jsonScanner).records /w/source/getrecords.go:200
             github.com/aws/aws-sdk-go-v2/service/kinesis.(*deserializeResponseMiddleware).HandleDeserialize /m/api_client.go:523
-----------+-------------------------------------------------------
      20ms   runtime.gcDrain /usr/local/go/src/runtime/mgcmark.go:1
             runtime.gcBgMarkWorker /usr/local/go/src/runtime/mgc.go:1
-----------+-------------------------------------------------------
`
	got, err := classify([]byte(traces))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		"GetRecords decoding (ours, source/getrecords*.go, cbor.go)": 1200 * time.Millisecond,
		"decode":              30 * time.Millisecond,
		"GC":                  20 * time.Millisecond,
		"Pebble (background)": 10 * time.Millisecond,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, s := range got {
		if want[s.name] != s.d {
			t.Errorf("%s: %v, want %v", s.name, s.d, want[s.name])
		}
	}
	if got[0].name != "GetRecords decoding (ours, source/getrecords*.go, cbor.go)" || got[0].frac < 0.95 {
		t.Errorf("largest first: got %+v", got[0])
	}
}

// TestClassifyCBOR: the CBOR read path (source/cbor.go,
// source/getrecords_cbor.go) is GetRecords decoding, not the KCL adapter.
func TestClassifyCBOR(t *testing.T) {
	for _, f := range []string{
		"github.com/lineageflow/lineageflow/source.(*cborReader).str /w/source/cbor.go:150",
		"github.com/lineageflow/lineageflow/source.buildRecords /w/source/getrecords_cbor.go:360",
	} {
		if got := classifyStack([]string{"runtime.memmove /usr/local/go/src/runtime/memmove_amd64.s:1", f}); got != "GetRecords decoding (ours, source/getrecords*.go, cbor.go)" {
			t.Errorf("%s: %s", f, got)
		}
	}
	if got := classifyStack([]string{"github.com/lineageflow/lineageflow/source.(*recordProcessor).ProcessRecords /w/source/records.go:80"}); got != "source (KCL adapter, leases)" {
		t.Errorf("records.go: %s", got)
	}
}
