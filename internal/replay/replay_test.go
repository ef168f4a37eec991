package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func fastConfig() Config {
	return Config{
		Stream:          "test",
		Aggregate:       0.3,
		Concurrency:     4,
		RetryBackoff:    time.Millisecond,
		MaxRetryBackoff: 20 * time.Millisecond,
		PollInterval:    time.Millisecond,
		CreateTimeout:   time.Second,
	}
}

// checkNoLeak fails if goroutines started during the test outlive it.
func checkNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		for i := 0; i < 100; i++ {
			if runtime.NumGoroutine() <= before {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Errorf("%d goroutines before, %d after", before, runtime.NumGoroutine())
	})
}

func TestRunDelivers(t *testing.T) {
	tests := []struct {
		name      string
		shards    int
		aggregate float64
		throttle  float64
		noList    bool
		conc      int
	}{
		{"plain", 4, 0, 0, false, 4},
		{"aggregated share", 4, 0.3, 0, false, 4},
		{"all aggregated", 3, 1, 0, false, 2},
		{"throttled", 4, 0.3, 0.2, false, 4},
		{"heavily throttled, one lane", 2, 0.5, 0.5, false, 1},
		{"no shard map", 4, 0.5, 0.1, true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNoLeak(t)
			fake := newFake(tt.shards)
			fake.noListShards = tt.noList
			if tt.throttle > 0 {
				fake.fail = func(rng *rand.Rand, _ string) string {
					if rng.Float64() < tt.throttle {
						return throttled
					}
					return ""
				}
			}
			sent := testRecords(1, 3000, 200, 10, 3000)
			cfg := fastConfig()
			cfg.Aggregate, cfg.Concurrency = tt.aggregate, tt.conc
			var progress bytes.Buffer
			cfg.Progress = &progress
			sum, err := Run(context.Background(), fake, cfg, FromSlice(sent))
			if err != nil {
				t.Fatal(err)
			}
			t.Log(sum)
			aggs, _ := verifyDelivery(t, sent, fake.shardRecords(), func(k string) int { return shardOf(k, tt.shards) }, true)
			if sum.UserRecords != int64(len(sent)) || sum.AggregatedRecords != int64(aggs) {
				t.Fatalf("summary %+v; %d aggregates stored", sum, aggs)
			}
			var stored int64
			for _, s := range fake.shardRecords() {
				stored += int64(len(s))
			}
			if sum.Records != stored {
				t.Fatalf("Records=%d, %d stored", sum.Records, stored)
			}
			if tt.aggregate > 0 {
				share := float64(sum.AggregatedUserRecords) / float64(sum.UserRecords)
				if share < tt.aggregate-0.05 || share > tt.aggregate+0.05 {
					t.Fatalf("%.2f of the records aggregated, want %.2f", share, tt.aggregate)
				}
				if sum.AggregatedRecords == 0 || sum.AggregatedUserRecords/sum.AggregatedRecords < 2 && tt.aggregate == 1 {
					t.Fatalf("aggregates hold too few records: %+v", sum)
				}
			} else if sum.AggregatedRecords != 0 {
				t.Fatal("aggregated with Aggregate=0")
			}
			if tt.throttle > 0 && (sum.Throttles == 0 || sum.Retries < sum.Throttles) {
				t.Fatalf("throttles not counted: %+v", sum)
			}
			if tt.throttle == 0 && sum.Retries != 0 {
				t.Fatalf("retries without failures: %+v", sum)
			}
			if tt.noList != strings.Contains(progress.String(), "one partition key only") {
				t.Fatalf("progress: %q", progress.String())
			}
			if tt.noList && sum.Shards != 0 || !tt.noList && sum.Shards != tt.shards {
				t.Fatalf("Shards=%d", sum.Shards)
			}
			if fake.maxRecords > MaxBatchRecords || fake.maxBytes > MaxBatchBytes {
				t.Fatalf("request of %d records, %d bytes", fake.maxRecords, fake.maxBytes)
			}
		})
	}
}

// TestBatchLimits sends records that fill requests by count and by bytes.
func TestBatchLimits(t *testing.T) {
	tests := []struct {
		name               string
		recs               []Record
		wantRecs, minBytes int
	}{
		{"by count", testRecords(2, 3000, 3000, 10, 20), MaxBatchRecords, 0},
		{"by bytes", testRecords(3, 40, 40, 900_000, MaxRecordBytes-20), 0, 4 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(2)
			cfg := fastConfig()
			cfg.Aggregate, cfg.Concurrency, cfg.Linger = 0, 1, time.Second
			if _, err := Run(context.Background(), fake, cfg, FromSlice(tt.recs)); err != nil {
				t.Fatal(err)
			}
			verifyDelivery(t, tt.recs, fake.shardRecords(), func(k string) int { return shardOf(k, 2) }, true)
			if fake.maxRecords > MaxBatchRecords || fake.maxBytes > MaxBatchBytes ||
				fake.maxRecords < tt.wantRecs || fake.maxBytes < tt.minBytes {
				t.Fatalf("largest request: %d records, %d bytes", fake.maxRecords, fake.maxBytes)
			}
		})
	}
}

