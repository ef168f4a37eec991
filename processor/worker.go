package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/sink"
	kcfg "github.com/vmware/vmware-go-kcl-v2/clientlibrary/config"
	kcl "github.com/vmware/vmware-go-kcl-v2/clientlibrary/interfaces"
	kworker "github.com/vmware/vmware-go-kcl-v2/clientlibrary/worker"
	klog "github.com/vmware/vmware-go-kcl-v2/logger"
)

// Config configures a [Worker]: one KCL worker per process, one Pebble DB
// in DataDir, one [Shard] per leased shard.
type Config struct {
	Stream  string // Kinesis stream name (required)
	AppName string // KCL application name = lease table name (required)
	// WorkerID identifies this process in the lease table (default: host name + pid).
	WorkerID string
	AWS      awsconf.Config
	// DataDir holds the Pebble DB (required). One process per directory.
	DataDir string
	// Pipeline configures every shard's pipeline.
	Pipeline PipelineConfig
	// Sink receives sealed windows (required).
	Sink sink.Writer
	// ShardSync is how often the worker looks for shards and leases (default 1 s;
	// the KCL's own default, 60 s, takes a shard per minute).
	ShardSync time.Duration
	// FailoverTime is how long a lease lives without renewal (default 10 s).
	FailoverTime time.Duration
	// LeaseStealing lets a worker take leases from busier workers (default off).
	LeaseStealing bool
	// IdleBetweenReads is the pause after an empty GetRecords (default 200 ms).
	IdleBetweenReads time.Duration
	// MaxRecords per GetRecords call (default 10000).
	MaxRecords int
	// MaxLeases caps the shards this worker holds (default: no cap).
	MaxLeases int
	// ShutdownGrace bounds the drain of a graceful shutdown (default 20 s).
	ShutdownGrace time.Duration
	// FromLatest starts shards without checkpoint at LATEST instead of TRIM_HORIZON.
	FromLatest bool
	// Handoff carries run state from a parent shard to its children
	// across a split or merge (default: DynamoDB table <AppName>-handoff).
	Handoff Handoff
	Logger  *slog.Logger
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	c.Pipeline = c.Pipeline.WithDefaults()
	if c.WorkerID == "" {
		h, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if c.ShardSync == 0 {
		c.ShardSync = time.Second
	}
	if c.FailoverTime == 0 {
		c.FailoverTime = 10 * time.Second
	}
	if c.IdleBetweenReads == 0 {
		c.IdleBetweenReads = 200 * time.Millisecond
	}
	if c.MaxRecords == 0 {
		c.MaxRecords = 10000
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 20 * time.Second
	}
	if c.Logger == nil {
		c.Logger = c.Pipeline.Logger
	}
	return c
}

// Validate says what to fix. Call it on the result of WithDefaults.
func (c Config) Validate() error {
	var errs []error
	if c.Stream == "" {
		errs = append(errs, fmt.Errorf("%w: stream name is empty: set the Kinesis stream to read", ErrConfig))
	}
	if c.AppName == "" {
		errs = append(errs, fmt.Errorf("%w: application name is empty: set it (it names the KCL lease table in DynamoDB)", ErrConfig))
	}
	if c.DataDir == "" {
		errs = append(errs, fmt.Errorf("%w: data dir is empty: set a directory for the Pebble state (one worker process per directory)", ErrConfig))
	}
	if c.Sink == nil {
		errs = append(errs, fmt.Errorf("%w: no sink", ErrConfig))
	}
	if c.FailoverTime < 300*time.Millisecond || c.ShardSync < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("%w: failover time %v must be >= 300ms and shard sync %v >= 10ms", ErrConfig, c.FailoverTime, c.ShardSync))
	}
	if c.MaxLeases < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxLeases %d must be >= 0 (0: no cap)", ErrConfig, c.MaxLeases))
	}
	if c.MaxRecords < 1 || c.MaxRecords > 10000 {
		errs = append(errs, fmt.Errorf("%w: MaxRecords %d must be in 1..10000 (the Kinesis limit)", ErrConfig, c.MaxRecords))
	}
	if err := c.AWS.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Pipeline.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Worker runs the KCL worker of this process.
