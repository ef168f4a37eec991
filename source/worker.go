package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/sink"
	kworker "github.com/vmware/vmware-go-kcl-v2/clientlibrary/worker"
)

// Defaults of [Config] and [MirrorConfig]; the run and mirror commands'
// flags default to them.
const (
	// DefaultShardSync: the KCL's own default, 60 s, takes a shard per minute.
	DefaultShardSync        = time.Second
	DefaultFailoverTime     = 10 * time.Second
	DefaultIdleBetweenReads = 200 * time.Millisecond
	// MaxRecordsLimit is Kinesis's most records per GetRecords call, and
	// the default.
	MaxRecordsLimit      = 10000
	DefaultMaxRecords    = MaxRecordsLimit
	DefaultShutdownGrace = 20 * time.Second
)

// Config configures a [Worker]: one KCL worker per process, one Pebble DB
// in DataDir, one [processor.Shard] per leased shard.
type Config struct {
	Stream  string // Kinesis stream name (required)
	AppName string // KCL application name = lease table name (required)
	// WorkerID identifies this process in the lease table (default: host name + pid).
	WorkerID string
	AWS      awsconf.Config
	// DataDir holds the Pebble DB (required). One process per directory.
	DataDir string
	// Pipeline configures every shard's pipeline.
	Pipeline processor.PipelineConfig
	// Sink receives sealed windows (required).
	Sink sink.Writer
	// ShardSync is how often the worker looks for shards and leases
	// (default DefaultShardSync).
	ShardSync time.Duration
	// FailoverTime is how long a lease lives without renewal (default
	// DefaultFailoverTime).
	FailoverTime time.Duration
	// LeaseStealing lets a worker take leases from busier workers (default off).
	LeaseStealing bool
	// IdleBetweenReads is the pause after an empty GetRecords (default
	// DefaultIdleBetweenReads).
	IdleBetweenReads time.Duration
	// MaxRecords per GetRecords call (default DefaultMaxRecords).
	MaxRecords int
	// KinesisProtocol is the wire format of the KCL's GetRecords calls
	// (default DefaultKinesisProtocol; getrecords.go).
	KinesisProtocol KinesisProtocol
	// MaxLeases caps the shards this worker holds (default: no cap).
	MaxLeases int
	// ShutdownGrace bounds the drain of a graceful shutdown (default
	// DefaultShutdownGrace).
	ShutdownGrace time.Duration
	// FromLatest starts shards without checkpoint at LATEST instead of TRIM_HORIZON.
	FromLatest bool
	// Handoff carries run state from a parent shard to its children
	// across a split or merge (default: DynamoDB table <AppName>-handoff).
	Handoff Handoff
	// RunStoreTable, if set, is the DynamoDB table of the shared run store
	// (DESIGN.md, "Shared run store"; created if missing): run state is
	// written there at every barrier, open runs stop pinning the KCL
	// checkpoint, and Pipeline.Semantics.RunTimeout becomes a retention (default
	// 72 h). Ignored when Pipeline.RunStore.Store is set already.
	RunStoreTable string
	Logger        *slog.Logger
	// Stats receives the KCL side's counters (default: new); the
	// pipeline's are Pipeline.Stats.
	Stats *Stats
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.RunStoreTable != "" && c.Pipeline.Semantics.RunTimeout == 0 {
		c.Pipeline.Semantics.RunTimeout = processor.DefaultStoreRunTimeout
	}
	c.Pipeline = c.Pipeline.WithDefaults()
	if c.WorkerID == "" {
		h, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if c.ShardSync == 0 {
		c.ShardSync = DefaultShardSync
	}
	if c.FailoverTime == 0 {
		c.FailoverTime = DefaultFailoverTime
	}
	if c.IdleBetweenReads == 0 {
		c.IdleBetweenReads = DefaultIdleBetweenReads
	}
	if c.MaxRecords == 0 {
		c.MaxRecords = DefaultMaxRecords
	}
	if c.KinesisProtocol == "" {
		c.KinesisProtocol = DefaultKinesisProtocol
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.Logger == nil {
		c.Logger = c.Pipeline.Logger
	}
	if c.Stats == nil {
		c.Stats = &Stats{}
	}
	return c
}

// Validate says what to fix. Call it on the result of WithDefaults.
func (c Config) Validate() error {
	var errs []error
	if c.Stream == "" {
		errs = append(errs, fmt.Errorf("%w: stream name is empty: set the Kinesis stream to read", processor.ErrConfig))
	}
	if c.AppName == "" {
		errs = append(errs, fmt.Errorf("%w: application name is empty: set it (it names the KCL lease table in DynamoDB)", processor.ErrConfig))
	}
	if c.Stream != "" {
		if err := ValidateStreamName("stream name", c.Stream); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", processor.ErrConfig, err))
		}
	}
	if c.AppName != "" {
		if err := ValidateAppName("application name", c.AppName); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", processor.ErrConfig, err))
		}
	}
	if c.DataDir == "" {
		errs = append(errs, fmt.Errorf("%w: data dir is empty: set a directory for the Pebble state (one worker process per directory)", processor.ErrConfig))
	}
	if c.Sink == nil {
		errs = append(errs, fmt.Errorf("%w: no sink", processor.ErrConfig))
	}
	if c.FailoverTime < 300*time.Millisecond || c.ShardSync < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("%w: failover time %v must be >= 300ms and shard sync %v >= 10ms", processor.ErrConfig, c.FailoverTime, c.ShardSync))
	}
	if c.MaxLeases < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxLeases %d must be >= 0 (0: no cap)", processor.ErrConfig, c.MaxLeases))
	}
	if c.MaxRecords < 1 || c.MaxRecords > MaxRecordsLimit {
		errs = append(errs, fmt.Errorf("%w: MaxRecords %d must be in 1..%d (the Kinesis limit)", processor.ErrConfig, c.MaxRecords, MaxRecordsLimit))
	}
	if err := c.KinesisProtocol.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", processor.ErrConfig, err))
	}
	if err := c.AWS.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.RunStoreTable != "" {
		if err := ValidateRunStoreTable(c.RunStoreTable); err != nil {
			errs = append(errs, err)
		}
		if min := c.Pipeline.Window.Size + c.Pipeline.Window.Lateness; c.Pipeline.Semantics.RunTimeout < min {
			errs = append(errs, fmt.Errorf("%w: run timeout %v with a run store: it is the runs' retention, set it to at least a window plus its lateness (%v; default %v)",
				processor.ErrConfig, c.Pipeline.Semantics.RunTimeout, min, processor.DefaultStoreRunTimeout))
		}
	}
	if err := c.Pipeline.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Worker runs the KCL worker of this process.
