package source

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	smithy "github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// twoClients returns the SDK's plain client and the KCL's client
// (escapeAggregates) on the same endpoint. attempts: the SDK's retry
// attempts (0: its default, as in the worker; kinesalite under load
// sometimes drops a keep-alive connection mid-response, which the SDK
// retries).
func twoClients(t *testing.T, endpoint string, attempts int) (plain, fast *kinesis.Client) {
	t.Helper()
	ac := awsconf.Config{Region: testenv.Region, KinesisEndpoint: endpoint, AccessKeyID: testenv.AccessKeyID, SecretAccessKey: testenv.SecretAccessKey}
	retries := func(o *kinesis.Options) {
		if attempts > 0 {
			o.RetryMaxAttempts = attempts
		}
	}
	plain, err := ac.Kinesis(context.Background(), retries)
	if err != nil {
		t.Fatal(err)
	}
	fast, err = ac.Kinesis(context.Background(), escapeAggregates, retries)
	if err != nil {
		t.Fatal(err)
	}
	return plain, fast
}

// getRecordsAgainOnLostConn calls GetRecords, and again (at most twice
// more) when the client's connection was closed under the response: the
// SDK's HTTP client on this machine now and then loses one (seen on the
// SDK's own decoder path too, see BenchmarkGetRecords). That is transport,
// not decoding, which is what the comparisons here test.
func getRecordsAgainOnLostConn(t *testing.T, ctx context.Context, c *kinesis.Client, in func() *kinesis.GetRecordsInput) (*kinesis.GetRecordsOutput, error) {
	t.Helper()
	out, err := c.GetRecords(ctx, in())
	for again := 0; err != nil && again < 2 && strings.Contains(err.Error(), "use of closed network connection"); again++ {
		t.Logf("connection lost under a response, calling again: %v", err)
		out, err = c.GetRecords(ctx, in())
	}
	return out, err
}

// compareGetRecords calls GetRecords with both clients and fails unless
// the KCL's client gives the SDK's output with every record escaped (or
// the same error). anyIterator: kinesalite gives a new NextShardIterator on
// every call; both must only be set or unset alike.
func compareGetRecords(t *testing.T, what string, plain, fast *kinesis.Client, anyIterator bool, in func() *kinesis.GetRecordsInput) *kinesis.GetRecordsOutput {
	t.Helper()
	ctx := context.Background()
	want, werr := getRecordsAgainOnLostConn(t, ctx, plain, in)
	got, gerr := getRecordsAgainOnLostConn(t, ctx, fast, in)
	if werr != nil || gerr != nil {
		var wa, ga smithy.APIError
		var wd, gd *smithy.DeserializationError
		switch {
		case werr == nil || gerr == nil:
			t.Fatalf("%s: errors differ: SDK %v, ours %v", what, werr, gerr)
		case errors.As(werr, &wd) && errors.As(gerr, &gd): // both refuse the body
		case !errors.As(werr, &wa) || !errors.As(gerr, &ga) || wa.ErrorCode() != ga.ErrorCode() || wa.ErrorMessage() != ga.ErrorMessage():
			t.Fatalf("%s: errors differ: SDK %v, ours %v", what, werr, gerr)
		}
		return nil
	}
	for i := range want.Records {
		want.Records[i].Data = escape(want.Records[i].Data)
	}
	want.ResultMetadata, got.ResultMetadata = middleware.Metadata{}, middleware.Metadata{}
	if anyIterator && (want.NextShardIterator == nil) == (got.NextShardIterator == nil) {
		w := *want
		w.NextShardIterator = got.NextShardIterator
		want = &w
	}
	if !reflect.DeepEqual(want, got) {
		for i := range min(len(want.Records), len(got.Records)) {
			if w, g := want.Records[i], got.Records[i]; !reflect.DeepEqual(w, g) {
				t.Errorf("%s: record %d differs:\nSDK  %#v\nours %#v", what, i, w, g)
				break
			}
		}
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		t.Fatalf("%s: outputs differ:\nSDK  %.2000s\nours %.2000s", what, wj, gj)
	}
	return got
}