type Worker struct {
	cfg Config
	log *slog.Logger
	db  *pebble.DB
	ddb *dynamodb.Client // the lease table, read by the lease guard
	kin *kinesis.Client  // ListShards: a child shard's parents
	ho  Handoff

	stop context.Context // Run's ctx: done when a graceful stop begins

	mu struct {
		sync.Mutex
		shards map[string]*Shard
	}
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// NewWorker validates cfg and returns a worker; Run starts it.
func NewWorker(cfg Config) (*Worker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, log: cfg.Logger.With("worker", cfg.WorkerID)}
	w.mu.shards = map[string]*Shard{}
	return w, nil
}

// Stats returns the worker's counters.
func (w *Worker) Stats() *Stats { return w.cfg.Pipeline.Stats }

// Run opens the Pebble DB, starts the KCL worker and blocks until ctx ends
// (graceful shutdown: shards seal their windows, drain within
// ShutdownGrace and checkpoint) or a shard hits a fatal error (returned).
func (w *Worker) Run(ctx context.Context) error {
	db, err := OpenDB(w.cfg.DataDir, checkpoint.Options{Logger: w.log})
	if err != nil {
		return err
	}
	w.db = db
	defer func() {
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
	if w.kin, err = w.cfg.AWS.Kinesis(ctx); err != nil {
		return err
	}

	kc, err := w.kclConfig(ctx)
	if err != nil {
		return err
	}
	var kw *kworker.Worker
	for attempt := 0; ; attempt++ {
		kw = kworker.NewWorker(&factory{w: w}, kc)
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
		return fmt.Errorf("processor: start KCL worker: %w", err)
	}
	w.log.Info("KCL worker started", "stream", w.cfg.Stream, "app", w.cfg.AppName,
		"failover", w.cfg.FailoverTime, "shard_sync", w.cfg.ShardSync)
	w.Stats().setRunning(true)
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
		w.cancel(errors.New("processor: shutdown timed out"))
	}
	w.mu.Lock()
	for id, s := range w.mu.shards {
		s.Close()
		delete(w.mu.shards, id)
	}
	w.mu.Unlock()
	if cause := context.Cause(w.ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// ensureLeaseTable creates the KCL lease table (the KCL's schema: hash key
// ShardID) if it is missing and waits until it is ACTIVE.
func (w *Worker) ensureLeaseTable(ctx context.Context) error {
	return ensureTable(ctx, w.ddb, &dynamodb.CreateTableInput{
		TableName:             aws.String(w.cfg.AppName),
		AttributeDefinitions:  []ddbtypes.AttributeDefinition{{AttributeName: aws.String("ShardID"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:             []ddbtypes.KeySchemaElement{{AttributeName: aws.String("ShardID"), KeyType: ddbtypes.KeyTypeHash}},
		ProvisionedThroughput: &ddbtypes.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(10), WriteCapacityUnits: aws.Int64(10)},
	})
}

// leaseOwner reads the owner of shard's lease (consistent read).
func (w *Worker) leaseOwner(ctx context.Context, shard string) (string, error) {
	owner, _, _, err := w.lease(ctx, shard)
	return owner, err
}

// lease reads shard's lease row (consistent read): owner, checkpoint, and
// whether the row exists.
func (w *Worker) lease(ctx context.Context, shard string) (owner, ckpt string, found bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := w.ddb.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(w.cfg.AppName),
		ConsistentRead: aws.Bool(true),
		Key:            map[string]ddbtypes.AttributeValue{"ShardID": &ddbtypes.AttributeValueMemberS{Value: shard}},
	})
	if err != nil {
		return "", "", false, err
	}
	if v, ok := out.Item["AssignedTo"].(*ddbtypes.AttributeValueMemberS); ok {
		owner = v.Value
	}
	if v, ok := out.Item["Checkpoint"].(*ddbtypes.AttributeValueMemberS); ok {
		ckpt = v.Value
	}
	return owner, ckpt, len(out.Item) > 0, nil
}

func (w *Worker) kclConfig(ctx context.Context) (*kcfg.KinesisClientLibConfiguration, error) {
	var creds aws.CredentialsProvider
	if w.cfg.AWS.StaticCredentials() {
		c, err := w.cfg.AWS.Credentials(ctx)
		if err != nil {
			return nil, err
		}
		creds = c
	}
	kc := kcfg.NewKinesisClientLibConfigWithCredential(w.cfg.AppName, w.cfg.Stream, w.cfg.AWS.Region, w.cfg.WorkerID, creds)
	if creds == nil {
		// Default chain: the KCL's config loader uses it when no provider is set.
		kc = kcfg.NewKinesisClientLibConfig(w.cfg.AppName, w.cfg.Stream, w.cfg.AWS.Region, w.cfg.WorkerID)
	}
	if w.cfg.AWS.KinesisEndpoint != "" {
		kc = kc.WithKinesisEndpoint(w.cfg.AWS.KinesisEndpoint)
	}
	if w.cfg.AWS.DynamoDBEndpoint != "" {
		kc = kc.WithDynamoDBEndpoint(w.cfg.AWS.DynamoDBEndpoint)
	}
	pos := kcfg.TRIM_HORIZON
	if w.cfg.FromLatest {
		pos = kcfg.LATEST
	}
	failover := int(w.cfg.FailoverTime.Milliseconds())
	sync := int(w.cfg.ShardSync.Milliseconds())
	kc = kc.WithInitialPositionInStream(pos).
		WithShardSyncIntervalMillis(sync).
		WithFailoverTimeMillis(failover).
		// v1.0.0's polling consumer renews every LeaseRefreshWaitTime
		// (default 2.5 s, whatever the failover time); LeaseRefreshPeriodMillis
		// is only read by the fan-out consumer. Renew three times per lease.
		WithLeaseRefreshWaitTime(max(failover/3, 1)).
		WithLeaseRefreshPeriodMillis(max(failover/3, 1)).
		// Lease sync (the lease-table scan behind rebalancing) defaults to 60 s.
		WithLeaseSyncingIntervalMillis(sync).
		WithIdleTimeBetweenReadsInMillis(int(w.cfg.IdleBetweenReads.Milliseconds())).
		WithCallProcessRecordsEvenForEmptyRecordList(true).
		WithMaxRecords(w.cfg.MaxRecords).
		WithLogger(kclLogger{w.log.With("component", "kcl")})
	if w.cfg.MaxLeases > 0 {
		kc = kc.WithMaxLeasesForWorker(w.cfg.MaxLeases)
	}
	if w.cfg.LeaseStealing {
		kc = kc.WithLeaseStealing(true).WithLeaseStealingIntervalMillis(sync * 2)
	}
	return kc, nil
}

// fatal stops the worker with err (a shard's Pebble state is unusable):
// the process exits and restarts from disk and the KCL checkpoints.
func (w *Worker) fatal(err error) {
	w.log.Error("fatal shard error: stopping the worker", "err", err)
	w.cancel(err)
}

type factory struct{ w *Worker }

func (f *factory) CreateProcessor() kcl.IRecordProcessor { return &recordProcessor{w: f.w} }

// recordProcessor adapts one KCL shard consumer to a [Shard].
type recordProcessor struct {
	w    *Worker
	s    *Shard
	recs []Record
	// lost: the lease guard saw another owner. v1.0.0 gives such a
	// processor no Shutdown; it stops processing and never checkpoints.
	lost bool
	// needHandoff: the shard started without local state; its parents'
	// handoffs (if it has parents) are loaded before its first record.
	needHandoff bool
}

func (p *recordProcessor) Initialize(in *kcl.InitializationInput) {
	w := p.w
	seq := ""
	if in.ExtendedSequenceNumber != nil && in.ExtendedSequenceNumber.SequenceNumber != nil {
		seq = *in.ExtendedSequenceNumber.SequenceNumber
	}
	w.mu.Lock()
	if old := w.mu.shards[in.ShardId]; old != nil {
		// The KCL gives a lost lease's processor no Shutdown: stop the
		// stale pipeline now; Start below decides on the local state.
		old.Abandon()
	}
	w.mu.Unlock()
	s, err := NewShard(in.ShardId, w.db, w.cfg.Sink, w.cfg.Pipeline)
	if err == nil {
		err = s.Start(w.ctx, seq)
	}
	if err != nil {
		w.fatal(fmt.Errorf("initialize %s: %w", in.ShardId, err))
		return
	}
	w.mu.Lock()
	w.mu.shards[in.ShardId] = s
	w.mu.Unlock()
	w.Stats().shardStarted(in.ShardId)
	p.s = s
	p.needHandoff = !s.Resumed()
	w.log.Info("shard started", "shard", in.ShardId, "kcl_checkpoint", seq)
}

func (p *recordProcessor) ProcessRecords(in *kcl.ProcessRecordsInput) {
	if p.s == nil || p.lost || p.w.ctx.Err() != nil {
		// Never acknowledge what we did not process: without a checkpoint
		// the records come back to the next owner.
		return
	}
	// Done here, not in Initialize: the KCL renews the lease only after
	// Initialize returns, and loading may wait for a parent.
	if p.needHandoff && !p.loadHandoff() {
		return // stopping: nothing processed, nothing checkpointed
	}
	p.recs = p.recs[:0]
	var sub uint32
	for i := range in.Records {
		r := &in.Records[i]
		seq := aws.ToString(r.SequenceNumber)
		if i > 0 && seq == p.recs[i-1].Seq {
			sub++
		} else {
			sub = 0
		}
		var arrival time.Time
		if r.ApproximateArrivalTimestamp != nil {
			arrival = *r.ApproximateArrivalTimestamp
		}
		p.recs = append(p.recs, Record{Seq: seq, Sub: sub, Arrival: arrival, Data: r.Data})
	}
	// Caught up: an empty read with nothing behind. MillisBehindLatest
	// alone is not enough: kinesalite always reports 0, even on a full
	// batch with more records pending, which would advance the watermark
	// to processing time while the shard is still catching up.
	caughtUp := in.MillisBehindLatest == 0 && len(in.Records) == 0
	p.w.Stats().observeRead(p.s.ID(), in.MillisBehindLatest, len(in.Records))
	if err := p.s.Process(p.w.ctx, p.recs, caughtUp); err != nil {
		if p.w.ctx.Err() == nil {
			p.w.fatal(err)
		}
		return
	}
	p.checkpoint(in.Checkpointer)
}

// ownsLease is the lease guard: v1.0.0 writes a checkpoint as an
// unconditional PutItem that also sets AssignedTo to this worker, so a
// processor whose lease was taken (expired under load, or stolen) would
// hand the lease back to itself and disturb the new owner. Read the owner
// first; when it is another worker, stop this processor for good (the KCL
// will not tell it) and abandon the shard's pipeline.
func (p *recordProcessor) ownsLease() bool {
	if p.lost {
		return false
	}
	owner, err := p.w.leaseOwner(p.w.ctx, p.s.ID())
	if err != nil {
		p.w.log.Warn("lease guard: reading the lease failed; not checkpointing now", "shard", p.s.ID(), "err", err)
		return false
	}
	if owner == p.w.cfg.WorkerID {
		return true
	}
	p.lost = true
	p.w.log.Warn("lease lost: another worker owns the shard; abandoning it here", "shard", p.s.ID(), "owner", owner)
	p.s.Abandon()
	p.w.mu.Lock()
	if p.w.mu.shards[p.s.ID()] == p.s {
		delete(p.w.mu.shards, p.s.ID())
	}
	p.w.mu.Unlock()
	return false
}

func (p *recordProcessor) checkpoint(c kcl.IRecordProcessorCheckpointer) {
	seq, ok := p.s.Checkpoint()
	if !ok {
		return
	}
	if !p.ownsLease() {
		p.s.reported = "" // not written: try again (if still the owner)
		return
	}
	if err := c.Checkpoint(&seq); err != nil {
		p.w.log.Warn("KCL checkpoint failed (retried at the next batch)", "shard", p.s.ID(), "seq", seq, "err", err)
		p.s.reported = "" // try again next time
		return
	}
	p.w.Stats().Checkpoints.Add(1)
	p.w.Stats().observeCheckpoint(p.s.ID())
}

func (p *recordProcessor) Shutdown(in *kcl.ShutdownInput) {
	if p.s == nil || p.lost {
		return
	}
	s, w := p.s, p.w
	defer func() {
		w.mu.Lock()
		if w.mu.shards[s.ID()] == s {
			delete(w.mu.shards, s.ID())
		}
		w.mu.Unlock()
	}()
	switch in.ShutdownReason {
	case kcl.TERMINATE:
		// Shard end: everything must be in the graph before the
		// mandatory Checkpoint(nil), or children never start.
		if err := s.Flush(w.ctx); err != nil {
			w.log.Error("shard end: flush failed; not checkpointing", "shard", s.ID(), "err", err)
			s.Close()
			return
		}
		s.Close()
		if !p.ownsLease() {
			w.log.Warn("shard end: lease lost; the new owner will checkpoint SHARD_END", "shard", s.ID())
			return
		}
		// The runs the shard still holds go to its children (handoff.go)
		// before SHARD_END lets them start.
		if err := p.handOff(); err != nil {
			w.log.Error("shard end: run handoff failed; not checkpointing SHARD_END (the shard is replayed)", "shard", s.ID(), "err", err)
			return
		}
		if err := in.Checkpointer.Checkpoint(nil); err != nil {
			w.log.Error("shard end checkpoint failed", "shard", s.ID(), "err", err)
		}
	case kcl.ZOMBIE:
		if err := s.Drop(); err != nil {
			w.log.Warn("drop local state", "shard", s.ID(), "err", err)
		}
	default: // REQUESTED
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.ShutdownGrace)
		defer cancel()
		if err := s.Flush(ctx); err != nil {
			w.log.Warn("graceful shutdown: outbox not drained in time; checkpointing what is safe", "shard", s.ID(), "err", err)
		}
		p.checkpoint(in.Checkpointer)
		s.Close()
	}
	w.log.Info("shard stopped", "shard", s.ID(), "reason", aws.ToString(kcl.ShutdownReasonMessage(in.ShutdownReason)))
}

// kclLogger routes the KCL's logs to slog.
type kclLogger struct{ l *slog.Logger }

func (k kclLogger) Debugf(f string, a ...interface{}) { k.l.Debug(fmt.Sprintf(f, a...)) }
func (k kclLogger) Infof(f string, a ...interface{})  { k.l.Debug(fmt.Sprintf(f, a...)) }
func (k kclLogger) Warnf(f string, a ...interface{})  { k.l.Warn(fmt.Sprintf(f, a...)) }
func (k kclLogger) Errorf(f string, a ...interface{}) { k.l.Error(fmt.Sprintf(f, a...)) }
func (k kclLogger) Fatalf(f string, a ...interface{}) {
	k.l.Error(fmt.Sprintf(f, a...))
	panic(fmt.Sprintf(f, a...))
}
func (k kclLogger) Panicf(f string, a ...interface{}) { panic(fmt.Sprintf(f, a...)) }
func (k kclLogger) WithFields(fs klog.Fields) klog.Logger {
	args := make([]any, 0, 2*len(fs))
	for n, v := range fs {
		args = append(args, n, v)
	}
	return kclLogger{k.l.With(args...)}
}
