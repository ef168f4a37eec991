package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/ops/httpserver"
	"github.com/lineageflow/lineageflow/ops/metrics"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/source"
)

// fakeWorker is a worker whose pipeline counters are real (a processor.Shard
// ran the records) and whose KCL side (running, leases, lag) the test sets.
type fakeWorker struct {
	st      *processor.Stats
	src     source.Stats
	mu      sync.Mutex
	running bool
	shards  []source.ShardStatus
}

func (f *fakeWorker) PipelineStats() *processor.Stats { return f.st }
func (f *fakeWorker) Stats() *source.Stats            { return &f.src }
func (f *fakeWorker) Running() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running
}
func (f *fakeWorker) Shards() []source.ShardStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]source.ShardStatus(nil), f.shards...)
}
func (f *fakeWorker) set(running bool, shards ...source.ShardStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running, f.shards = running, shards
}

type fakeSinkStats struct{ st sink.Stats }

func (f *fakeSinkStats) Stats() sink.Stats { return f.st }

// expected is what the generated stream must give, counted independently
// of the processor.
type expected struct {
	records, invalid, duplicates, valid int
}

// runPipeline runs gen records through a real Shard (Pebble in a temp dir)
// whose sink is the exporter's wrapper around a memory sink.
func runPipeline(t *testing.T, mx *metrics.Exporter, st *processor.Stats) (expected, *sink.Memory) {
	t.Helper()
	recs := gen.Generate(gen.Config{Seed: 7, Events: 3000, DuplicateShare: 0.2, MalformedShare: 0.03})
	var exp expected
	seen := map[string]bool{}
	injectedDup := 0
	for _, r := range recs {
		exp.records++
		if r.Malformed != "" {
			exp.invalid++
			continue
		}
		if seen[string(r.Data)] {
			exp.duplicates++
		} else {
			exp.valid++
		}
		seen[string(r.Data)] = true
		if r.Duplicate {
			injectedDup++
		}
	}
	if injectedDup != exp.duplicates || exp.duplicates == 0 {
		t.Fatalf("generator injected %d duplicates of valid records, byte-identical repeats: %d", injectedDup, exp.duplicates)
	}
	db, err := processor.OpenDB(t.TempDir(), checkpoint.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mem := sink.NewMemory()
	sh, err := processor.NewShard("shardId-000000000000", db, mx.WrapSink(mem), processor.PipelineConfig{
		Stats: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sh.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	arrival := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]processor.Record, 0, 100)
	for i, r := range recs {
		arrival = arrival.Add(7 * time.Millisecond)
		batch = append(batch, processor.Record{Seq: fmt.Sprintf("49590338271490256608559692538361570959215759%012d", i+1),
			Arrival: arrival, Data: r.Data})
		if len(batch) == cap(batch) || i == len(recs)-1 {
			if err := sh.Process(ctx, batch, false); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := sh.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return exp, mem
}

// scrape GETs /metrics through the real handler and parses the text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics is not valid Prometheus text: %v", err)
	}
	return mfs
}

// value returns the value of the series of name with the given labels
// (name=value pairs); ok false if absent.
func value(mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// AllMetrics lists every metric the README documents; the test fails if
// one is missing from a scrape.
var allMetrics = []string{
	"lineage_records_read_total", "lineage_records_skipped_total", "lineage_events_decoded_total",
	"lineage_duplicates_detected_total", "lineage_invalid_records_total", "lineage_lenient_records_total", "lineage_late_records_total", "lineage_names_normalized_total", "lineage_sink_parked_items_total",
	"lineage_windows_sealed_total", "lineage_edges_emitted_total", "lineage_vertices_emitted_total",
	"lineage_runs_expired_total", "lineage_refresh_lane_records_total", "lineage_checkpoints_total", "lineage_sink_errors_total",
	"lineage_outbox_acked_total", "lineage_graph_writes_total", "lineage_write_reduction_ratio",
	"lineage_sink_batch_duration_seconds", "lineage_sink_retries_total", "lineage_sink_requests_total",
	"lineage_sink_records_total", "lineage_sink_request_failures_total", "lineage_sink_vertex_cache_hits_total",
	"lineage_sink_coalesced_records_total", "lineage_sink_batches_total", "lineage_outbox_depth", "lineage_backpressured", "lineage_shard_backpressured",
	"lineage_barrier_duration_seconds", "lineage_barrier_duration_max_seconds", "lineage_worker_running",
	"lineage_leases_held", "lineage_shard_millis_behind_latest", "lineage_shard_checkpoint_age_seconds",
	"lineage_dedup_shared_claims_total", "lineage_dedup_shared_duplicates_total", "lineage_dedup_shared_fallback_records_total",
	"lineage_dedup_shared_degraded", "lineage_dedup_shared_claim_duration_seconds", "lineage_sink_unique_writes_total",
}

func TestMetricsFromPipeline(t *testing.T) {
	now := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	sinkStats := &fakeSinkStats{st: sink.Stats{Batches: 40, Requests: 90, Records: 9000, Failures: 1, CacheHits: 77, Coalesced: 31,
		Retries: map[sink.Code]uint64{sink.CodeConcurrentModification: 5, sink.CodeThrottling: 2}}}
	mx := metrics.New(metrics.Config{Sink: sinkStats, Now: func() time.Time { return now }, Process: true})
	st := &processor.Stats{}
	exp, mem := runPipeline(t, mx, st)
	w := &fakeWorker{st: st}
	w.src.Checkpoints.Store(11)
	w.src.LeasesLost.Store(2)
	w.src.HandoffsMissing.Store(3)
	w.src.HandoffsWaiting.Store(1)
	w.src.HandoffReadFails.Store(5)
	w.set(true,
		source.ShardStatus{ID: "shardId-000000000000", MillisBehindLatest: 1500, OutboxDepth: 3, Backpressured: true,
			LastCheckpoint: now.Add(-50 * time.Second), Uncheckpointed: now.Add(-42 * time.Second), Since: now.Add(-time.Hour)},
		source.ShardStatus{ID: "shardId-000000000001", MillisBehindLatest: -1, Since: now.Add(-5 * time.Second)})
	mx.SetWorker(w)
	srv := httptest.NewServer(httpserver.Handler(httpserver.Config{Metrics: mx.Handler()}))
	defer srv.Close()
	mfs := scrape(t, srv.URL)

	for _, name := range allMetrics {
		if _, ok := mfs[name]; !ok {
			t.Errorf("metric %s missing from /metrics", name)
		}
	}
	if _, ok := mfs["go_goroutines"]; !ok {
		t.Error("Go runtime collector missing")
	}
	vertices, edges := len(mem.Vertices()), len(mem.Edges())
	if vertices == 0 || edges == 0 {
		t.Fatalf("pipeline wrote %d vertices, %d edges", vertices, edges)
	}
	must := func(name string, want float64, labels ...string) {
		t.Helper()
		got, ok := value(mfs, name, labels...)
		if !ok {
			t.Errorf("%s%v: absent", name, labels)
		} else if got != want {
			t.Errorf("%s%v = %v, want %v", name, labels, got, want)
		}
	}
	must("lineage_records_read_total", float64(exp.records))
	must("lineage_duplicates_detected_total", float64(exp.duplicates))
	// The KCL side's figures come from source.Stats.
	must("lineage_checkpoints_total", 11)
	must("lineage_leases_lost_total", 2)
	must("lineage_handoffs_missing_total", 3)
	must("lineage_handoffs_waiting", 1)
	must("lineage_handoff_read_failures_total", 5)
	must("lineage_events_decoded_total", float64(exp.valid))
	var invalid float64
	for _, m := range mfs["lineage_invalid_records_total"].GetMetric() {
		if len(m.Label) != 1 || m.Label[0].GetName() != "reason" || m.Label[0].GetValue() == "" {
			t.Errorf("invalid records series without a reason: %v", m)
		}
		invalid += m.Counter.GetValue()
	}
	if invalid != float64(exp.invalid) || len(mfs["lineage_invalid_records_total"].GetMetric()) < 3 {
		t.Errorf("invalid records = %v over %d reasons, want %d over several reasons", invalid,
			len(mfs["lineage_invalid_records_total"].GetMetric()), exp.invalid)
	}
	must("lineage_edges_emitted_total", float64(st.EdgesEmitted.Load()))
	must("lineage_windows_sealed_total", float64(st.WindowsSealed.Load()))
	if v, _ := value(mfs, "lineage_windows_sealed_total"); v < 2 {
		t.Errorf("windows sealed = %v, want several (the stream spans %v)", v, 3000*7*time.Millisecond)
	}
	// Every batch was acknowledged through the wrapper: the graph writes
	// are the outbox contents, and at least the distinct graph elements.
	vw, _ := value(mfs, "lineage_graph_writes_total", "kind", "vertex")
	ew, _ := value(mfs, "lineage_graph_writes_total", "kind", "edge")
	if ew != float64(st.EdgesEmitted.Load()) || ew < float64(edges) || vw < float64(vertices) {
		t.Errorf("graph writes vertex=%v edge=%v; emitted edges %d; graph has %d vertices, %d edges",
			vw, ew, st.EdgesEmitted.Load(), vertices, edges)
	}
	ratio, _ := value(mfs, "lineage_write_reduction_ratio")
	// With a Gremlin sink the ratio counts what the sink sent.
	if want := float64(sinkStats.st.Records) / float64(exp.valid); ratio != want || ratio <= 0 {
		t.Errorf("write reduction = %v, want %v", ratio, want)
	}
	if n, _ := value(mfs, "lineage_sink_batch_duration_seconds", "result", "ok"); n != float64(st.OutboxAcked.Load()) || n == 0 {
		t.Errorf("sink latency observations = %v, want %d (acked outbox entries)", n, st.OutboxAcked.Load())
	}
	must("lineage_barrier_duration_seconds", float64(st.Barriers.Load()))
	bh := mfs["lineage_barrier_duration_seconds"].Metric[0].Histogram
	if len(bh.Bucket) != len(processor.BarrierBuckets)+1 || bh.GetSampleSum() <= 0 {
		t.Errorf("barrier histogram: %d buckets, sum %v", len(bh.Bucket), bh.GetSampleSum())
	}
	if mx, _ := value(mfs, "lineage_barrier_duration_max_seconds"); mx <= 0 || mx > bh.GetSampleSum() {
		t.Errorf("barrier max = %v (sum %v)", mx, bh.GetSampleSum())
	}
	// Sink counters, every known code present.
	must("lineage_sink_retries_total", 5, "code", string(sink.CodeConcurrentModification))
	must("lineage_sink_retries_total", 2, "code", string(sink.CodeThrottling))
	for _, c := range metrics.SinkCodes {
		if _, ok := value(mfs, "lineage_sink_retries_total", "code", string(c)); !ok {
			t.Errorf("retries series for code %s missing", c)
		}
	}
	must("lineage_sink_requests_total", 90)
	must("lineage_sink_vertex_cache_hits_total", 77)
	must("lineage_sink_coalesced_records_total", 31)
	// The KCL side.
	must("lineage_worker_running", 1)
	must("lineage_leases_held", 2)
	must("lineage_backpressured", 0) // the shard ran to completion: nothing blocked now
	must("lineage_outbox_depth", 3, "shard", "shardId-000000000000")
	must("lineage_outbox_depth", 0, "shard", "shardId-000000000001")
	must("lineage_shard_backpressured", 1, "shard", "shardId-000000000000")
	must("lineage_shard_millis_behind_latest", 1500, "shard", "shardId-000000000000")
	if _, ok := value(mfs, "lineage_shard_millis_behind_latest", "shard", "shardId-000000000001"); ok {
		t.Error("millis behind exported for a shard with no read yet")
	}
	must("lineage_shard_checkpoint_age_seconds", 42, "shard", "shardId-000000000000")
	must("lineage_shard_checkpoint_age_seconds", 0, "shard", "shardId-000000000001") // nothing waits for a checkpoint
}

// Before the worker exists (the sink is built first) a scrape answers
// with what is known, and says "not running".
func TestMetricsBeforeWorker(t *testing.T) {
	mx := metrics.New(metrics.Config{})
	srv := httptest.NewServer(mx.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := value(mfs, "lineage_worker_running"); !ok || v != 0 {
		t.Errorf("lineage_worker_running = %v, %v", v, ok)
	}
	if _, ok := mfs["lineage_sink_retries_total"]; ok {
		t.Error("sink retries exported without sink stats")
	}
}

// The shared dedup tier's counters reach the scrape.
func TestMetricsSharedDedup(t *testing.T) {
	mx := metrics.New(metrics.Config{})
	st := &processor.Stats{}
	st.SharedDedupClaims.Add(500)
	st.SharedDedupDuplicates.Add(7)
	st.SharedDedupFallbacks.Add(100)
	st.SharedDedupCalls.Add(5)
	st.SharedDedupNanos.Add(int64(10 * time.Millisecond))
	w := &fakeWorker{st: st}
	w.set(true)
	mx.SetWorker(w)
	srv := httptest.NewServer(mx.Handler())
	defer srv.Close()
	mfs := scrape(t, srv.URL)
	for name, want := range map[string]float64{"lineage_dedup_shared_claims_total": 500,
		"lineage_dedup_shared_duplicates_total": 7, "lineage_dedup_shared_fallback_records_total": 100,
		"lineage_dedup_shared_degraded": 0} {
		if v, ok := value(mfs, name); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	sm := mfs["lineage_dedup_shared_claim_duration_seconds"].GetMetric()[0].GetSummary()
	if sm.GetSampleCount() != 5 || sm.GetSampleSum() != 0.01 {
		t.Errorf("claim duration summary count %d sum %v, want 5 and 0.01", sm.GetSampleCount(), sm.GetSampleSum())
	}
}

type failingSink struct{ err error }

func (f *failingSink) WriteBatch(context.Context, sink.Batch) error { return f.err }
func (f *failingSink) Close(context.Context) error                  { return nil }

func TestWrapSinkPassesErrorsAndCountsOnlyAcks(t *testing.T) {
	mx := metrics.New(metrics.Config{})
	boom := &sink.Error{Code: sink.CodeConnection, Retriable: true, Err: errors.New("dial tcp: refused")}
	f := &failingSink{err: boom}
	w := mx.WrapSink(f)
	if err := w.WriteBatch(context.Background(), sink.Batch{Key: "k"}); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := mx.LastSinkError(); !errors.Is(err, boom) {
		t.Fatalf("LastSinkError = %v", err)
	}
	f.err = nil
	if err := w.WriteBatch(context.Background(), sink.Batch{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if _, err := mx.LastSinkError(); err != nil {
		t.Fatalf("LastSinkError after success = %v", err)
	}
	// A cancelled call says nothing about the graph.
	f.err = boom
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = w.WriteBatch(ctx, sink.Batch{})
	if _, err := mx.LastSinkError(); err != nil {
		t.Fatalf("LastSinkError after a cancelled call = %v", err)
	}
	srv := httptest.NewServer(mx.Handler())
	defer srv.Close()
	mfs := scrape(t, srv.URL)
	if n, _ := value(mfs, "lineage_sink_batch_duration_seconds", "result", "error"); n != 2 {
		t.Errorf("error observations = %v, want 2", n)
	}
	if n, _ := value(mfs, "lineage_sink_batch_duration_seconds", "result", "ok"); n != 1 {
		t.Errorf("ok observations = %v, want 1", n)
	}
}
