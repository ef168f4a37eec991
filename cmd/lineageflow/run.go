package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/lineageflow/lineageflow/archive/reader"
	"github.com/lineageflow/lineageflow/archive/s3store"
	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/internal/cli"
	"github.com/lineageflow/lineageflow/internal/dedupredis"
	"github.com/lineageflow/lineageflow/internal/redact"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/source"
	"github.com/lineageflow/lineageflow/window"
)

func runWorker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var (
		stream      = fs.String("stream", "", "Kinesis stream name (required)")
		app         = fs.String("app", "lineageflow", "KCL application name (names the DynamoDB lease table)")
		workerID    = fs.String("worker-id", "", "worker id in the lease table (default host-pid)")
		region      = fs.String("region", "", "AWS region (required; the KCL does not read AWS_REGION)")
		kinEP       = fs.String("kinesis-endpoint", "", "Kinesis endpoint URL override (e.g. http://127.0.0.1:4567)")
		ddbEP       = fs.String("dynamodb-endpoint", "", "DynamoDB endpoint URL override (e.g. http://127.0.0.1:4568)")
		accessKey   = fs.String("access-key-id", "", "static AWS access key id (stand-ins); empty: the SDK default chain")
		secretKey   = fs.String("secret-access-key", "", "static AWS secret access key: set it through the environment (LINEAGEFLOW_SECRET_ACCESS_KEY), never on the command line (a warning says so); empty: the SDK default chain")
		dataDir     = fs.String("data-dir", "", "directory of the worker's Pebble state (required; one worker per directory)")
		windowSize  = fs.Duration("window", window.DefaultSize, "tumbling window size")
		lateness    = fs.Duration("lateness", window.DefaultLateness, "allowed lateness before a window seals")
		timeSource  = fs.String("time-source", string(processor.TimeArrival), "window timestamp: arrival (Kinesis ApproximateArrivalTimestamp) or event (eventTime)")
		policy      = fs.String("policy", string(semantics.PolicyStrict), "commit policy: strict (COMPLETE first) or any")
		runs        = fs.String("runs", string(semantics.RunsAll), "run history: all (a Run vertex per run, naming its job, parent run and the datasets it read and wrote: about one graph write per run and window), failed (only for the runs that fail) or none (lineage only)")
		columns     = fs.Bool("column-lineage", true, "column lineage: DatasetField vertices, FIELD_OF and COLUMN_DERIVES from columnLineage facets (about as many graph writes as dataset lineage on Spark-like workloads; false: none)")
		refreshWin  = fs.Duration("refresh-window", defaultRefresh, "refresh lane: stamp-only refreshes (an unchanged facet property's eventTime, the lastSeen of a known FIELD_OF, ALIAS_OF, Job CHILD_OF or COLUMN_DERIVES edge) are collapsed over windows of this size, a whole multiple of -window greater than it (unset with a -window that 30s is not such a multiple of: 3 windows); new or changed content still goes in the next window, and dataset lineage and runs never take the lane. Fewer graph writes; a crash replays up to this much more. 0: off")
		runTimeout  = fs.Duration("run-timeout", 0, "runs are forgotten after this long without events (arrival time; open ones without edges, counted). Default 1h; with -run-store, a retention of the stored runs (DynamoDB TTL too), default 72h")
		runStore    = fs.String("run-store", "dynamodb", "where open-run state is shared: dynamodb (the default; table -run-store-table on the KCL's DynamoDB, created if missing: written at every barrier, loaded by a shard's next owner; open runs never pin the checkpoint) or none (the opt-out: only the worker's Pebble, an open run pins its shard's checkpoint until it ends or -run-timeout passes, and a moved shard replays from the oldest open run)")
		runStoreTab = fs.String("run-store-table", "", "with -run-store dynamodb: the table (default <app>-runs)")
		outboxCap   = fs.Int("outbox-cap", processor.DefaultOutboxCap, "unacknowledged outbox entries per shard before sealing blocks (backpressure)")
		maxRecBytes = fs.Int("max-record-bytes", lineage.DefaultMaxBytes, "largest record decoded, in bytes (1024..1048576); larger ones are dead letters (oversized). Default: the Kinesis record limit, 1 MiB")
		maxName     = fs.Int("max-name-bytes", lineage.DefaultMaxNameBytes, "largest namespace, name or run id, in bytes (64..131072); longer ones make the event a dead letter (name_too_long), so that no single item exceeds a graph write request")
		maxFuture   = fs.Duration("max-event-future", lineage.DefaultMaxEventFuture, "an eventTime later than the record's arrival plus this, or before 1970, makes the event a dead letter (event_time_out_of_range), so that no event wins last-writer-by-eventTime for ever (negative: no upper bound)")
		maxEvDS     = fs.Int("max-event-datasets", processor.DefaultMaxEventDatasets, "budget: inputs + outputs of one event; beyond, the event is a dead letter (too_many_datasets)")
		maxRunDS    = fs.Int("max-run-datasets", processor.DefaultMaxRunDatasets, "budget: inputs + outputs one run accumulates; beyond, new datasets are left out of the run (counted: lineage_budget_total{budget=\"run_datasets\"})")
		maxEmEdges  = fs.Int("max-emission-edges", processor.DefaultMaxEmissionEdges, "budget: edges of one emission (an event or a run's commit); beyond, the DERIVES edges are left out (counted: emission_edges)")
		maxDLBar    = fs.Int("max-dead-letters-per-barrier", processor.DefaultMaxDeadLettersPerBarrier, "budget: dead letters held in memory; reaching it forces a barrier, inside a GetRecords batch")
		maxRuns     = fs.Int("max-runs", processor.DefaultMaxRuns, "budget: runs held per shard (about 800 B each); beyond, the least recently active are forgotten (open ones counted: runs_evicted)")
		dlRetention = fs.Duration("dead-letter-retention", processor.DefaultDeadLetterRetention, "dead letters older than this (arrival time) are deleted, counted (negative: kept forever)")
		dlMaxBytes  = fs.Int64("dead-letter-max-bytes", processor.DefaultDeadLetterMaxBytes, "dead-letter bytes kept per shard; beyond, the oldest are deleted, counted (negative: no bound)")
		dedupMax    = fs.Int64("dedup-max-bytes", processor.DefaultDedupMaxBytes, "budget: memory of a shard's dedup old tier (4 B a fingerprint slot; the recent tier is a fixed ~16 MiB); beyond, lookups go to Pebble (slower, nothing forgotten; counted: dedup_memory, dedup_spilled_lookups). Negative: no bound")
		parkAfter   = fs.Int("park-after", processor.DefaultParkAfter, "a sink batch refused this many times in a row with a non-retriable error is split until the refused items are found: only they are parked (kept, counted, listed by deadletters -parked, written again by deadletters -replay-parked), the rest is written and the shard goes on")
		maxKeys     = fs.Int("max-open-keys", processor.DefaultMaxOpenKeys, "in-memory window keys between barriers (a barrier is forced beyond)")
		sinkSpec    = fs.String("sink", "log", "where sealed windows go: memory | log | shadow (compute and count what a gremlin sink would send, write nothing) | file:<path> (NDJSON of acknowledged batches) | gremlin:<ws-url> (Neptune/Gremlin Server)")
		leaseSteal  = fs.Bool("lease-stealing", false, "take leases from busier workers")
		failover    = fs.Duration("failover-time", source.DefaultFailoverTime, "lease lifetime without renewal")
		shardSync   = fs.Duration("shard-sync", source.DefaultShardSync, "shard/lease sync interval (the KCL takes at most one new lease per sync)")
		maxLeases   = fs.Int("max-leases", 0, "most shards this worker holds (0: no cap)")
		idleReads   = fs.Duration("idle-between-reads", source.DefaultIdleBetweenReads, "pause after an empty GetRecords")
		maxRecords  = fs.Int("max-records", source.DefaultMaxRecords, "records per GetRecords call (1..10000); against kinesalite, which does not cap a response at 10 MB as Kinesis does, use about 2500 (the KCL sleeps 1 s per 2 MB read)")
		kinProto    = fs.String("kinesis-protocol", string(source.DefaultKinesisProtocol), "wire format of GetRecords: cbor (application/x-amz-cbor-1.1: record data as raw bytes, no base64; kinesalite still sends base64 text) or json (application/x-amz-json-1.1)")
		grace       = fs.Duration("shutdown-grace", source.DefaultShutdownGrace, "on SIGTERM: how long shards may take to seal, drain and checkpoint")
		fromLatest  = fs.Bool("from-latest", false, "start shards without a checkpoint at LATEST (default TRIM_HORIZON)")
		logFormat   = fs.String("log-format", "text", "log format: json or text")
		logLevel    = fs.String("log-level", "info", "log level: debug, info, warn, error")
		statsPeriod = fs.Duration("stats-every", 10*time.Second, "log the counters this often (0: never)")
		httpAddr    = fs.String("http-addr", "127.0.0.1:9090", "listen address of /metrics, /healthz and /readyz (empty: no HTTP server); loopback by default: a deployment that scrapes or probes from outside sets it (e.g. :9090)")
		dedupSpec   = fs.String("dedup", "local", "dedup tier: local (each shard's Pebble set) or redis://host:port/N (also a tier shared by every worker of -app: SET NX GET with a 24 h TTL, one pipelined round trip per batch; Redis slow or down falls back to local)")
		dedupTO     = fs.Duration("dedup-timeout", processor.DefaultSharedDedupTimeout, "with -dedup redis://...: longest wait for Redis per batch before the local tier decides alone")
		archiveURL  = fs.String("archive", "", "event archive: s3://bucket/prefix keeps every unique valid event and every dead letter (with its reason) as Parquet, partitioned by event date, exactly once (needs -dedup redis://...); empty: off")
		archiveEP   = fs.String("archive-endpoint", "", "with -archive: S3 endpoint URL override (a stand-in, e.g. http://127.0.0.1:4569; path-style); empty: LINEAGEFLOW_S3_ENDPOINT if set, else AWS")
		archiveMin  = fs.Int64("archive-min-bytes", processor.DefaultArchiveMinBytes, "with -archive: a shard's pending events are written as objects once they hold this many bytes (or -archive-max-age passed)")
		archiveAge  = fs.Duration("archive-max-age", processor.DefaultArchiveMaxAge, "with -archive: a shard's pending events are written once the oldest is this old: the checkpoint lag the archive adds")
		archiveKMS  = fs.String("archive-sse-kms-key", "", "with -archive: encrypt the archive's objects with SSE-KMS under this key (id, ARN or alias); empty: the bucket's default encryption")
		cpuProfile  = fs.String("cpu-profile", "", "write a Go CPU profile (pprof) of the whole run to this file, finished at exit (empty: none); for scripts/bench-cpu.sh and `go tool pprof`")
		unsafeBreak = fs.String("unsafe-break", "", "fault injection for the e2e fault matrix (make e2e -break), never for production: early-checkpoint checkpoints before the sink acknowledged, breaking exactly-once on purpose")
		gopt        = gremlinFlags(fs, region)
	)
	fs.Usage = cli.Usage(fs, "lineageflow run [flags]", "Run one worker process: KCL reads the shards it leases, the processor windows lineage edges in Pebble and writes sealed windows to the sink.")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	*refreshWin = resolveRefresh(fs, *windowSize, *refreshWin)
	// Names first, before Redis, the graph or AWS are dialled.
	if err := errors.Join(source.ValidateStreamName("-stream", *stream), source.ValidateAppName("-app", *app)); err != nil {
		return &exitError{2, err}
	}
	arc, err := archiveFlags(*archiveURL, *archiveEP, *archiveKMS, *archiveMin, *archiveAge, *dedupSpec)
	if err != nil {
		return &exitError{2, err}
	}
	if *shardSync <= 0 {
		// Config's zero means the default: refuse it here, not silently.
		return &exitError{2, fmt.Errorf("-shard-sync %v: must be > 0 (at least 10ms; default %v)", *shardSync, source.DefaultShardSync)}
	}
	logger, err := newLogger(*logFormat, *logLevel)
	if err != nil {
		return err
	}
	if w := cli.SecretFlagWarning(fs, "secret-access-key"); w != "" {
		logger.Warn(w)
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile(logger)
	}
	shared, err := openDedup(ctx, *dedupSpec, *app, *dedupTO, logger)
	if err != nil {
		return err
	}
	if shared != nil {
		defer func() { _ = shared.Close() }()
	}
	w, closeSink, err := openSink(ctx, *sinkSpec, gopt, logger)
	if err != nil {
		return err
	}
	defer closeSink()
	w, ops := instrument(w)
	if shared != nil {
		// Not a nil *Store in the interface: /readyz would call Status on it.
		ops.dedup = shared
	}
	storeTable, err := runStoreTable(*runStore, *runStoreTab, *app)
	if err != nil {
		return &exitError{2, err}
	}
	cfg := source.Config{
		Stream: *stream, AppName: *app, WorkerID: *workerID, DataDir: *dataDir, Sink: w,
		AWS: awsconf.Config{Region: *region, KinesisEndpoint: *kinEP, DynamoDBEndpoint: *ddbEP,
			AccessKeyID: *accessKey, SecretAccessKey: *secretKey},
		Pipeline: processor.PipelineConfig{
			Window: processor.WindowConfig{Config: window.Config{Size: *windowSize, Lateness: *lateness},
				TimeSource: processor.TimeSource(*timeSource), Refresh: *refreshWin},
			Semantics: processor.SemanticsConfig{Policy: semantics.Policy(*policy), Runs: semantics.RunRecords(*runs),
				NoColumnLineage: !*columns, RunTimeout: *runTimeout},
			Budgets: processor.Budgets{MaxOpenKeys: *maxKeys, MaxRecordBytes: *maxRecBytes, MaxEventDatasets: *maxEvDS,
				MaxRunDatasets: *maxRunDS, MaxEmissionEdges: *maxEmEdges, MaxDeadLettersPerBarrier: *maxDLBar, MaxRuns: *maxRuns,
				DeadLetterRetention: *dlRetention, DeadLetterMaxBytes: *dlMaxBytes, MaxNameBytes: *maxName, MaxEventFuture: *maxFuture},
			Dedup:       processor.DedupConfig{MaxBytes: *dedupMax, SharedTimeout: *dedupTO},
			Drain:       processor.DrainConfig{OutboxCap: *outboxCap, ParkAfter: *parkAfter},
			Logger:      logger,
			UnsafeBreak: *unsafeBreak,
		},
		LeaseStealing: *leaseSteal, FailoverTime: *failover, ShardSync: *shardSync, FromLatest: *fromLatest,
		MaxLeases: *maxLeases, IdleBetweenReads: *idleReads, MaxRecords: *maxRecords, ShutdownGrace: *grace,
		KinesisProtocol: source.KinesisProtocol(*kinProto), RunStoreTable: storeTable, Logger: logger,
	}
	if shared != nil {
		cfg.Pipeline.Dedup.Shared = shared
	}
	if arc.bucket != "" {
		st, err := s3store.Open(ctx, cfg.AWS, arc.endpoint, arc.bucket, arc.kmsKey)
		if err != nil {
			return err
		}
		cfg.Pipeline.Archive = processor.ArchiveConfig{Store: st, Prefix: arc.prefix, MinBytes: *archiveMin, MaxAge: *archiveAge}
		logger.Info("event archive on", "bucket", arc.bucket, "prefix", arc.prefix, "endpoint", arc.endpoint)
	}
	wk, err := source.NewWorker(cfg)
	if err != nil {
		return err
	}
	stopHTTP, err := ops.serve(ctx, *httpAddr, wk, logger)
	if err != nil {
		return err
	}
	defer stopHTTP()
	if *statsPeriod > 0 {
		stop := make(chan struct{})
		defer close(stop)
		go logStats(wk, logger, *statsPeriod, stop)
	}
	err = wk.Run(ctx)
	logStatsOnce(wk, logger)
	if err == nil {
		logger.Info("worker stopped cleanly")
	}
	return err
}

