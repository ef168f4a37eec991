// Package collect is `lineageflow collect`: the OpenLineage HTTP endpoint
// in front of the Kinesis stream the workers read, for the producers that
// have no Kinesis transport (the Python client under Airflow and dbt-ol,
// the Go client, anything that speaks Marquez's API).
//
// POST /api/v1/lineage takes one event (201, as Marquez answers);
// POST /api/v1/lineage/batch takes a JSON array or NDJSON and answers per
// item (200 when every item is stored, 207 otherwise). Every event is
// checked by the worker's own decoder (lineage.Decoder) and event budget,
// so what a worker would dead-letter is refused here with a 4xx naming
// the reason and the field, and nothing of it reaches the stream.
//
// A 2xx means the event is in the stream: events of concurrent requests
// are batched for Linger, grouped by shard, KPL-aggregated and written with
// PutRecords, and each request is answered only once every one of its
// records is stored. When Kinesis does not take a record within the
// retries, or the in-flight budget (bytes, requests) is full, the answer
// is 503 or 429 with Retry-After, and the client sends the same bytes
// again: the workers' dedup makes a resent event harmless.
package collect

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/processor"
)

// Config configures a collector. Zero values of the optional fields are
// the defaults documented on each.
type Config struct {
	Stream string // Kinesis stream name (required)
	// Keys are the accepted API keys; none: no authentication (only on
	// loopback, or with -insecure-no-auth; see [CheckListen]).
	Keys []Key
	// Linger is how long the first event of a batch waits for others
	// before the PutRecords (default 5ms).
	Linger time.Duration
	// Aggregate KPL-aggregates the events of one shard within a batch
	// (the command's default: true).
	Aggregate bool
	// AggregateMaxSize bounds an aggregate's data (0: kpl.DefaultMaxSize).
	AggregateMaxSize int
	// Concurrency is the number of PutRecords requests in flight (default 8).
	Concurrency int
	// MaxBodyBytes bounds one event (decompressed), default and maximum
	// lineage.DefaultMaxBytes (1 MiB, the Kinesis record limit).
	MaxBodyBytes int
	// MaxBatchBytes bounds a batch request's body (decompressed), default 16 MiB.
	MaxBatchBytes int
	// MaxInflightBytes and MaxInflightRequests are the in-flight budget:
	// event bytes held and requests being served (default 64 MiB, 1024).
	// Beyond either, requests are answered 429 with Retry-After.
	MaxInflightBytes    int64
	MaxInflightRequests int
	// MaxEventDatasets is the worker's -max-event-datasets (default
	// processor.DefaultMaxEventDatasets): an event naming more inputs +
	// outputs is refused (too_many_datasets) as the worker would
	// dead-letter it.
	MaxEventDatasets int
	// MaxAttempts bounds the sends of one Kinesis record (default 8) and
	// AckTimeout the time spent on them (default 10s); past either the
	// events' requests get 503.
	MaxAttempts int
	AckTimeout  time.Duration
	// RetryBackoff is the first wait after a failed put (default 50ms),
	// doubled up to MaxRetryBackoff (default 2s). PutTimeout bounds one
	// PutRecords call (default 5s).
	RetryBackoff, MaxRetryBackoff, PutTimeout time.Duration
	// ShardRefresh is how often the shard map is reloaded (default 1m).
	ShardRefresh time.Duration
	Logger       *slog.Logger
}

func (c Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Linger, 5*time.Millisecond)
	def(&c.AckTimeout, 10*time.Second)
	def(&c.RetryBackoff, 50*time.Millisecond)
	def(&c.MaxRetryBackoff, 2*time.Second)
	def(&c.PutTimeout, 5*time.Second)
	def(&c.ShardRefresh, time.Minute)
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = lineage.DefaultMaxBytes
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = 16 << 20
	}
	if c.MaxInflightBytes == 0 {
		c.MaxInflightBytes = 64 << 20
	}
	if c.MaxInflightRequests == 0 {
		c.MaxInflightRequests = 1024
	}
	if c.MaxEventDatasets == 0 {
		c.MaxEventDatasets = processor.DefaultMaxEventDatasets
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 8
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports what to fix in c (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("collect: "+format, args...)) }
	if c.Stream == "" {
		add("-stream is required")
	}
	if c.Linger < 0 || c.Linger > time.Second {
		add("-linger %s: give 0s..1s (a few ms: every request waits it)", c.Linger)
	}
	if c.Concurrency < 1 || c.Concurrency > 256 {
		add("-put-concurrency %d: give 1..256", c.Concurrency)
	}
	if c.MaxBodyBytes < 1024 || c.MaxBodyBytes > lineage.DefaultMaxBytes {
		add("max body bytes %d: give 1024..%d (a Kinesis record is at most 1 MiB)", c.MaxBodyBytes, lineage.DefaultMaxBytes)
	}
	if c.MaxBatchBytes < c.MaxBodyBytes {
		add("-max-batch-bytes %d: at least the event limit %d", c.MaxBatchBytes, c.MaxBodyBytes)
	}
	if c.MaxInflightBytes < int64(c.MaxBatchBytes) {
		add("-max-inflight-bytes %d: at least -max-batch-bytes %d (else a full batch could never be taken)", c.MaxInflightBytes, c.MaxBatchBytes)
	}
	if c.MaxInflightRequests < 1 {
		add("-max-inflight-requests %d: give at least 1", c.MaxInflightRequests)
	}
	if c.MaxAttempts < 1 || c.AckTimeout < 0 || c.MaxEventDatasets < 1 {
		add("-put-attempts, -ack-timeout and the dataset budget must be positive")
	}
	return errors.Join(errs...)
}