// TestGetRecordsDecoder: on responses of every shape (served by a local
// HTTP server), the KCL's client decodes what the SDK decodes, records
// escaped; the fast path or the fallback, whichever applies.
func TestGetRecordsDecoder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	rec := func(i int) map[string]any {
		n := r.IntN(300)
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(r.IntN(256))
		}
		switch i % 5 {
		case 0:
			if n > 0 {
				data[0] = escapeByte // an aggregate's first byte
			}
		case 1:
			data = kpl.Marshal([]kpl.Record{{PartitionKey: "a", Data: []byte(`{"x":1}`)}})
		}
		m := map[string]any{
			"SequenceNumber":              fmt.Sprintf("4959%040d", i),
			"PartitionKey":                fmt.Sprintf("pk-é-%d", r.IntN(1000)),
			"Data":                        base64.StdEncoding.EncodeToString(data),
			"ApproximateArrivalTimestamp": 1.7e9 + float64(r.IntN(1e6))/1000,
		}
		if i%7 == 3 {
			m["EncryptionType"] = "KMS"
		}
		return m
	}
	records := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = rec(i)
		}
		return out
	}
	body := func(m map[string]any) string {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := []struct {
		name, body string
		status     int
		fast       bool // decoded by the fast path (else by the SDK)
	}{
		{"records", body(map[string]any{"Records": records(200), "NextShardIterator": "AAAA/it+=", "MillisBehindLatest": 12}), 200, true},
		{"empty", body(map[string]any{"Records": []any{}, "NextShardIterator": "it", "MillisBehindLatest": 0}), 200, true},
		{"empty data", body(map[string]any{"Records": []any{map[string]any{"SequenceNumber": "1", "PartitionKey": "k", "Data": ""}}, "NextShardIterator": "it"}), 200, true},
		{"pretty", func() string {
			b, _ := json.MarshalIndent(map[string]any{"Records": records(3), "NextShardIterator": "it", "MillisBehindLatest": 5}, "", "\t")
			return string(b)
		}(), 200, true},
		{"no iterator (shard end)", body(map[string]any{"Records": records(2), "MillisBehindLatest": 0}), 200, true},
		{"null iterator", `{"Records":[],"NextShardIterator":null,"MillisBehindLatest":0}`, 200, true},
		{"null records", `{"Records":null,"NextShardIterator":"it","MillisBehindLatest":null}`, 200, false},
		{"empty object", `{}`, 200, true},
		{"null data", `{"Records":[{"SequenceNumber":"1","PartitionKey":"k","Data":null}],"NextShardIterator":"it"}`, 200, false},
		{"string timestamp", `{"Records":[{"SequenceNumber":"1","PartitionKey":"k","Data":"AQI=","ApproximateArrivalTimestamp":"x"}],"NextShardIterator":"it"}`, 200, false},
		{"child shards", body(map[string]any{"Records": []any{}, "MillisBehindLatest": 0, "ChildShards": []any{
			map[string]any{"ShardId": "shardId-000000000002", "ParentShards": []string{"shardId-000000000000"},
				"HashKeyRange": map[string]string{"StartingHashKey": "0", "EndingHashKey": "17"}}}}), 200, false},
		// kinesis-mock's exact bytes (LocalStack's Kinesis engine over JSON):
		// its fields in its order, "ChildShards":null on every read.
		{"kinesis-mock", `{"ChildShards":null,"MillisBehindLatest":0,"NextShardIterator":"AAAAAAAAAAE7b3RoZXI=","Records":[{"ApproximateArrivalTimestamp":1764921600.123,"Data":"eyJ4IjoxfQ==","EncryptionType":"NONE","PartitionKey":"job:ns/a","SequenceNumber":"49658283012345678901234567890123456789012345678901234562"}]}`, 200, true},
		{"escaped key", `{"Records":[{"SequenceNumber":"1","PartitionKey":"a\"b\u00e9","Data":"AQI=","ApproximateArrivalTimestamp":1700000000.5}],"NextShardIterator":"it"}`, 200, false},
		{"unknown field", `{"Records":[{"SequenceNumber":"1","PartitionKey":"k","Data":"AQI=","Foo":1}],"NextShardIterator":"it"}`, 200, false},
		{"expired iterator", `{"__type":"ExpiredIteratorException","message":"Iterator expired"}`, 400, false},
		{"throughput", `{"__type":"ProvisionedThroughputExceededException","message":"Rate exceeded"}`, 400, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				w.Header().Set("Content-Type", "application/x-amz-json-1.1")
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			defer srv.Close()
			plain, fast := twoClients(t, srv.URL, 1) // errors once, not retried
			got := compareGetRecords(t, c.name, plain, fast, false, func() *kinesis.GetRecordsInput {
				return &kinesis.GetRecordsInput{ShardIterator: aws.String("it")}
			})
			if c.status != 200 || strings.Contains(c.name, "timestamp") {
				if got != nil {
					t.Fatal("an error response decoded as a success")
				}
				return
			}
			var out kinesis.GetRecordsOutput
			if err := decodeGetRecords([]byte(c.body), &out); (err == nil) != c.fast {
				t.Fatalf("fast path: got err %v, want fast=%v", err, c.fast)
			}
		})
	}
}