type Worker struct {
	cfg          Config
	log          *slog.Logger
	db           *pebble.DB
	ddb          *dynamodb.Client // the lease table, read by the lease guard
	kin          *kinesis.Client  // ListShards: a child shard's parents
	streamHealth streamHealth     // the last stream probe (health.go)
	ho           Handoff

	stop context.Context // Run's ctx: done when a graceful stop begins

	// readDB is the Pebble DB for readers outside the pipeline (the ops
	// server's /deadletters), nil while closed. Held (read) across one
	// listing; Run takes it (write) to clear it before closing the DB.
	readDB struct {
		sync.RWMutex
		db *pebble.DB
	}

	// mu guards the maps below and nothing else: it is never held across
	// I/O, a KCL call or a wait (a shard's Close or Abandon waits for its
	// drain goroutine: called after mu is released). Lock order:
	// recordProcessor.busy, then mu.
	mu struct {
		sync.Mutex
		shards map[string]*processor.Shard
		procs  map[string]*recordProcessor // the processor of each shard in shards
		// waits: child shards retrying a handoff read (handoff.go)
		waits map[string]handoffWait
	}
	ctx    context.Context
	cancel context.CancelCauseFunc
	opts   workerOptions
}

// workerOptions are the worker's internal sizes, fixed in production and
// shortened by tests (set on the Worker before Run).
type workerOptions struct {
	handoffRetryMax time.Duration // cap of the pause between two handoff reads
	afterLeaseScan  func()        // tests: called after checkDuplicateID's first scan
}

func defaultWorkerOptions() workerOptions {
	return workerOptions{handoffRetryMax: defaultHandoffRetryMax}
}