// TestOrderUnderPartialFailures: with a hot key and records failing at
// random inside requests, the default keeps per-key order; LooseOrder
// (several records of a key per request) does not, which is why it is not
// the default.
func TestOrderUnderPartialFailures(t *testing.T) {
	for _, loose := range []bool{false, true} {
		t.Run(fmt.Sprintf("loose=%v", loose), func(t *testing.T) {
			fake := newFake(2)
			fake.fail = func(rng *rand.Rand, _ string) string {
				if rng.IntN(4) == 0 {
					return "InternalFailure"
				}
				return ""
			}
			sent := testRecords(4, 2000, 5, 10, 100)
			cfg := fastConfig()
			cfg.Aggregate, cfg.Concurrency, cfg.LooseOrder = 0.2, 1, loose
			sum, err := Run(context.Background(), fake, cfg, FromSlice(sent))
			if err != nil {
				t.Fatal(err)
			}
			_, bad := verifyDelivery(t, sent, fake.shardRecords(), func(k string) int { return shardOf(k, 2) }, !loose)
			t.Logf("%d out of order; %s", bad, sum)
			if loose && bad == 0 {
				t.Fatal("LooseOrder kept order: the test does not exercise partial failures")
			}
			if sum.Throttles != 0 || sum.Retries == 0 {
				t.Fatalf("summary %+v", sum)
			}
		})
	}
}