// Server is a collector. Make it with [New], serve [Server.Handler], and
// call [Server.Close] once the HTTP server has shut down.
type Server struct {
	cfg Config
	w   *writer
	m   *metrics

	inflightBytes atomic.Int64
	inflightReqs  atomic.Int64
	draining      atomic.Bool
	stopRefresh   context.CancelFunc
	closeOnce     sync.Once
	decoders      sync.Pool
}

// New checks that the stream exists (DescribeStreamSummary, the one call
// beyond PutRecords the IAM policy allows) and loads its shard map
// (ListShards; without that permission, events are grouped by key).
func New(ctx context.Context, cfg Config, client Kinesis) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if _, err := client.DescribeStreamSummary(ctx, &describeInput{StreamName: &cfg.Stream}); err != nil {
		return nil, fmt.Errorf("collect: stream %q: %w", cfg.Stream, err)
	}
	shards, err := replay.LoadShardMap(ctx, client, cfg.Stream)
	if err != nil {
		cfg.Logger.Warn("no shard map (ListShards): aggregating per partition key", "err", err)
		shards = nil
	}
	s := &Server{cfg: cfg, m: newMetrics()}
	s.w = newWriter(cfg, client, s.m, shards)
	if shards != nil {
		rctx, cancel := context.WithCancel(context.Background())
		s.stopRefresh = cancel
		go s.w.refreshShards(rctx, cfg.ShardRefresh)
	}
	s.decoders.New = func() any { return &lineage.Decoder{MaxBytes: cfg.MaxBodyBytes} }
	return s, nil
}

// Drain marks the server as stopping: /readyz answers 503 (the load
// balancer stops sending), requests still arriving are served.
func (s *Server) Drain() { s.draining.Store(true) }

// Close waits for the events already submitted to be written (or failed),
// then stops the writer. Call it after http.Server.Shutdown returned (no
// handler running).
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.draining.Store(true)
		if s.stopRefresh != nil {
			s.stopRefresh()
		}
		s.w.close()
	})
}

// Handler returns the collector's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/lineage", s.route("lineage", false))
	mux.HandleFunc("/api/v1/lineage/batch", s.route("batch", true))
	health := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
	}
	mux.HandleFunc("GET /api/v1/lineage/health", health)
	mux.HandleFunc("GET /healthz", health)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, http.StatusNotFound, "not_found", "", "no such route: POST /api/v1/lineage, POST /api/v1/lineage/batch, GET /api/v1/lineage/health, /readyz, /metrics")
	})
	return mux
}

// apiError is the body of every refusal.
type apiError struct {
	Error  string `json:"error"`
	Reason string `json:"reason"`
	Field  string `json:"field,omitempty"`
}

func writeErr(w http.ResponseWriter, code int, reason, field, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(apiError{Error: msg, Reason: reason, Field: field})
}