// NewWorker validates cfg and returns a worker; Run starts it.
func NewWorker(cfg Config) (*Worker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, log: cfg.Logger.With("worker", cfg.WorkerID), opts: defaultWorkerOptions()}
	w.mu.shards = map[string]*processor.Shard{}
	w.mu.procs = map[string]*recordProcessor{}
	return w, nil
}

// Stats returns the KCL side's counters.
func (w *Worker) Stats() *Stats { return w.cfg.Stats }

// PipelineStats returns the counters of the worker's shards.
func (w *Worker) PipelineStats() *processor.Stats { return w.cfg.Pipeline.Stats }

// Snapshot returns the counters of both by name, for logs and tests.
func (w *Worker) Snapshot() map[string]int64 {
	m := w.PipelineStats().Snapshot()
	for k, v := range w.Stats().Snapshot() {
		m[k] = v
	}
	return m
}

// ErrNotOpen: the worker's Pebble DB is not open (starting or stopped).
var ErrNotOpen = errors.New("the worker's state is not open (starting or stopped)")

// ListDeadLetters lists the dead letters of the running worker (the same as
// `lineageflow deadletters` on a stopped worker's data dir); ErrNotOpen
// before Run opened the state or after it closed it.
func (w *Worker) ListDeadLetters(fn func(checkpoint.DeadLetter) error) error {
	w.readDB.RLock()
	defer w.readDB.RUnlock()
	if w.readDB.db == nil {
		return ErrNotOpen
	}
	return checkpoint.ListDeadLetters(w.readDB.db, fn)
}

// ListParked lists the parked sink batches of the running worker.
func (w *Worker) ListParked(fn func(checkpoint.Parked) error) error {
	w.readDB.RLock()
	defer w.readDB.RUnlock()
	if w.readDB.db == nil {
		return ErrNotOpen
	}
	return checkpoint.ListParked(w.readDB.db, fn)
}

