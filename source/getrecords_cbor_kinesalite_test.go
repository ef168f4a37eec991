package source

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/testkit/harness"
)

// recorder is an HTTP client that keeps the last response body.
type recorder struct {
	mu   sync.Mutex
	last []byte
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.last = b
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

func (r *recorder) body() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.last)
}

// compareShardRead is compareGetRecords for reads of a closed shard:
// at its end kinesalite's MillisBehindLatest is the time since the shard
// closed, which grows between the two calls.
func compareShardRead(t *testing.T, plain, cb *kinesis.Client, in *kinesis.GetRecordsInput) *kinesis.GetRecordsOutput {
	t.Helper()
	ctx := context.Background()
	want, err := plain.GetRecords(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cb.GetRecords(ctx, in)
	if err != nil {
		t.Fatalf("CBOR: %v", err)
	}
	for i := range want.Records {
		want.Records[i].Data = escape(want.Records[i].Data)
	}
	want.ResultMetadata, got.ResultMetadata = middleware.Metadata{}, middleware.Metadata{}
	if (want.NextShardIterator == nil) != (got.NextShardIterator == nil) {
		t.Fatalf("NextShardIterator: JSON %v, CBOR %v", want.NextShardIterator, got.NextShardIterator)
	}
	w := *want
	w.NextShardIterator = got.NextShardIterator
	if got.NextShardIterator == nil && w.MillisBehindLatest != nil && got.MillisBehindLatest != nil {
		if d := *got.MillisBehindLatest - *w.MillisBehindLatest; d < 0 || d > 5000 {
			t.Fatalf("shard end lag: JSON %d, CBOR %d", *w.MillisBehindLatest, *got.MillisBehindLatest)
		}
		w.MillisBehindLatest = got.MillisBehindLatest
	}
	if !reflect.DeepEqual(&w, got) {
		for i := range min(len(w.Records), len(got.Records)) {
			if a, b := w.Records[i], got.Records[i]; !reflect.DeepEqual(a, b) {
				t.Fatalf("record %d differs:\nJSON %#v\nCBOR %#v", i, a, b)
			}
		}
		t.Fatalf("outputs differ:\nJSON %+v\nCBOR %+v", w, *got)
	}
	return got
}

// expireIterator returns kinesalite's shard iterator it, made 10 minutes
// older: kinesalite encrypts "<14-digit ms>/stream/shard/seq/0..." with a
// fixed AES-256-CBC key and IV (kinesalite/db/index.js).
func expireIterator(t *testing.T, it string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(it)
	if err != nil || len(raw) < 8+16 || (len(raw)-8)%16 != 0 {
		t.Fatalf("iterator %q: %v", it, err)
	}
	key, _ := hex.DecodeString("1133a5a833666b49abf28c8ba302930f0b2fb240dccd43cf4dfbc0ca91f17751")
	iv, _ := hex.DecodeString("7bf139dbabbea2d9995d6fcae1dff7da")
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	pt := make([]byte, len(raw)-8)
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(pt, raw[8:])
	pad := int(pt[len(pt)-1])
	if pad < 1 || pad > 16 || len(pt) < 15 || pt[14] != '/' {
		t.Fatalf("iterator %q does not decrypt as kinesalite's", it)
	}
	pt = pt[:len(pt)-pad]
	copy(pt, fmt.Sprintf("%014d", time.Now().Add(-10*time.Minute).UnixMilli()))
	pad = 16 - len(pt)%16
	pt = append(pt, bytes.Repeat([]byte{byte(pad)}, pad)...)
	ct := make([]byte, len(pt))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, pt)
	return base64.StdEncoding.EncodeToString(append(raw[:8:8], ct...))
}

