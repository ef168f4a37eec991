package collect_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/lineageflow/lineageflow/collect"
	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// standin returns a Kinesis client of kinesalite and a new stream on it.
func standin(t *testing.T, shards int) (*kinesis.Client, string) {
	t.Helper()
	ep := testenv.Kinesis(t)
	ac := awsconf.Config{Region: testenv.Region, KinesisEndpoint: ep, AccessKeyID: testenv.AccessKeyID, SecretAccessKey: testenv.SecretAccessKey}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := ac.Kinesis(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	stream := "collect-" + hex.EncodeToString(rnd[:])
	if _, err := replay.Run(ctx, c, replay.Config{Stream: stream, Shards: shards}, replay.FromSlice(nil)); err != nil {
		t.Fatal(err)
	}
	return c, stream
}

// server starts a collector on stream behind an httptest server.
func server(t *testing.T, c *kinesis.Client, cfg collect.Config) (*collect.Server, *httptest.Server) {
	t.Helper()
	srv, err := collect.New(context.Background(), cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return srv, hs
}

// readStream returns every user record of the stream (KPL aggregates
// de-aggregated), per shard in order.
func readStream(t *testing.T, c *kinesis.Client, stream string) (recs []kpl.Record, kinesisRecords int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ls, err := c.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range ls.Shards {
		it, err := c.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: sh.ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for iter != nil {
			out, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range out.Records {
				kinesisRecords++
				if kpl.IsAggregated(r.Data) {
					sub, err := kpl.Deaggregate(r.Data)
					if err != nil {
						t.Fatal(err)
					}
					recs = append(recs, sub...)
					continue
				}
				recs = append(recs, kpl.Record{PartitionKey: aws.ToString(r.PartitionKey), Data: r.Data})
			}
			if len(out.Records) == 0 && aws.ToInt64(out.MillisBehindLatest) == 0 {
				break
			}
			iter = out.NextShardIterator
		}
	}
	return recs, kinesisRecords
}

func event(runID, job string) string {
	return `{"eventType":"START","eventTime":"2026-01-02T03:04:05.678Z","producer":"https://example.com/test","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",` +
		`"run":{"runId":"` + runID + `"},"job":{"namespace":"collect-test","name":"` + job + `"},` +
		`"inputs":[{"namespace":"s3://lake","name":"in/` + job + `"}],"outputs":[{"namespace":"s3://lake","name":"out/` + job + `"}]}`
}

func runID(i int) string { return fmt.Sprintf("01930000-0000-7000-8000-%012d", i) }

// reply is what post returns of a response (its body read and closed).
type reply struct {
	StatusCode int
	Header     http.Header
}

func post(t *testing.T, url, ctype string, body []byte, hdr ...string) (reply, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header}, b
}

type apiError struct {
	Error, Reason, Field string
}

// TestMalformedEventsAreRefusedAtTheDoor sends a body of every dead-letter
// reason the worker can give an HTTP-borne event: each is answered 4xx
// with that reason (and field), the worker's decoder gives the same
// reason, and none of them reaches the stream; the good events sent among
// them all do. (kpl_corrupt is a Kinesis record's property: a body with
// the KPL magic is not JSON to the HTTP route, and refused as not_json.)
func TestMalformedEventsAreRefusedAtTheDoor(t *testing.T) {
	c, stream := standin(t, 1)
	_, hs := server(t, c, collect.Config{Stream: stream, MaxEventDatasets: 3})
	url := hs.URL + "/api/v1/lineage"
	good := event(runID(1), "ok")
	wide := strings.Replace(good, `"inputs":[`, `"inputs":[{"namespace":"a","name":"1"},{"namespace":"a","name":"2"},`, 1)
	cases := []struct {
		name, body string
		reason     lineage.Reason
		field      string
		code       int
	}{
		{"html", "<html>502 Bad Gateway</html>", lineage.ReasonNotJSON, "", 400},
		{"truncated", good[:len(good)-10], lineage.ReasonNotJSON, "", 400},
		{"kpl magic", "\xf3\x89\x9a\xc2garbage", lineage.ReasonNotJSON, "", 400},
		{"oversized", `{"pad":"` + strings.Repeat("x", 1<<20) + `"}`, lineage.ReasonOversized, "", 413},
		// 1 MiB exactly: the decoder takes it, Kinesis would not with its partition key.
		{"oversized with its key", strings.Replace(good, `"inputs"`, `"pad":"`+strings.Repeat("x", 1<<20-len(good)-9)+`","inputs"`, 1), lineage.ReasonOversized, "", 413},
		{"no runId", strings.Replace(good, `"runId":"`+runID(1)+`"`, `"runId":""`, 1), lineage.ReasonMissingField, "run.runId", 400},
		{"no job name", strings.Replace(good, `"name":"ok"`, `"nom":"ok"`, 1), lineage.ReasonMissingField, "job.name", 400},
		{"runId a number", strings.Replace(good, `"runId":"`+runID(1)+`"`, `"runId":42`, 1), lineage.ReasonWrongType, "run.runId", 400},
		{"inputs an object", strings.Replace(good, `"inputs":[{"namespace":"s3://lake","name":"in/ok"}]`, `"inputs":{}`, 1), lineage.ReasonWrongType, "inputs", 400},
		{"eventType", strings.Replace(good, `"START"`, `"BEGIN"`, 1), lineage.ReasonUnknownEventType, "eventType", 400},
		{"eventTime", strings.Replace(good, `2026-01-02T03:04:05.678Z`, `yesterday`, 1), lineage.ReasonInvalidValue, "eventTime", 400},
		{"array", `[` + good + `]`, lineage.ReasonUnknownFormat, "", 400},
		{"neither format", `{"hello":"world"}`, lineage.ReasonUnknownFormat, "", 400},
		{"too many datasets", wide, lineage.ReasonTooManyDatasets, "", 400},
	}
	if b := cases[4].body; len(b) != 1<<20 {
		t.Fatalf("the 1 MiB case is %d bytes", len(b))
	} else if _, err := lineage.Decode([]byte(b)); err != nil {
		t.Fatalf("the 1 MiB case does not decode: %v", err)
	}
	seen := map[lineage.Reason]bool{}
	for i, tc := range cases {
		resp, b := post(t, url, "application/json", []byte(tc.body))
		var e apiError
		if err := json.Unmarshal(b, &e); err != nil {
			t.Errorf("%s: %d, body %q is not the JSON error", tc.name, resp.StatusCode, b)
			continue
		}
		if resp.StatusCode != tc.code || e.Reason != string(tc.reason) || e.Field != tc.field {
			t.Errorf("%s: %d %+v, want %d reason %s field %q", tc.name, resp.StatusCode, e, tc.code, tc.reason, tc.field)
		}
		if tc.reason != lineage.ReasonTooManyDatasets && tc.name != "oversized with its key" {
			_, err := lineage.Decode([]byte(tc.body))
			var de *lineage.DecodeError
			if !errors.As(err, &de) || de.Reason != tc.reason || de.Field != tc.field {
				t.Errorf("%s: the worker's decoder says %v, the collector %s %q", tc.name, err, e.Reason, e.Field)
			}
		}
		seen[tc.reason] = true
		// A good event after each refusal: always stored.
		if resp, b := post(t, url, "application/json", []byte(event(runID(100+i), "good"))); resp.StatusCode != 201 {
			t.Fatalf("good event after %s: %d %s", tc.name, resp.StatusCode, b)
		}
	}
	for _, r := range []lineage.Reason{lineage.ReasonNotJSON, lineage.ReasonOversized, lineage.ReasonMissingField, lineage.ReasonWrongType,
		lineage.ReasonUnknownEventType, lineage.ReasonInvalidValue, lineage.ReasonUnknownFormat, lineage.ReasonTooManyDatasets} {
		if !seen[r] {
			t.Errorf("no case for the dead-letter reason %s", r)
		}
	}
	// The batch route answers per item, with the same reasons.
	var nd bytes.Buffer
	for _, tc := range cases[:3] {
		if !strings.Contains(tc.body, "\n") {
			nd.WriteString(strings.ReplaceAll(tc.body, "\n", " ") + "\n")
		}
	}
	nd.WriteString(event(runID(200), "batch") + "\n")
	resp, b := post(t, hs.URL+"/api/v1/lineage/batch", "application/x-ndjson", nd.Bytes())
	var br struct {
		Results []struct {
			Index, Status int
			Reason, Field string
		}
	}
	if err := json.Unmarshal(b, &br); err != nil || resp.StatusCode != http.StatusMultiStatus || len(br.Results) != 4 {
		t.Fatalf("batch: %d %s", resp.StatusCode, b)
	}
	for i, r := range br.Results {
		want := 400
		if i == 3 {
			want = 201
		}
		if r.Status != want || (want == 400 && r.Reason != string(lineage.ReasonNotJSON)) {
			t.Errorf("batch item %d: %+v", i, r)
		}
	}

	recs, _ := readStream(t, c, stream)
	if len(recs) != len(cases)+1 {
		t.Errorf("%d records in the stream, want the %d good events", len(recs), len(cases)+1)
	}
	for _, r := range recs {
		if _, err := lineage.Decode(r.Data); err != nil {
			t.Errorf("a refused event reached the stream: %v", err)
		}
		if want := replay.PartitionKey(r.Data); r.PartitionKey != want {
			t.Errorf("partition key %q, the transport's is %q", r.PartitionKey, want)
		}
	}
}

// TestProtocol: gzip (the clients' compression: gzip), a gzip bomb bounded
// by its decompressed size, 415, 405, an array batch answered 200, the
// probes and /metrics.
func TestProtocol(t *testing.T) {
	c, stream := standin(t, 2)
	_, hs := server(t, c, collect.Config{Stream: stream})
	url := hs.URL + "/api/v1/lineage"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, event(runID(1), "gz"))
	zw.Close()
	if resp, b := post(t, url, "application/json", gz.Bytes(), "Content-Encoding", "gzip"); resp.StatusCode != 201 {
		t.Errorf("gzip event: %d %s", resp.StatusCode, b)
	}
	gz.Reset()
	zw = gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte(" "), 8<<20)) // 8 MiB of spaces: ~8 KiB compressed
	zw.Close()
	resp, b := post(t, url, "application/json", gz.Bytes(), "Content-Encoding", "gzip")
	if resp.StatusCode != 413 || !strings.Contains(string(b), "oversized") {
		t.Errorf("gzip bomb: %d %s", resp.StatusCode, b)
	}
	if resp, b := post(t, url, "text/plain", []byte(event(runID(2), "x"))); resp.StatusCode != 415 || !strings.Contains(string(b), "Content-Type") {
		t.Errorf("text/plain: %d %s", resp.StatusCode, b)
	}
	if resp, b := post(t, url, "application/json", []byte(event(runID(2), "x")), "Content-Encoding", "br"); resp.StatusCode != 415 {
		t.Errorf("br: %d %s", resp.StatusCode, b)
	}
	if resp, err := http.Get(url); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != 405 {
			t.Errorf("GET %s: %d", url, resp.StatusCode)
		}
	}
	arr := "[" + event(runID(3), "a") + "," + event(runID(4), "b") + "]"
	if resp, b := post(t, hs.URL+"/api/v1/lineage/batch", "application/json", []byte(arr)); resp.StatusCode != 200 || strings.Count(string(b), `"status":201`) != 2 {
		t.Errorf("array batch: %d %s", resp.StatusCode, b)
	}
	for _, p := range []string{"/api/v1/lineage/health", "/readyz", "/metrics"} {
		resp, err := http.Get(hs.URL + p)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("GET %s: %v %v", p, resp.StatusCode, err)
		}
		if p == "/metrics" {
			b, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(b), `lineageflow_collect_events_total{result="stored"} 3`) {
				t.Errorf("/metrics lacks the 3 stored events:\n%s", b)
			}
		}
		resp.Body.Close()
	}
	recs, kr := readStream(t, c, stream)
	if len(recs) != 3 {
		t.Errorf("%d events in the stream, want 3", len(recs))
	}
	t.Logf("%d events in %d Kinesis records", len(recs), kr)
}