// statusWriter remembers the status code for the metrics.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (s *Server) route(name string, batch bool) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		w := &statusWriter{ResponseWriter: rw}
		keyID := "none"
		defer func() {
			code := strconv.Itoa(w.code)
			s.m.requests.WithLabelValues(name, code).Inc()
			if len(s.cfg.Keys) > 0 {
				s.m.keyRequests.WithLabelValues(keyID, code).Inc()
			}
		}()
		if len(s.cfg.Keys) > 0 {
			k, ok := match(s.cfg.Keys, r.Header.Get("Authorization"))
			if !ok {
				keyID = "invalid"
				w.Header().Set("WWW-Authenticate", `Bearer realm="lineageflow collect"`)
				writeErr(w, http.StatusUnauthorized, "unauthorized", "Authorization", "send a valid API key as `Authorization: Bearer <key>` (the OpenLineage HTTP transport's api_key)")
				return
			}
			keyID = k.ID
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeErr(w, http.StatusMethodNotAllowed, "method_not_allowed", "", r.Method+" is not supported here: POST events")
			return
		}
		if msg := checkContentType(r.Header.Get("Content-Type"), batch); msg != "" {
			writeErr(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type", msg)
			return
		}
		enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
		if enc != "" && enc != "identity" && enc != "gzip" {
			writeErr(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Encoding", "Content-Encoding "+enc+": send gzip or none")
			return
		}
		if s.inflightReqs.Add(1) > int64(s.cfg.MaxInflightRequests) {
			s.inflightReqs.Add(-1)
			s.m.budgetFull.WithLabelValues("requests").Inc()
			s.busy(w, "the collector holds its most requests in flight (-max-inflight-requests)")
			return
		}
		s.m.inflightReqs.Inc()
		defer func() { s.inflightReqs.Add(-1); s.m.inflightReqs.Dec() }()

		limit := s.cfg.MaxBodyBytes
		if batch {
			limit = s.cfg.MaxBatchBytes
		}
		body, status, err := readBody(r.Body, enc == "gzip", limit)
		if err != nil {
			if status == http.StatusRequestEntityTooLarge {
				s.m.refused.WithLabelValues(string(lineage.ReasonOversized)).Inc()
				writeErr(w, status, string(lineage.ReasonOversized), "", err.Error())
			} else {
				writeErr(w, status, "bad_body", "", err.Error())
			}
			return
		}
		if enc == "" {
			enc = "identity"
		}
		s.m.encodings.WithLabelValues(enc).Inc()
		n := int64(len(body))
		if s.inflightBytes.Add(n) > s.cfg.MaxInflightBytes {
			s.inflightBytes.Add(-n)
			s.m.budgetFull.WithLabelValues("bytes").Inc()
			s.busy(w, "the collector holds its most event bytes in flight (-max-inflight-bytes)")
			return
		}
		s.m.inflightBytes.Add(float64(n))
		defer func() { s.inflightBytes.Add(-n); s.m.inflightBytes.Sub(float64(n)) }()

		if batch {
			s.serveBatch(w, body)
		} else {
			s.serveOne(w, body)
		}
	}
}

func (s *Server) busy(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", "1")
	writeErr(w, http.StatusTooManyRequests, "busy", "", msg+"; retry later")
}

func checkContentType(ct string, batch bool) string {
	if ct == "" {
		return "" // curl -d without -H, older clients: read as JSON
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil {
		switch {
		case mt == "application/json":
			return ""
		case batch && (mt == "application/x-ndjson" || mt == "application/jsonl" || mt == "application/json-seq"):
			return ""
		}
	}
	if batch {
		return "Content-Type " + ct + ": send application/json (one array) or application/x-ndjson"
	}
	return "Content-Type " + ct + ": send application/json"
}

// readBody reads at most limit bytes of (decompressed) body: beyond is
// 413, so a gzip bomb is refused after limit bytes of output.
func readBody(rc io.Reader, gz bool, limit int) ([]byte, int, error) {
	if gz {
		zr, err := gzip.NewReader(rc)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("Content-Encoding gzip: %w", err)
		}
		defer func() { _ = zr.Close() }()
		rc = zr
	}
	b, err := io.ReadAll(io.LimitReader(rc, int64(limit)+1))
	if err != nil {
		if gz {
			return nil, http.StatusBadRequest, fmt.Errorf("reading the gzip body: %w", err)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("reading the body: %w", err)
	}
	if len(b) > limit {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body is over the %d-byte limit (decompressed)", limit)
	}
	return b, 0, nil
}

// check runs the worker's decoder and event budget on one event: nil or
// the *lineage.DecodeError the worker would dead-letter it with.
func (s *Server) check(data []byte) *lineage.DecodeError {
	d := s.decoders.Get().(*lineage.Decoder)
	defer s.decoders.Put(d)
	var ev lineage.Event
	if err := d.Decode(data, &ev); err != nil {
		var de *lineage.DecodeError
		if errors.As(err, &de) {
			return de
		}
		return &lineage.DecodeError{Reason: lineage.ReasonNotJSON, Msg: err.Error()}
	}
	if n := len(ev.Inputs) + len(ev.Outputs); n > s.cfg.MaxEventDatasets {
		return &lineage.DecodeError{Reason: lineage.ReasonTooManyDatasets,
			Msg: fmt.Sprintf("%d inputs + outputs, over the workers' budget of %d (-max-event-datasets)", n, s.cfg.MaxEventDatasets)}
	}
	return nil
}

// recordSize refuses an event that the decoder accepts but Kinesis would
// not store: data and partition key together over the 1 MiB record limit
// (PutRecords would fail the whole request).
func recordSize(data []byte, pk string) *lineage.DecodeError {
	if n := len(data) + len(pk); n > kpl.MaxRecordSize {
		return &lineage.DecodeError{Reason: lineage.ReasonOversized,
			Msg: fmt.Sprintf("record is %d bytes with its partition key %q, over the %d-byte Kinesis record limit", n, pk, kpl.MaxRecordSize)}
	}
	return nil
}

func statusOf(de *lineage.DecodeError) int {
	if de.Reason == lineage.ReasonOversized {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

func (s *Server) refuse(de *lineage.DecodeError) {
	s.m.refused.WithLabelValues(string(de.Reason)).Inc()
	s.m.events.WithLabelValues("refused").Inc()
}

func (s *Server) serveOne(w http.ResponseWriter, body []byte) {
	if de := s.check(body); de != nil {
		s.refuse(de)
		writeErr(w, statusOf(de), string(de.Reason), de.Field, de.Error())
		return
	}
	pk := replay.PartitionKey(body)
	if de := recordSize(body, pk); de != nil {
		s.refuse(de)
		writeErr(w, statusOf(de), string(de.Reason), de.Field, de.Error())
		return
	}
	t := &ticket{errs: make([]error, 1)}
	t0 := time.Now()
	s.w.submit([]kpl.Record{{PartitionKey: pk, Data: body}}, t, []int{0})
	t.wg.Wait()
	s.m.ackSeconds.Observe(time.Since(t0).Seconds())
	if t.errs[0] != nil {
		s.m.events.WithLabelValues("unavailable").Inc()
		w.Header().Set("Retry-After", "1")
		writeErr(w, http.StatusServiceUnavailable, "unavailable", "", t.errs[0].Error()+"; retry later")
		return
	}
	s.m.events.WithLabelValues("stored").Inc()
	w.WriteHeader(http.StatusCreated)
}

// itemResult is one batch item's outcome.
type itemResult struct {
	Index  int    `json:"index"`
	Status int    `json:"status"`
	Reason string `json:"reason,omitempty"`
	Field  string `json:"field,omitempty"`
	Error  string `json:"error,omitempty"`
}

// splitBatch returns the items of a batch body: the elements of a JSON
// array, or the non-blank lines of NDJSON.
func splitBatch(body []byte) ([][]byte, *lineage.DecodeError) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var arr []json.RawMessage
		if err := json.Unmarshal(trimmed, &arr); err != nil {
			return nil, &lineage.DecodeError{Reason: lineage.ReasonNotJSON, Msg: "batch body is not a JSON array: " + err.Error()}
		}
		out := make([][]byte, len(arr))
		for i, a := range arr {
			out[i] = a
		}
		return out, nil
	}
	var out [][]byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			out = append(out, line)
		}
	}
	return out, nil
}

