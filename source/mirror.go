package source

// lineageflow mirror: a KCL application of its own that puts a
// deterministic share of a stream onto a canary stream (DESIGN.md, "Safe
// rollout").

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	kcl "github.com/vmware/vmware-go-kcl-v2/clientlibrary/interfaces"
	kworker "github.com/vmware/vmware-go-kcl-v2/clientlibrary/worker"

	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/internal/keyspace"
	"github.com/lineageflow/lineageflow/internal/kpl"
)

// MirrorConfig configures [Mirror].
type MirrorConfig struct {
	// Stream is read; Canary receives the selected share.
	Stream, Canary string
	// AppName is the mirror's KCL application (its lease table; never the
	// name of a worker application reading the same stream).
	AppName  string
	WorkerID string
	AWS      awsconf.Config
	// Share (0..1] of the key space put on the canary ([keyspace.EventKey],
	// [keyspace.Selected]); the records keep their partition key.
	Share float64
	// Aggregate re-aggregates (KPL) the selected records of a batch that
	// share a partition key into one Kinesis record each.
	Aggregate bool
	// KCL settings, as for the worker (defaults: DefaultShardSync,
	// DefaultFailoverTime, DefaultIdleBetweenReads, DefaultMaxRecords).
	ShardSync, FailoverTime, IdleBetweenReads time.Duration
	MaxRecords                                int
	FromLatest                                bool
	Logger                                    *slog.Logger
	// Stats receives the counters (default: new).
	Stats *MirrorStats
}

// MirrorStats are the mirror's counters, safe for concurrent use.
type MirrorStats struct {
	Read        atomic.Int64 // user records read
	Selected    atomic.Int64 // user records in the share
	Put         atomic.Int64 // selected user records the canary stream acknowledged
	PutRecords  atomic.Int64 // Kinesis records put (aggregates count once)
	PutRetries  atomic.Int64 // records PutRecords refused and the mirror sent again
	Checkpoints atomic.Int64
	LeasesLost  atomic.Int64 // shards this mirror stopped because another mirror owns their lease
	Behind      atomic.Int64 // MillisBehindLatest of the last read (any shard)
	running     atomic.Bool
}

// Running reports whether the mirror's KCL worker is started.
func (s *MirrorStats) Running() bool { return s.running.Load() }