// TestAPIKeys: several keys valid at once (rotation), 401 without or
// with a wrong one, per-key counters in /metrics under the key's hash id,
// never the key.
func TestAPIKeys(t *testing.T) {
	c, stream := standin(t, 1)
	k1, k2 := "old-key-0123456789abcdef", "new-key-fedcba9876543210"
	keys, err := collect.ParseKeys(k1+","+k2, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect.ParseKeys("short", ""); err == nil {
		t.Error("a 5-character key was accepted")
	}
	_, hs := server(t, c, collect.Config{Stream: stream, Keys: keys})
	url := hs.URL + "/api/v1/lineage"
	for i, h := range [][]string{nil, {"Authorization", "Bearer wrong-key-0123456789"}, {"Authorization", k1}} {
		if resp, b := post(t, url, "application/json", []byte(event(runID(i), "k")), h...); resp.StatusCode != 401 || !strings.Contains(string(b), "Bearer") {
			t.Errorf("auth %v: %d %s", h, resp.StatusCode, b)
		}
	}
	for i, k := range []string{k1, k2, k2} {
		if resp, b := post(t, url, "application/json", []byte(event(runID(10+i), "k")), "Authorization", "Bearer "+k); resp.StatusCode != 201 {
			t.Errorf("key %d: %d %s", i, resp.StatusCode, b)
		}
	}
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := string(b)
	if strings.Contains(m, k1) || strings.Contains(m, k2) {
		t.Error("/metrics shows a key")
	}
	for _, want := range []string{
		fmt.Sprintf(`lineageflow_collect_key_requests_total{code="201",key=%q} 1`, keys[0].ID),
		fmt.Sprintf(`lineageflow_collect_key_requests_total{code="201",key=%q} 2`, keys[1].ID),
		`lineageflow_collect_key_requests_total{code="401",key="invalid"} 3`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestBudgetFull: with the in-flight request budget held by a slow
// client, the next request is answered 429 with Retry-After at once; once
// the slow one completes, requests pass again.
func TestBudgetFull(t *testing.T) {
	c, stream := standin(t, 1)
	_, hs := server(t, c, collect.Config{Stream: stream, MaxInflightRequests: 1})
	url := hs.URL + "/api/v1/lineage"
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	var slowCode int
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, err := http.Post(url, "application/json", pr)
		if err == nil {
			slowCode = resp.StatusCode
			resp.Body.Close()
		}
	}()
	body := event(runID(1), "slow")
	io.WriteString(pw, body[:10])
	// The slow request holds the budget once the gauge says so.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(hs.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "lineageflow_collect_inflight_requests 1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow request never held the budget")
		}
		time.Sleep(10 * time.Millisecond) // polling /metrics
	}
	resp, b := post(t, url, "application/json", []byte(event(runID(2), "fast")))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("over the budget: %d %s (Retry-After %q)", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	io.WriteString(pw, body[10:])
	pw.Close()
	wg.Wait()
	if slowCode != 201 {
		t.Errorf("the slow request: %d", slowCode)
	}
	if resp, b := post(t, url, "application/json", []byte(event(runID(2), "fast"))); resp.StatusCode != 201 {
		t.Errorf("after the slow one: %d %s", resp.StatusCode, b)
	}
}

// TestCheckListen: no keys beyond loopback is refused with what to set.
func TestCheckListen(t *testing.T) {
	keys, _ := collect.ParseKeys("0123456789abcdef0123", "")
	for _, tc := range []struct {
		addr     string
		keys     []collect.Key
		insecure bool
		ok       bool
	}{
		{"127.0.0.1:5000", nil, false, true}, {"[::1]:5000", nil, false, true}, {"localhost:5000", nil, false, true},
		{":5000", nil, false, false}, {"0.0.0.0:5000", nil, false, false}, {"10.0.0.7:5000", nil, false, false},
		{":5000", keys, false, true}, {":5000", nil, true, true},
	} {
		err := collect.CheckListen(tc.addr, tc.keys, tc.insecure)
		if (err == nil) != tc.ok {
			t.Errorf("%s keys=%d insecure=%v: %v", tc.addr, len(tc.keys), tc.insecure, err)
		}
		if err != nil && (!strings.Contains(err.Error(), "-api-keys-file") || !strings.Contains(err.Error(), "-insecure-no-auth")) {
			t.Errorf("the refusal does not say what to set: %v", err)
		}
	}
}

// TestKinesisFailureIs503: when Kinesis does not take the records within
// the retries (here the stream is deleted under the collector), the
// request is answered 503 with Retry-After, never 2xx.
func TestKinesisFailureIs503(t *testing.T) {
	c, stream := standin(t, 1)
	_, hs := server(t, c, collect.Config{Stream: stream, MaxAttempts: 2, RetryBackoff: 10 * time.Millisecond, AckTimeout: time.Second})
	url := hs.URL + "/api/v1/lineage"
	if resp, b := post(t, url, "application/json", []byte(event(runID(1), "before"))); resp.StatusCode != 201 {
		t.Fatalf("before: %d %s", resp.StatusCode, b)
	}
	if _, err := c.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(stream)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 2; ; i++ {
		resp, b := post(t, url, "application/json", []byte(event(runID(i), "after")))
		if resp.StatusCode == 503 {
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"reason":"unavailable"`) {
				t.Errorf("503 without Retry-After or reason: %v %s", resp.Header, b)
			}
			return
		}
		if resp.StatusCode != 201 {
			t.Fatalf("after the deletion: %d %s, want 503", resp.StatusCode, b)
		}
		if time.Now().After(deadline) {
			t.Fatal("still 201 30 s after the stream was deleted")
		}
		time.Sleep(100 * time.Millisecond) // kinesalite deletes the stream asynchronously: poll
	}
}