// Run opens the Pebble DB, starts the KCL worker and blocks until ctx ends
// (graceful shutdown: shards seal their windows, drain within
// ShutdownGrace and checkpoint) or a shard hits a fatal error (returned).
func (w *Worker) Run(ctx context.Context) error {
	db, err := processor.OpenDB(w.cfg.DataDir, checkpoint.Options{Logger: w.log})
	if err != nil {
		return err
	}
	w.db = db
	w.readDB.Lock()
	w.readDB.db = db
	w.readDB.Unlock()
	defer func() {
		w.readDB.Lock()
		w.readDB.db = nil
		w.readDB.Unlock()
		if err := db.Close(); err != nil {
			w.log.Warn("closing Pebble", "err", err)
		}
	}()
	w.ctx, w.cancel = context.WithCancelCause(context.Background())
	defer w.cancel(nil)

	awsCfg, err := w.cfg.AWS.AWS(ctx)
	if err != nil {
		return err
	}
	w.ddb = dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = awsconf.Endpoint(w.cfg.AWS.DynamoDBEndpoint)
	})
	// The KCL creates the lease table without waiting for it to become
	// ACTIVE, and two workers starting at once race on CreateTable: create
	// it here (ResourceInUse is fine) and wait until it is ACTIVE.
	if err := w.ensureLeaseTable(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := w.checkDuplicateID(ctx); err != nil {
		return err
	}
	w.stop = ctx
	w.ho = w.cfg.Handoff
	if w.ho == nil {
		dh := &DynamoHandoff{Client: w.ddb, Table: w.cfg.AppName + "-handoff", Logger: w.log}
		if err := dh.EnsureTable(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		w.ho = dh
	}
	if w.cfg.RunStoreTable != "" && w.cfg.Pipeline.RunStore.Store == nil {
		rs := &DynamoRunStore{Client: w.ddb, Table: w.cfg.RunStoreTable, App: w.cfg.AppName, Logger: w.log}
		if err := rs.EnsureTable(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		w.cfg.Pipeline.RunStore.Store = rs
		w.log.Info("run store", "table", w.cfg.RunStoreTable, "run_retention", w.cfg.Pipeline.Semantics.RunTimeout)
	}
	if w.kin, err = w.cfg.AWS.Kinesis(ctx); err != nil {
		return err
	}

	// A stream that does not exist or cannot be read makes the worker
	// unready, with the reason, and is logged every minute (the KCL only
	// retries it).
	w.checkStream(ctx)
	probeCtx, stopProbe := context.WithCancel(ctx)
	defer stopProbe()
	go w.watchStream(probeCtx, streamProbeEvery)

	kc, err := w.kclConfig(ctx)
	if err != nil {
		return err
	}
	// The KCL's own Kinesis client, built here so that the KCL never
	// de-aggregates (deagg.go): same region, endpoint and credentials as
	// the one the KCL would build.
	kclKinesis, err := w.cfg.AWS.Kinesis(ctx, readPath(w.cfg.KinesisProtocol))
	if err != nil {
		return err
	}
	w.log.Info("GetRecords wire format", "kinesis_protocol", string(w.cfg.KinesisProtocol))
	var kw *kworker.Worker
	for attempt := 0; ; attempt++ {
		kw = kworker.NewWorker(&factory{w: w}, kc).WithKinesis(kclKinesis)
		err = kw.Start()
		if err == nil {
			break
		}
		// Kept as a second line of defence: the second of two workers
		// creating the table at once gets ResourceInUseException.
		if attempt < 10 && (strings.Contains(err.Error(), "ResourceInUse") || strings.Contains(err.Error(), "being created")) {
			w.log.Info("lease table being created by another worker; retrying", "err", err)
			select {
			case <-time.After(time.Duration(attempt+1) * 500 * time.Millisecond):
				continue
			case <-ctx.Done():
				return nil
			}
		}
		return fmt.Errorf("source: start KCL worker: %w", err)
	}
	w.log.Info("KCL worker started", "stream", w.cfg.Stream, "app", w.cfg.AppName,
		"failover", w.cfg.FailoverTime, "shard_sync", w.cfg.ShardSync)
	w.Stats().setRunning(true)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go w.watchLeases(watchCtx, max(w.cfg.FailoverTime/2, 250*time.Millisecond))
	select {
	case <-ctx.Done():
		w.log.Info("shutdown requested: flushing shards")
	case <-w.ctx.Done():
	}
	w.Stats().setRunning(false)
	// REQUESTED shutdown of every shard consumer; kw.Shutdown waits for
	// them. A consumer blocked on a sink that never answers would hang it:
	// bound the wait (Pebble state is consistent at every barrier, so
	// leaving without the last flush only costs a replay).
	done := make(chan struct{})
	go func() { kw.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.cfg.ShutdownGrace + 5*time.Second):
		w.log.Error("KCL shutdown did not finish in time; exiting without it", "waited", w.cfg.ShutdownGrace+5*time.Second)
		w.cancel(errors.New("source: shutdown timed out"))
	}
	// Forget the shards under w.mu, close them (each waits for its drain
	// goroutine) without it.
	w.mu.Lock()
	held := make([]*processor.Shard, 0, len(w.mu.shards))
	for id, s := range w.mu.shards {
		held = append(held, s)
		delete(w.mu.shards, id)
		delete(w.mu.procs, id)
	}
	w.mu.Unlock()
	for _, s := range held {
		s.Close()
	}
	if cause := context.Cause(w.ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// fatal stops the worker with err (a shard's Pebble state is unusable):
// the process exits and restarts from disk and the KCL checkpoints.
func (w *Worker) fatal(err error) {
	w.log.Error("fatal shard error: stopping the worker", "err", err)
	w.cancel(err)
}

// Shards returns the shards this worker holds, sorted by id. Safe for
// concurrent use; it takes Worker.mu, then each shard's drainer lock, never
// both.
func (w *Worker) Shards() []ShardStatus {
	w.mu.Lock()
	held := make([]*processor.Shard, 0, len(w.mu.shards))
	for _, s := range w.mu.shards {
		held = append(held, s)
	}
	w.mu.Unlock()
	sort.Slice(held, func(i, j int) bool { return held[i].ID() < held[j].ID() })
	out := make([]ShardStatus, 0, len(held))
	for _, s := range held {
		out = append(out, w.Stats().status(s))
	}
	return out
}

// Running reports whether the KCL worker is started and not shutting down.
func (w *Worker) Running() bool { return w.Stats().Running() }