// TestGetRecordsKinesalite: against kinesalite, the KCL's client reads what
// the SDK reads (plain records, KPL aggregates, records that start with the
// KPL magic byte without being one), shard by shard to the end.
func TestGetRecordsKinesalite(t *testing.T) {
	h := harness.ForTest(t, "getrecords")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := h.CreateStream(ctx, 2); err != nil {
		t.Fatal(err)
	}
	var entries []types.PutRecordsRequestEntry
	for i := range 300 {
		var data []byte
		switch i % 3 {
		case 0:
			data = []byte(fmt.Sprintf(`{"i":%d}`, i))
		case 1:
			data = kpl.Marshal([]kpl.Record{{PartitionKey: "a", Data: []byte(fmt.Sprintf(`{"i":%d}`, i))}, {PartitionKey: "b", Data: []byte(`{}`)}})
		default:
			data = append([]byte{escapeByte}, strings.Repeat("x", i)...)
		}
		entries = append(entries, types.PutRecordsRequestEntry{Data: data, PartitionKey: aws.String(fmt.Sprintf("k%d", i%17))})
	}
	for len(entries) > 0 {
		n := min(len(entries), 100)
		out, err := h.Kinesis().PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(h.Stream), Records: entries[:n]})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToInt32(out.FailedRecordCount) != 0 {
			t.Fatalf("%d records failed", aws.ToInt32(out.FailedRecordCount))
		}
		entries = entries[n:]
	}
	plain, fast := twoClients(t, h.Env.KinesisEndpoint, 0)
	ids, err := h.ShardIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total, escaped := 0, 0
	slow := fast.Options().Protocol.(*recordsProtocol)
	for _, id := range ids {
		it, err := plain.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(h.Stream), ShardId: aws.String(id),
			ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for {
			cur := iter
			got := compareGetRecords(t, id, plain, fast, true, func() *kinesis.GetRecordsInput {
				return &kinesis.GetRecordsInput{ShardIterator: cur, Limit: aws.Int32(37)}
			})
			if got == nil {
				t.Fatal("GetRecords failed on both clients")
			}
			for _, r := range got.Records {
				if len(r.Data) > 1 && r.Data[0] == escapeByte && r.Data[1] == escapeByte {
					escaped++
				}
			}
			total += len(got.Records)
			if len(got.Records) == 0 {
				break
			}
			iter = got.NextShardIterator
		}
	}
	if total != 300 || escaped != 200 {
		t.Fatalf("read %d records (%d escaped), want 300 (200 escaped)", total, escaped)
	}
	if n := slow.slow.Load(); n != 0 {
		t.Fatalf("%d of kinesalite's responses went to the SDK's decoder, want none", n)
	}
	// An expired or bad iterator: the same error from both.
	compareGetRecords(t, "bad iterator", plain, fast, true, func() *kinesis.GetRecordsInput {
		return &kinesis.GetRecordsInput{ShardIterator: aws.String("AAAAAAAAAAGbad")}
	})
}

// BenchmarkGetRecords: one GetRecords of 2500 records of ~1.5 KB (half of
// them starting with the KPL magic byte) from a local HTTP server, by the
// SDK's decoder and by ours over JSON (records escaped either way), and by
// ours over CBOR: the body kinesalite sends (data as base64 text, float
// seconds) and the body Kinesis sends (data as byte strings, tag 1 ms).
func BenchmarkGetRecords(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	recs := make([]tRec, 2500)
	for i := range recs {
		data := make([]byte, 1500)
		for j := range data {
			data[j] = byte(' ' + r.IntN(90))
		}
		if i%2 == 0 {
			data[0] = escapeByte
		}
		recs[i] = tRec{seq: fmt.Sprintf("4959%052d", i), key: fmt.Sprintf("pipeline-%d", i%256), data: data, ms: 1_700_000_000_000 + int64(i)}
	}
	jsonURL := serve(b, 200, "application/x-amz-json-1.1", jsonBody(b, recs, "it", 0, true), nil)
	kinesaliteURL := serve(b, 200, cborContentType, cborBody(recs, "it", 0, cShape{data: "base64", ts: "float-s"}), nil)
	kinesisURL := serve(b, 200, cborContentType, cborBody(recs, "it", 0, cShape{data: "bytes", ts: "tag-ms"}), nil)
	for _, c := range []struct {
		name, url string
		opt       func(*kinesis.Options)
	}{
		{"sdk", jsonURL, nil},
		{"ours", jsonURL, escapeAggregates},
		{"cbor-kinesalite", kinesaliteURL, readPath(ProtocolCBOR)},
		{"cbor-kinesis", kinesisURL, readPath(ProtocolCBOR)},
	} {
		b.Run(c.name, func(b *testing.B) {
			ac := awsconf.Config{Region: testenv.Region, KinesisEndpoint: c.url, AccessKeyID: testenv.AccessKeyID, SecretAccessKey: testenv.SecretAccessKey}
			var opts []func(*kinesis.Options)
			if c.opt != nil {
				opts = append(opts, c.opt)
			}
			kc, err := ac.Kinesis(context.Background(), opts...)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			redone := 0
			for b.Loop() {
				out, err := kc.GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: aws.String("it")})
				for err != nil && redone < 10 && strings.Contains(err.Error(), "use of closed network connection") {
					// The SDK's client on this machine now and then gets its
					// connection closed under a response (the SDK's decoder
					// too): done again, counted.
					redone++
					out, err = kc.GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: aws.String("it")})
				}
				if err != nil {
					b.Fatal(err)
				}
				if c.name == "sdk" {
					for i := range out.Records {
						out.Records[i].Data = escape(out.Records[i].Data)
					}
				}
				if len(out.Records) != len(recs) {
					b.Fatalf("%d records", len(out.Records))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
			b.ReportMetric(float64(redone), "redone")
		})
	}
}