func (s *Server) serveBatch(w http.ResponseWriter, body []byte) {
	items, de := splitBatch(body)
	if de != nil {
		s.refuse(de)
		writeErr(w, http.StatusBadRequest, string(de.Reason), "", de.Error())
		return
	}
	if len(items) == 0 {
		writeErr(w, http.StatusBadRequest, string(lineage.ReasonMissingField), "", "the batch holds no event")
		return
	}
	res := make([]itemResult, len(items))
	var recs []kpl.Record
	var idx []int
	for i, data := range items {
		res[i].Index = i
		if de := s.check(data); de != nil {
			s.refuse(de)
			res[i].Status, res[i].Reason, res[i].Field, res[i].Error = statusOf(de), string(de.Reason), de.Field, de.Error()
			continue
		}
		pk := replay.PartitionKey(data)
		if de := recordSize(data, pk); de != nil {
			s.refuse(de)
			res[i].Status, res[i].Reason, res[i].Error = statusOf(de), string(de.Reason), de.Error()
			continue
		}
		recs = append(recs, kpl.Record{PartitionKey: pk, Data: data})
		idx = append(idx, i)
	}
	t := &ticket{errs: make([]error, len(items))}
	t0 := time.Now()
	s.w.submit(recs, t, idx)
	t.wg.Wait()
	s.m.ackSeconds.Observe(time.Since(t0).Seconds())
	code := http.StatusOK
	retry := false
	for _, i := range idx {
		if err := t.errs[i]; err != nil {
			res[i].Status, res[i].Reason, res[i].Error = http.StatusServiceUnavailable, "unavailable", err.Error()
			s.m.events.WithLabelValues("unavailable").Inc()
			retry = true
			continue
		}
		res[i].Status = http.StatusCreated
		s.m.events.WithLabelValues("stored").Inc()
	}
	for _, r := range res {
		if r.Status != http.StatusCreated {
			code = http.StatusMultiStatus
		}
	}
	if retry {
		w.Header().Set("Retry-After", "1")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		Results []itemResult `json:"results"`
	}{res})
}

// Serve serves on ln until ctx ends, then shuts down: it stops accepting,
// lets the requests it holds finish (their puts, their answers) within
// grace, and stops the writer.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.Drain()
	s.cfg.Logger.Info("stopping: finishing the requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	s.Close()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("collect: shutdown: %w", err)
	}
	return nil
}