// archiveSpec is the archive the -archive flags name (bucket "": off).
type archiveSpec struct{ bucket, prefix, endpoint, kmsKey string }

// archiveFlags checks the -archive flags (no remote call).
func archiveFlags(u, endpoint, kmsKey string, minBytes int64, maxAge time.Duration, dedup string) (archiveSpec, error) {
	if u == "" {
		if kmsKey != "" {
			return archiveSpec{}, fmt.Errorf("-archive-sse-kms-key %q needs -archive s3://bucket/prefix", kmsKey)
		}
		return archiveSpec{}, nil
	}
	var a archiveSpec
	var err error
	if a.bucket, a.prefix, err = s3store.ParseURL(u); err != nil {
		return a, fmt.Errorf("-archive %q: %w", u, err)
	}
	if endpoint == "" {
		endpoint = os.Getenv("LINEAGEFLOW_S3_ENDPOINT")
	}
	if err := reader.CheckEndpoint(endpoint); err != nil {
		return a, fmt.Errorf("-archive-endpoint %q: give a URL like http://127.0.0.1:4569, or leave it empty for AWS", endpoint)
	}
	a.endpoint, a.kmsKey = endpoint, kmsKey
	if minBytes < 1 {
		return a, fmt.Errorf("-archive-min-bytes %d: must be > 0 (default %d)", minBytes, processor.DefaultArchiveMinBytes)
	}
	if maxAge <= 0 {
		return a, fmt.Errorf("-archive-max-age %v: must be > 0 (default %v)", maxAge, processor.DefaultArchiveMaxAge)
	}
	if !strings.HasPrefix(dedup, "redis://") && !strings.HasPrefix(dedup, "rediss://") {
		return a, fmt.Errorf("-archive needs -dedup redis://host:port/N: a shard taken over by another worker must decide duplicates as its first owner did, or the archive would hold an event twice")
	}
	return a, nil
}