func (c MirrorConfig) withDefaults() MirrorConfig {
	if c.WorkerID == "" {
		h, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Stats == nil {
		c.Stats = &MirrorStats{}
	}
	return c
}

// Validate says what to fix.
func (c MirrorConfig) Validate() error {
	var errs []error
	if c.Stream == "" || c.Canary == "" {
		errs = append(errs, errors.New("mirror: set the stream to read and the canary stream"))
	}
	if c.Stream == c.Canary {
		errs = append(errs, errors.New("mirror: the canary stream must not be the stream read"))
	}
	if c.AppName == "" {
		errs = append(errs, errors.New("mirror: application name is empty (it names the mirror's lease table)"))
	}
	if err := keyspace.ValidateShare("mirror share", c.Share); err != nil {
		errs = append(errs, err)
	}
	if err := c.AWS.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Mirror is a running mirror.
type Mirror struct {
	cfg MirrorConfig
	log *slog.Logger
	kin *kinesis.Client
	ctx context.Context // done when the mirror must stop at once
	// owner reads the owner of a shard's lease (consistent read; the
	// lease guard).
	owner func(ctx context.Context, shard string) (string, error)
}

// RunMirror runs the mirror until ctx ends. Each KCL batch's selected
// records are put on the canary stream (failed entries retried until
// acknowledged) before the batch is checkpointed, so a checkpoint never
// passes a record the canary did not acknowledge.
func RunMirror(ctx context.Context, cfg MirrorConfig) error {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	m := &Mirror{cfg: cfg, log: cfg.Logger.With("component", "mirror"), ctx: ctx}
	kin, err := cfg.AWS.Kinesis(ctx)
	if err != nil {
		return err
	}
	m.kin = kin
	awsCfg, err := cfg.AWS.AWS(ctx)
	if err != nil {
		return err
	}
	ddb := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = awsconf.Endpoint(cfg.AWS.DynamoDBEndpoint) })
	kw := &Worker{cfg: Config{Stream: cfg.Stream, AppName: cfg.AppName, WorkerID: cfg.WorkerID, AWS: cfg.AWS,
		ShardSync: cfg.ShardSync, FailoverTime: cfg.FailoverTime, IdleBetweenReads: cfg.IdleBetweenReads,
		MaxRecords: cfg.MaxRecords, FromLatest: cfg.FromLatest, Logger: cfg.Logger}.WithDefaults(), log: m.log, ddb: ddb,
		opts: defaultWorkerOptions()}
	m.owner = kw.leaseOwner
	if err := kw.ensureLeaseTable(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	kc, err := kw.kclConfig(ctx)
	if err != nil {
		return err
	}
	w := kworker.NewWorker(mirrorFactory{m}, kc)
	if err := w.Start(); err != nil {
		return fmt.Errorf("mirror: start KCL worker: %w", err)
	}
	cfg.Stats.running.Store(true)
	m.log.Info("mirror started", "stream", cfg.Stream, "canary", cfg.Canary, "share", cfg.Share, "app", cfg.AppName)
	<-ctx.Done()
	cfg.Stats.running.Store(false)
	done := make(chan struct{})
	go func() { w.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		m.log.Error("mirror: KCL shutdown did not finish in 30 s; exiting without it")
	}
	return nil
}

type mirrorFactory struct{ m *Mirror }

func (f mirrorFactory) CreateProcessor() kcl.IRecordProcessor { return &mirrorShard{m: f.m} }

type mirrorShard struct {
	m     *Mirror
	shard string
	lost  atomic.Bool // another mirror owns the lease: this processor is done
}

func (p *mirrorShard) Initialize(in *kcl.InitializationInput) { p.shard = in.ShardId }

// ownsLease is the mirror's lease guard (as the worker's, source/lease.go):
// v1.0.0 tells a processor nothing when its lease is taken (expired while
// this mirror was frozen or slow, or stolen), and its checkpoint is an
// unconditional PutItem that names this worker the owner again. Read the
// owner; when it is another mirror, mark the shard lost for good: it puts
// nothing more and never checkpoints (the new owner re-reads from the last
// checkpoint). strict: a failed read counts as not owned (for a
// checkpoint, which the next batch retries); otherwise a failed read lets
// the caller go on (a put of a batch that may be put again by the new
// owner is harmless, a batch skipped on a DynamoDB hiccup would be lost to
// the canary).
func (p *mirrorShard) ownsLease(strict bool) bool {
	if p.lost.Load() {
		return false
	}
	owner, err := p.m.owner(p.m.ctx, p.shard)
	if err != nil {
		p.m.log.Warn("mirror: lease guard: reading the lease failed", "shard", p.shard, "err", err, "checkpoint", strict)
		return !strict
	}
	if owner == p.m.cfg.WorkerID {
		return true
	}
	p.lost.Store(true)
	p.m.cfg.Stats.LeasesLost.Add(1)
	p.m.log.Warn("mirror: lease lost: another mirror owns the shard; putting and checkpointing nothing more here",
		"shard", p.shard, "owner", owner)
	return false
}

func (p *mirrorShard) ProcessRecords(in *kcl.ProcessRecordsInput) {
	m, st := p.m, p.m.cfg.Stats
	if m.ctx.Err() != nil || p.lost.Load() {
		return
	}
	st.Behind.Store(in.MillisBehindLatest)
	if len(in.Records) == 0 {
		return
	}
	if !p.ownsLease(false) {
		return
	}
	var sel []kpl.Record
	for i := range in.Records {
		r := &in.Records[i]
		st.Read.Add(1)
		if k, ok := keyspace.EventKey(r.Data); ok && keyspace.Selected(k, m.cfg.Share) {
			sel = append(sel, kpl.Record{PartitionKey: aws.ToString(r.PartitionKey), Data: r.Data})
		}
	}
	st.Selected.Add(int64(len(sel)))
	if err := m.put(p.shard, sel); err != nil {
		// Stopping: nothing checkpointed, the batch comes back.
		return
	}
	if !p.ownsLease(true) {
		return
	}
	last := aws.ToString(in.Records[len(in.Records)-1].SequenceNumber)
	if err := in.Checkpointer.Checkpoint(&last); err != nil {
		m.log.Warn("mirror: checkpoint failed (retried with the next batch)", "shard", p.shard, "err", err)
		return
	}
	st.Checkpoints.Add(1)
}

func (p *mirrorShard) Shutdown(in *kcl.ShutdownInput) {
	if in.ShutdownReason == kcl.TERMINATE && p.ownsLease(true) {
		// Shard end: every batch was put before its checkpoint.
		if err := in.Checkpointer.Checkpoint(nil); err != nil {
			p.m.log.Warn("mirror: shard-end checkpoint failed", "shard", p.shard, "err", err)
		}
	}
}

// entries turns the selected records into PutRecords entries: with
// Aggregate, the records of one partition key become KPL aggregates (so
// they stay on one canary shard), else one entry each.
func (m *Mirror) entries(sel []kpl.Record) (out []ktypes.PutRecordsRequestEntry, users []int) {
	if !m.cfg.Aggregate {
		for _, r := range sel {
			out = append(out, ktypes.PutRecordsRequestEntry{PartitionKey: aws.String(r.PartitionKey), Data: r.Data})
			users = append(users, 1)
		}
		return out, users
	}
	var order []string
	by := map[string][]kpl.Record{}
	for _, r := range sel {
		if _, ok := by[r.PartitionKey]; !ok {
			order = append(order, r.PartitionKey)
		}
		by[r.PartitionKey] = append(by[r.PartitionKey], r)
	}
	for _, pk := range order {
		a := kpl.NewAggregator(0)
		flush := func() {
			if agg, ok := a.Flush(); ok {
				out = append(out, ktypes.PutRecordsRequestEntry{PartitionKey: aws.String(agg.PartitionKey), Data: agg.Data})
				users = append(users, agg.Records)
			}
		}
		for _, r := range by[pk] {
			if !a.Fits(r) {
				flush()
				out = append(out, ktypes.PutRecordsRequestEntry{PartitionKey: aws.String(r.PartitionKey), Data: r.Data})
				users = append(users, 1)
				continue
			}
			if !a.Add(r) {
				flush()
				a.Add(r)
			}
		}
		flush()
	}
	return out, users
}

// put sends sel to the canary stream until every record is acknowledged
// (failed entries are sent again with backoff) or the mirror stops.
func (m *Mirror) put(shard string, sel []kpl.Record) error {
	st := m.cfg.Stats
	pending, users := m.entries(sel)
	backoff := 50 * time.Millisecond
	for len(pending) > 0 {
		n := min(len(pending), 500) // the PutRecords limit
		size := 0
		for i := 0; i < n; i++ {
			size += len(pending[i].Data) + len(aws.ToString(pending[i].PartitionKey))
			if size > 5<<20 {
				n = max(i, 1)
				break
			}
		}
		// Not m.ctx: a stop must not abort a call in flight (kinesalite
		// dies of an aborted request; Kinesis would just have put the
		// records). The stop is checked between calls.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), 30*time.Second)
		out, err := m.kin.PutRecords(pctx, &kinesis.PutRecordsInput{StreamName: aws.String(m.cfg.Canary), Records: pending[:n]})
		cancel()
		var retry []ktypes.PutRecordsRequestEntry
		var retryUsers []int
		if err != nil {
			if m.ctx.Err() != nil {
				return m.ctx.Err()
			}
			m.log.Warn("mirror: PutRecords failed; retrying", "shard", shard, "records", n, "err", err)
			retry, retryUsers = pending[:n], users[:n]
		} else {
			for i, r := range out.Records {
				if r.ErrorCode != nil {
					retry = append(retry, pending[i])
					retryUsers = append(retryUsers, users[i])
					continue
				}
				st.Put.Add(int64(users[i]))
				st.PutRecords.Add(1)
			}
		}
		pending = append(retry, pending[n:]...)
		users = append(retryUsers, users[n:]...)
		if len(retry) > 0 {
			st.PutRetries.Add(int64(len(retry)))
			d := backoff/2 + time.Duration(rand.Int64N(int64(backoff)))
			select {
			case <-m.ctx.Done():
				return m.ctx.Err()
			case <-time.After(d):
			}
			backoff = min(2*backoff, 2*time.Second)
		} else {
			backoff = 50 * time.Millisecond
		}
	}
	return nil
}