func TestCreateStream(t *testing.T) {
	ctx := context.Background()
	t.Run("created and waited for", func(t *testing.T) {
		fake := newFake(0)
		fake.creating = 3
		cfg := fastConfig()
		cfg.Shards = 3
		sum, err := Run(ctx, fake, cfg, FromSlice(testRecords(5, 100, 10, 10, 100)))
		if err != nil {
			t.Fatal(err)
		}
		if fake.creates != 1 || fake.shards != 3 || sum.Shards != 3 || fake.creating != 0 {
			t.Fatalf("creates=%d shards=%d summary shards=%d creating=%d", fake.creates, fake.shards, sum.Shards, fake.creating)
		}
	})
	t.Run("existing stream kept", func(t *testing.T) {
		fake := newFake(5)
		cfg := fastConfig()
		cfg.Shards = 2
		sum, err := Run(ctx, fake, cfg, FromSlice(testRecords(5, 100, 10, 10, 100)))
		if err != nil || fake.creates != 0 || sum.Shards != 5 {
			t.Fatalf("err=%v creates=%d shards=%d", err, fake.creates, sum.Shards)
		}
	})
	t.Run("missing without Shards", func(t *testing.T) {
		_, err := Run(ctx, newFake(0), fastConfig(), FromSlice(nil))
		if err == nil || !strings.Contains(err.Error(), "set Shards") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("never active", func(t *testing.T) {
		fake := newFake(0)
		fake.creating = 1 << 30
		cfg := fastConfig()
		cfg.Shards, cfg.CreateTimeout = 1, 50*time.Millisecond
		_, err := Run(ctx, fake, cfg, FromSlice(nil))
		if err == nil || !strings.Contains(err.Error(), "CREATING") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestFailures(t *testing.T) {
	ctx := context.Background()
	recs := testRecords(6, 500, 20, 10, 100)
	t.Run("non-retryable request error", func(t *testing.T) {
		checkNoLeak(t)
		fake := newFake(2)
		fake.requestErr = func() error { return apiErr("AccessDeniedException") }
		_, err := Run(ctx, fake, fastConfig(), FromSlice(recs))
		if err == nil || !strings.Contains(err.Error(), "AccessDenied") || fake.requests > fastConfig().withDefaults().Concurrency {
			t.Fatalf("got %v after %d requests", err, fake.requests)
		}
	})
	t.Run("retryable request errors", func(t *testing.T) {
		fake := newFake(2)
		var mu sync.Mutex
		n := 0
		fake.requestErr = func() error {
			mu.Lock()
			defer mu.Unlock()
			if n++; n%3 != 0 {
				return apiErr("InternalFailure")
			}
			return nil
		}
		sum, err := Run(ctx, fake, fastConfig(), FromSlice(recs))
		if err != nil || sum.Retries == 0 {
			t.Fatalf("err=%v summary %+v", err, sum)
		}
		verifyDelivery(t, recs, fake.shardRecords(), func(k string) int { return shardOf(k, 2) }, true)
	})
	t.Run("always throttled", func(t *testing.T) {
		checkNoLeak(t)
		fake := newFake(2)
		fake.fail = func(*rand.Rand, string) string { return throttled }
		cfg := fastConfig()
		cfg.MaxAttempts = 4
		sum, err := Run(ctx, fake, cfg, FromSlice(recs))
		if err == nil || !strings.Contains(err.Error(), "failed 4 times") {
			t.Fatalf("got %v", err)
		}
		if sum.Throttles < 4 || sum.UserRecords != 0 {
			t.Fatalf("summary %+v", sum)
		}
	})
	t.Run("oversized record", func(t *testing.T) {
		bad := append(append([]Record(nil), recs[:10]...), Record{PartitionKey: "k", Data: make([]byte, MaxRecordBytes)})
		_, err := Run(ctx, newFake(2), fastConfig(), FromSlice(bad))
		if err == nil || !strings.Contains(err.Error(), "record 11") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("bad partition key", func(t *testing.T) {
		_, err := Run(ctx, newFake(2), fastConfig(), FromSlice([]Record{{PartitionKey: "", Data: []byte("x")}}))
		if err == nil || !strings.Contains(err.Error(), "partition key") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("source error", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := Run(ctx, newFake(2), fastConfig(), SourceFunc(func(ctx context.Context, emit func(Record) error) error {
			if err := emit(recs[0]); err != nil {
				return err
			}
			return boom
		}))
		if !errors.Is(err, boom) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		checkNoLeak(t)
		fake := newFake(2)
		fake.fail = func(*rand.Rand, string) string { return throttled }
		ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := Run(ctx, fake, fastConfig(), FromSlice(recs))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestRate(t *testing.T) {
	fake := newFake(2)
	cfg := fastConfig()
	cfg.Rate = 2000
	var progress syncBuffer
	cfg.Progress, cfg.ProgressEvery = &progress, 50*time.Millisecond
	recs := testRecords(7, 1000, 50, 10, 100)
	sum, err := Run(context.Background(), fake, cfg, FromSlice(recs))
	if err != nil {
		t.Fatal(err)
	}
	// 1000 records at 2000/s with a 100-record burst: at least 450 ms.
	if sum.Duration < 400*time.Millisecond || sum.RecordsPerSecond() > 2300 {
		t.Fatalf("%s", sum)
	}
	out := progress.String()
	if !strings.Contains(out, "/1000 (") || !strings.Contains(out, "records/s") {
		t.Fatalf("progress: %q", out)
	}
	t.Logf("%s\n%s", sum, out)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	var slept time.Duration
	l := newLimiter(100, func() time.Time { return now }, func(_ context.Context, d time.Duration) error {
		slept += d
		now = now.Add(d)
		return nil
	})
	ctx := context.Background()
	for i := 0; i < 5; i++ { // burst of 5 (100/s * 50 ms)
		l.wait(ctx)
	}
	if slept != 0 {
		t.Fatalf("burst slept %v", slept)
	}
	for i := 0; i < 100; i++ {
		l.wait(ctx)
	}
	if slept < 990*time.Millisecond || slept > 1010*time.Millisecond {
		t.Fatalf("100 events at 100/s slept %v", slept)
	}
	// Idle time earns at most the burst.
	now = now.Add(time.Hour)
	slept = 0
	for i := 0; i < 15; i++ {
		l.wait(ctx)
	}
	if slept < 99*time.Millisecond || slept > 101*time.Millisecond {
		t.Fatalf("after idle, 15 events slept %v, want 100ms", slept)
	}
	// Rate 0: no wait.
	unlimited := newLimiter(0, nil, nil)
	if err := unlimited.wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Stream: "s"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no stream", func(c *Config) { c.Stream = "" }, "stream name"},
		{"bad stream", func(c *Config) { c.Stream = "a b" }, "stream name"},
		{"negative shards", func(c *Config) { c.Shards = -1 }, "shards"},
		{"negative rate", func(c *Config) { c.Rate = -1 }, "rate"},
		{"aggregate > 1", func(c *Config) { c.Aggregate = 1.5 }, "aggregate"},
		{"aggregate NaN", func(c *Config) { c.Aggregate = math.NaN() }, "aggregate"},
		{"tiny aggregates", func(c *Config) { c.AggregateMaxSize = 10 }, "aggregate max size"},
		{"concurrency", func(c *Config) { c.Concurrency = -2 }, "concurrency"},
		{"attempts", func(c *Config) { c.MaxAttempts = -1 }, "max attempts"},
		{"duration", func(c *Config) { c.ProgressEvery = -time.Second }, "progress interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error about %q", err, tt.want)
			}
			if _, rerr := Run(context.Background(), newFake(1), c, FromSlice(nil)); rerr == nil {
				t.Fatal("Run took an invalid config")
			}
		})
	}
}

func TestPartitionKey(t *testing.T) {
	long := strings.Repeat("é", 300)
	tests := []struct {
		name, data, want string
	}{
		{"run event", `{"eventType":"START","run":{"runId":"r"},"job":{"namespace":"ns","name":"j"}}`, "run:ns/j"},
		{"parent job", `{"run":{"runId":"r","facets":{"parent":{"run":{"runId":"p"},"job":{"namespace":"airflow","name":"dag.task"}}}},"job":{"namespace":"spark","name":"app.exec"}}`, "run:airflow/dag.task"},
		{"root job first", `{"run":{"facets":{"parent":{"job":{"namespace":"a","name":"task"},"root":{"job":{"namespace":"a","name":"dag"}}}}},"job":{"namespace":"s","name":"x"}}`, "run:a/dag"},
		{"null facets", `{"run":{"runId":"r","facets":null},"job":{"namespace":"ns","name":"j"}}`, "run:ns/j"},
		{"job event", `{"job":{"namespace":"ns","name":"j"},"inputs":[]}`, "job:ns/j"},
		{"dataset event", `{"dataset":{"namespace":"s3://b","name":"p/q"}}`, "dataset:s3://b/p/q"},
		{"unicode kept", `{"job":{"namespace":"ß","name":"x/y:z"}}`, "job:ß/x/y:z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PartitionKey([]byte(tt.data)); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	for _, bad := range []string{`not json`, `{"run":{"runId":"r"}}`, `[1,2]`, `{"job":"x"}`, `{}`, `{"eventType":"START"`} {
		got := PartitionKey([]byte(bad))
		if !strings.HasPrefix(got, "malformed:") || got != PartitionKey([]byte(bad)) {
			t.Fatalf("%q: key %q", bad, got)
		}
	}
	if PartitionKey([]byte("a")) == PartitionKey([]byte("b")) {
		t.Fatal("malformed keys do not spread")
	}
	k := PartitionKey([]byte(`{"job":{"namespace":"n","name":"` + long + `"}}`))
	k2 := PartitionKey([]byte(`{"job":{"namespace":"n","name":"` + long + `x"}}`))
	if utf8.RuneCountInString(k) != 256 || k == k2 || !strings.HasPrefix(k, "job:n/éé") {
		t.Fatalf("long key %q (%d characters)", k, utf8.RuneCountInString(k))
	}
}

func TestFromNDJSON(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.ndjson")
	b := filepath.Join(dir, "b.ndjson")
	longLine := `{"job":{"namespace":"n","name":"` + strings.Repeat("x", 3<<20) + `"}}`
	os.WriteFile(a, []byte("{\"job\":{\"namespace\":\"n\",\"name\":\"1\"}}\r\n\n   \nnot json\n"+longLine+"\n"), 0o644)
	os.WriteFile(b, []byte(`{"dataset":{"namespace":"d","name":"2"}}`), 0o644) // no final newline
	src := FromNDJSON(a, b)
	if n := src.(Sized).Len(); n != 4 {
		t.Fatalf("Len %d, want 4", n)
	}
	var got []Record
	err := src.Records(context.Background(), func(r Record) error { got = append(got, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].PartitionKey != "job:n/1" || string(got[0].Data) != `{"job":{"namespace":"n","name":"1"}}` ||
		!strings.HasPrefix(got[1].PartitionKey, "malformed:") || string(got[1].Data) != "not json" ||
		len(got[2].Data) != len(longLine) || got[3].PartitionKey != "dataset:d/2" {
		t.Fatalf("got %d records: %q %q %d %q", len(got), got[0].PartitionKey, got[1].Data, len(got[2].Data), got[3].PartitionKey)
	}
	if err := FromNDJSON(filepath.Join(dir, "missing")).Records(context.Background(), func(Record) error { return nil }); err == nil {
		t.Fatal("missing file")
	}
	if FromNDJSON(filepath.Join(dir, "missing")).(Sized).Len() != -1 {
		t.Fatal("Len of a missing file")
	}
}