// TestGetRecordsKinesaliteCBOR: against kinesalite, the KCL's client over
// CBOR reads what the SDK reads over JSON (plain records, KPL aggregates,
// records starting with the KPL magic byte, a record of 66,000 bytes),
// through a split shard to its end (NextShardIterator absent), and gets
// the same errors of the same types for a bad and an expired iterator.
// With LINEAGEFLOW_WRITE_FIXTURES=1 it writes the bodies kinesalite sent to
// testdata/kinesalite-cbor (TestKinesaliteCBORFixtures reads them).
func TestGetRecordsKinesaliteCBOR(t *testing.T) {
	h := harness.ForTest(t, "getrecords-cbor")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := h.CreateStream(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var entries []types.PutRecordsRequestEntry
	for i := range 60 {
		var data []byte
		switch i % 4 {
		case 0:
			data = []byte(fmt.Sprintf(`{"i":%d}`, i))
		case 1:
			data = kpl.Marshal([]kpl.Record{{PartitionKey: "a", Data: []byte(fmt.Sprintf(`{"i":%d}`, i))}, {PartitionKey: "b", Data: []byte(`{}`)}})
		case 2:
			data = append([]byte{escapeByte}, strings.Repeat("x", i)...)
		default:
			data = bytes.Repeat([]byte{byte(i)}, 1+i*i*5)
		}
		if i == 33 {
			data = bytes.Repeat([]byte("y"), 66000) // a 4-byte length head
		}
		entries = append(entries, types.PutRecordsRequestEntry{Data: data, PartitionKey: aws.String(fmt.Sprintf("k%d", i%17))})
	}
	if out, err := h.Kinesis().PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(h.Stream), Records: entries}); err != nil || aws.ToInt32(out.FailedRecordCount) != 0 {
		t.Fatalf("PutRecords: %v", err)
	}
	parent, err := h.SplitShard(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ac := h.Env.AWS()
	jrec, crec := &recorder{}, &recorder{}
	plain, err := ac.Kinesis(ctx, func(o *kinesis.Options) { o.HTTPClient = jrec })
	if err != nil {
		t.Fatal(err)
	}
	cb, err := ac.Kinesis(ctx, readPath(ProtocolCBOR), func(o *kinesis.Options) { o.HTTPClient = crec })
	if err != nil {
		t.Fatal(err)
	}
	fixtures := map[string][]byte{}
	it, err := plain.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(h.Stream), ShardId: aws.String(parent),
		ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	iter, total, escaped, calls := it.ShardIterator, 0, 0, 0
	for ; iter != nil; calls++ {
		if calls > 50 {
			t.Fatal("no shard end after 50 calls")
		}
		cur := iter
		got := compareShardRead(t, plain, cb, &kinesis.GetRecordsInput{ShardIterator: cur, Limit: aws.Int32(25)})
		if calls == 0 {
			fixtures["records.json"], fixtures["records.cbor"] = jrec.body(), crec.body()
		}
		for _, r := range got.Records {
			if len(r.Data) > 1 && r.Data[0] == escapeByte && r.Data[1] == escapeByte {
				escaped++
			}
		}
		total += len(got.Records)
		iter = got.NextShardIterator
	}
	fixtures["shard-end.json"], fixtures["shard-end.cbor"] = jrec.body(), crec.body()
	wantEscaped := 0
	for _, e := range entries {
		if e.Data[0] == escapeByte {
			wantEscaped++
		}
	}
	if total != len(entries) || escaped != wantEscaped {
		t.Fatalf("read %d records (%d escaped) to the shard end, want %d (%d escaped)", total, escaped, len(entries), wantEscaped)
	}
	if !bytes.Contains(fixtures["shard-end.cbor"], []byte("NextShardIterator\xf7")) {
		t.Errorf("kinesalite's shard end no longer sends an undefined NextShardIterator: %x", fixtures["shard-end.cbor"])
	}

	// Errors: the same codes and messages, and the types the KCL tells apart.
	compareGetRecords(t, "bad iterator", plain, cb, true, func() *kinesis.GetRecordsInput {
		return &kinesis.GetRecordsInput{ShardIterator: aws.String("AAAAAAAAAAGbad")}
	})
	fixtures["bad-iterator.cbor"] = crec.body()
	_, err = cb.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String("AAAAAAAAAAGbad")})
	var ia *types.InvalidArgumentException
	if !errors.As(err, &ia) {
		t.Fatalf("bad iterator over CBOR: %T %v", err, err)
	}
	it, err = plain.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(h.Stream), ShardId: aws.String(parent),
		ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	old := expireIterator(t, aws.ToString(it.ShardIterator))
	compareGetRecords(t, "expired iterator", plain, cb, true, func() *kinesis.GetRecordsInput {
		return &kinesis.GetRecordsInput{ShardIterator: aws.String(old)}
	})
	fixtures["expired-iterator.cbor"] = crec.body()
	for name, c := range map[string]*kinesis.Client{"json": plain, "cbor": cb} {
		_, err = c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String(old)})
		var ee *types.ExpiredIteratorException
		if !errors.As(err, &ee) {
			t.Fatalf("expired iterator over %s: %T %v", name, err, err)
		}
	}

	if os.Getenv("LINEAGEFLOW_WRITE_FIXTURES") == "1" {
		dir := filepath.Join("testdata", "kinesalite-cbor")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range fixtures {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote %d fixtures to %s", len(fixtures), dir)
	}
}