// runStoreTable returns the run store table of -run-store and
// -run-store-table ("": none).
func runStoreTable(kind, table, app string) (string, error) {
	switch kind {
	case "none", "":
		if table != "" {
			return "", fmt.Errorf("-run-store-table %q needs -run-store dynamodb (LINEAGEFLOW_RUN_STORE=dynamodb)", table)
		}
		return "", nil
	case "dynamodb":
		if table == "" {
			table = app + "-runs"
		}
		if err := source.ValidateRunStoreTable(table); err != nil {
			return "", fmt.Errorf("-run-store-table: %w", err)
		}
		return table, nil
	}
	return "", fmt.Errorf("-run-store %q: use none or dynamodb", kind)
}

func newLogger(format, level string) (*slog.Logger, error) {
	return newLoggerTo(os.Stderr, format, level)
}

// newLoggerTo is newLogger writing to w.
func newLoggerTo(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	// Every line through redact: no URL password (a -dedup redis://:PASS@
	// in an error, say) ever reaches the log.
	switch format {
	case "json":
		return slog.New(redact.Handler(slog.NewJSONHandler(w, opts))), nil
	case "text":
		return slog.New(redact.Handler(slog.NewTextHandler(w, opts))), nil
	}
	return nil, fmt.Errorf("-log-format %q: use json or text", format)
}

func logStats(wk *source.Worker, l *slog.Logger, every time.Duration, stop chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			logStatsOnce(wk, l)
		}
	}
}

func logStatsOnce(wk *source.Worker, l *slog.Logger) {
	args := []any{"backpressured", wk.PipelineStats().IsBackPressured()}
	for k, v := range wk.Snapshot() {
		args = append(args, k, v)
	}
	l.Info("stats", args...)
}

// openDedup returns the shared dedup tier named by spec (nil for local).
// A bad URL fails; an unreachable Redis does not (it is logged, and claims
// fall back to the local tier until Redis answers).
func openDedup(ctx context.Context, spec, app string, timeout time.Duration, l *slog.Logger) (*dedupredis.Store, error) {
	switch {
	case spec == "" || spec == "local":
		return nil, nil
	case strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://"):
	default:
		return nil, fmt.Errorf("-dedup %q: use local or redis://host:port/N", spec)
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("-dedup-timeout %s: must be > 0", timeout)
	}
	st, err := dedupredis.New(dedupredis.Config{URL: spec, Prefix: "lineageflow:" + app + ":dedup:", Timeout: timeout, Logger: l})
	if err != nil {
		return nil, fmt.Errorf("-dedup: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := st.Ping(pctx); err != nil {
		l.Warn("shared dedup: redis does not answer at start; the local tier decides alone until it does", "err", err)
	} else {
		l.Info("shared dedup tier on redis", "url", redact.String(spec))
	}
	return st, nil
}

// openSink builds the sink.Writer named by spec.
func openSink(ctx context.Context, spec string, gopt *gremlinOptions, l *slog.Logger) (sink.Writer, func(), error) {
	switch {
	case spec == "memory":
		return sink.NewMemory(), func() {}, nil
	case spec == "log":
		return logSink{l}, func() {}, nil
	case spec == "shadow":
		// Shadow mode: everything computed, nothing written; the requests
		// a Gremlin sink with these -gremlin-* settings would send are
		// counted (lineage_sink_*), and unique writes like every sink.
		cfg, err := gopt.config("wss://shadow.invalid/gremlin", l)
		if err != nil {
			return nil, nil, err
		}
		return sink.NewShadow(cfg), func() {}, nil
	case strings.HasPrefix(spec, "file:"):
		f, err := newFileSink(strings.TrimPrefix(spec, "file:"))
		if err != nil {
			return nil, nil, err
		}
		return f, func() { _ = f.Close(context.Background()) }, nil
	case strings.HasPrefix(spec, "gremlin:"):
		// The Neptune / Gremlin Server sink.
		cfg, err := gopt.config(strings.TrimPrefix(spec, "gremlin:"), l)
		if err != nil {
			return nil, nil, err
		}
		n, err := sink.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return n, func() {
			c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = n.Close(c)
		}, nil
	}
	return nil, nil, fmt.Errorf("-sink %q: use memory, log, shadow, file:<path> or gremlin:<ws-url>", spec)
}

// logSink logs every batch (for trying the pipeline without a graph).
type logSink struct{ l *slog.Logger }

func (s logSink) WriteBatch(_ context.Context, b sink.Batch) error {
	s.l.Info("batch", "key", b.Key, "vertices", len(b.Vertices), "edges", len(b.Edges))
	return nil
}
func (logSink) Close(context.Context) error { return nil }

// fileSink appends each batch, once written and synced, as one NDJSON line:
// {"key":..., "vertices":[...], "edges":[...]}. A test reads the files of
// all workers to see what the graph acknowledged.
type fileSink struct {
	mu sync.Mutex
	f  *os.File
	w  *bufio.Writer
}

func newFileSink(path string) (*fileSink, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	return &fileSink{f: f, w: bufio.NewWriter(f)}, nil
}

func (s *fileSink) WriteBatch(_ context.Context, b sink.Batch) error {
	line, err := json.Marshal(b)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.Write(line)
	s.w.WriteByte('\n')
	if err := s.w.Flush(); err != nil {
		return err
	}
	return s.f.Sync()
}

func (s *fileSink) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.w.Flush(), s.f.Close())
}

// startCPUProfile starts the process's CPU profile into path; the returned
// func stops it and closes the file.
func startCPUProfile(path string) (func(*slog.Logger), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpu-profile: %w", err)
	}
	return func(l *slog.Logger) {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			l.Warn("closing the CPU profile", "path", path, "err", err)
		}
	}, nil
}

// defaultRefresh is -refresh-window's default: stamp-only refreshes reach
// the graph at most 30 s late (what "stale" means is days), for about 2.7
// points of write reduction on the default workload (bench/RESULTS.md).
const defaultRefresh = 30 * time.Second

// defaultRefreshFor is the refresh window used when -refresh-window is not
// given: defaultRefresh if it is a whole multiple of the window greater
// than it, else three windows.
func defaultRefreshFor(size time.Duration) time.Duration {
	if size < 2*time.Millisecond {
		return 0 // below the lane's resolution: off
	}
	if size > 0 && defaultRefresh > size && defaultRefresh%size == 0 {
		return defaultRefresh
	}
	return 3 * size
}

// resolveRefresh is the refresh window: v when -refresh-window was given
// (on the command line or as LINEAGEFLOW_REFRESH_WINDOW), else
// defaultRefreshFor(size).
func resolveRefresh(fs *flag.FlagSet, size, v time.Duration) time.Duration {
	if _, fromEnv := os.LookupEnv(cli.EnvName("refresh-window")); fromEnv || cli.OnCommandLine(fs, "refresh-window") {
		return v
	}
	return defaultRefreshFor(size)
}
