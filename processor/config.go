package processor

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/window"
)

// TimeSource says which timestamp chooses a record's window.
type TimeSource string

const (
	// TimeArrival uses the Kinesis ApproximateArrivalTimestamp (default):
	// the same on every replay, and close to processing time, so windows
	// seal promptly.
	TimeArrival TimeSource = "arrival"
	// TimeEvent uses the event's eventTime (producer clock).
	TimeEvent TimeSource = "event"
)

// Pipeline defaults.
const (
	DefaultRunTimeout      = time.Hour
	DefaultDedupTTL        = 24 * time.Hour
	DefaultBarrierInterval = time.Second
	DefaultMaxOpenKeys     = 1 << 18
	DefaultOutboxCap       = 4096
	DefaultChunkRecords    = 200
	DefaultDeadLetterBytes = 16 << 10
	DefaultParkAfter       = 5
)

// PipelineConfig configures the per-shard pipeline, in groups. The zero
// value of every field means its default ([PipelineConfig.WithDefaults]).
type PipelineConfig struct {
	// Window: the tumbling windows, what buckets a record, the refresh lane.
	Window WindowConfig
	// Semantics: what events mean (passed to semantics.Rules) and how
	// long a run lives.
	Semantics SemanticsConfig
	// Budgets bound a shard's memory, time and disk (budget.go).
	Budgets Budgets
	// Dedup: the local dedup set and the shared tier.
	Dedup DedupConfig
	// RunStore: the shared run-state store (runstore.go).
	RunStore RunStoreConfig
	// Drain: outbox entries and their delivery to the sink (drain.go).
	Drain DrainConfig
	// Archive: the event archive on S3 (archive.go); off by default.
	Archive ArchiveConfig

	// BarrierInterval: processing time between barriers (default 1 s).
	// Barriers also happen when a window seals and when the in-memory
	// table reaches Budgets.MaxOpenKeys.
	BarrierInterval time.Duration
	// Clock is processing time (default time.Now). Only barrier pacing
	// and idle watermark advance read it.
	Clock func() time.Time
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Stats receives counters (default: a new Stats).
	Stats *Stats
	// UnsafeBreak is fault injection for the e2e fault matrix, never for
	// production: "" (default) or [UnsafeBreakEarlyCheckpoint].
	UnsafeBreak string
}

// WindowConfig: the windows and what buckets a record.
type WindowConfig struct {
	// Size and Lateness of the tumbling windows.
	window.Config
	// TimeSource picks the timestamp that buckets a record (default arrival).
	TimeSource TimeSource
	// Refresh turns on the refresh lane (refresh.go): records that only
	// refresh a stamp (an unchanged facet property's eventTime, the
	// lastSeen of a known FIELD_OF, ALIAS_OF, Job CHILD_OF or
	// COLUMN_DERIVES edge) are collapsed over windows of this size instead
	// of Size. 0 (default): off. A whole multiple of Size, greater than it.
	Refresh time.Duration
}

// SemanticsConfig: what events mean (semantics.Config) and run lifetime.
type SemanticsConfig struct {
	// Policy is the commit policy (default strict).
	Policy semantics.Policy
	// Runs says which runs are recorded as Run vertices (no edge: the
	// vertex names its job and the datasets it read and wrote): "all"
	// (default: about one graph write per run and window), "failed" (the
	// runs that fail, whose datasets lineage never shows) or "none"
	// (lineage only).
	Runs semantics.RunRecords
	// NoColumnLineage turns column lineage off (DatasetField, FIELD_OF,
	// COLUMN_DERIVES from columnLineage facets): it costs about as many
	// graph writes as the dataset lineage on Spark-like workloads.
	NoColumnLineage bool
	// RunTimeout: an open run with no event for this long (by record
	// arrival time) expires without edges and is counted; committed and
	// closed runs are forgotten after it too (default 1 h; with a
	// run store, a retention: default 72 h, and the store's items expire
	// at the same age).
	RunTimeout time.Duration
}

// Budgets (budget.go; 0: the default). MaxEventDatasets: inputs + outputs
// of one event, beyond: dead letter too_many_datasets. MaxRunDatasets:
// inputs + outputs a run accumulates, beyond: left out, counted.
// MaxEmissionEdges: edges of one emission, beyond: the DERIVES edges left
// out, counted. MaxDeadLettersPerBarrier: dead letters held in memory,
// reaching it forces a barrier. MaxRuns: runs a shard holds, beyond: the
// oldest forgotten, counted. DeadLetterRetention (age by arrival time) and
// DeadLetterMaxBytes (per shard): older or beyond, the oldest dead letters
// are deleted, counted; negative: no bound.
type Budgets struct {
	MaxEventDatasets         int
	MaxRunDatasets           int
	MaxEmissionEdges         int
	MaxDeadLettersPerBarrier int
	MaxRuns                  int
	DeadLetterRetention      time.Duration
	DeadLetterMaxBytes       int64
	// MaxOpenKeys caps the in-memory delta table between barriers
	// (default 262144); reaching it forces a barrier, so memory stays flat
	// whatever a window holds.
	MaxOpenKeys int
	// MaxRecordBytes is the decoder's size limit (default
	// lineage.DefaultMaxBytes, 1 MiB: the Kinesis record limit, so no
	// record Kinesis delivers is refused for its size). Larger records are
	// dead letters with reason oversized.
	MaxRecordBytes int
	// DeadLetterBytes caps the raw bytes kept per dead letter (default 16 KiB).
	DeadLetterBytes int
	// MaxNameBytes bounds every namespace, name and run id (default
	// lineage.DefaultMaxNameBytes, 64 KiB, well under the Gremlin client's
	// 1 MiB write buffer); beyond: dead letter name_too_long (lineage.Guard).
	MaxNameBytes int
	// MaxEventFuture: an eventTime later than arrival plus it is a dead
	// letter event_time_out_of_range, as is one before 1970 (default
	// lineage.DefaultMaxEventFuture, 24 h; negative: no upper bound).
	MaxEventFuture time.Duration
}

// DedupConfig: the dedup tiers.
type DedupConfig struct {
	// TTL: how long (by record arrival time) a payload hash is kept for
	// dedup (default 24 h).
	TTL time.Duration
	// MaxBytes bounds the memory of a shard's dedup old tier (its
	// fingerprint table; the recent tier is a fixed ~16 MiB). Beyond, the
	// old tier is looked up in Pebble (slower, exact), counted. Negative:
	// no bound.
	MaxBytes int64
	// Shared is the dedup tier shared by every worker (nil: the local
	// tier only). See shared.go.
	Shared SharedDedup
	// SharedTimeout bounds one batch's claim on Shared (default 50 ms);
	// past it the local tier decides alone.
	SharedTimeout time.Duration
}

// RunStoreConfig: the run-state store shared by every worker.
type RunStoreConfig struct {
	// Store is the run store (nil: run state only in the local Pebble,
	// open runs pin the checkpoint). See runstore.go.
	Store RunStore
	// Timeout bounds one barrier's write to Store and one batch's read,
	// retries included (default 30 s); past it the shard fails (the
	// worker stops and restarts from its checkpoint).
	Timeout time.Duration
}

// DrainConfig: outbox entries and the drain to the sink.
type DrainConfig struct {
	// OutboxCap is the number of unacknowledged outbox entries per shard
	// at which sealing blocks (default 4096): the backpressure bound.
	OutboxCap int
	// ChunkRecords is the maximum number of vertex+edge records in one
	// outbox entry (default 200, the Neptune guidance).
	ChunkRecords int
	// Backoff is the first retry delay of a failed WriteBatch (default
	// 50 ms, doubling up to BackoffMax, default 5 s).
	Backoff, BackoffMax time.Duration
	// ParkAfter: an outbox entry the sink refuses with a permanent
	// (non-retriable) error this many times in a row is parked and the
	// shard goes on (default 5; drain.go).
	ParkAfter int
}

// WithDefaults fills zero fields.
func (c PipelineConfig) WithDefaults() PipelineConfig {
	c.Window.Config = c.Window.Config.WithDefaults()
	if c.Window.TimeSource == "" {
		c.Window.TimeSource = TimeArrival
	}
	if c.Semantics.Runs == "" {
		c.Semantics.Runs = semantics.RunsAll
	}
	if c.Semantics.Policy == "" {
		c.Semantics.Policy = semantics.PolicyStrict
	}
	if c.Semantics.RunTimeout == 0 {
		c.Semantics.RunTimeout = DefaultRunTimeout
		if c.RunStore.Store != nil {
			c.Semantics.RunTimeout = DefaultStoreRunTimeout
		}
	}
	if c.RunStore.Timeout == 0 {
		c.RunStore.Timeout = DefaultRunStoreTimeout
	}
	if c.Dedup.TTL == 0 {
		c.Dedup.TTL = DefaultDedupTTL
	}
	if c.BarrierInterval == 0 {
		c.BarrierInterval = DefaultBarrierInterval
	}
	b := &c.Budgets
	if b.MaxOpenKeys == 0 {
		b.MaxOpenKeys = DefaultMaxOpenKeys
	}
	if c.Drain.OutboxCap == 0 {
		c.Drain.OutboxCap = DefaultOutboxCap
	}
	if c.Drain.ChunkRecords == 0 {
		c.Drain.ChunkRecords = DefaultChunkRecords
	}
	if b.DeadLetterBytes == 0 {
		b.DeadLetterBytes = DefaultDeadLetterBytes
	}
	if b.MaxRecordBytes == 0 {
		b.MaxRecordBytes = lineage.DefaultMaxBytes
	}
	if b.MaxNameBytes == 0 {
		b.MaxNameBytes = lineage.DefaultMaxNameBytes
	}
	if b.MaxEventFuture == 0 {
		b.MaxEventFuture = lineage.DefaultMaxEventFuture
	}
	if b.MaxEventDatasets == 0 {
		b.MaxEventDatasets = DefaultMaxEventDatasets
	}
	if b.MaxRunDatasets == 0 {
		b.MaxRunDatasets = DefaultMaxRunDatasets
	}
	if b.MaxEmissionEdges == 0 {
		b.MaxEmissionEdges = DefaultMaxEmissionEdges
	}
	if b.MaxDeadLettersPerBarrier == 0 {
		b.MaxDeadLettersPerBarrier = DefaultMaxDeadLettersPerBarrier
	}
	if b.MaxRuns == 0 {
		b.MaxRuns = DefaultMaxRuns
	}
	if b.DeadLetterRetention == 0 {
		b.DeadLetterRetention = DefaultDeadLetterRetention
	}
	if b.DeadLetterMaxBytes == 0 {
		b.DeadLetterMaxBytes = DefaultDeadLetterMaxBytes
	}
	if c.Dedup.MaxBytes == 0 {
		c.Dedup.MaxBytes = DefaultDedupMaxBytes
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Stats == nil {
		c.Stats = &Stats{}
	}
	if c.Dedup.SharedTimeout == 0 {
		c.Dedup.SharedTimeout = DefaultSharedDedupTimeout
	}
	if c.Drain.ParkAfter == 0 {
		c.Drain.ParkAfter = DefaultParkAfter
	}
	if c.Drain.Backoff == 0 {
		c.Drain.Backoff = 50 * time.Millisecond
	}
	if c.Drain.BackoffMax == 0 {
		c.Drain.BackoffMax = 5 * time.Second
	}
	if c.Archive.MinBytes == 0 {
		c.Archive.MinBytes = DefaultArchiveMinBytes
	}
	if c.Archive.MaxAge == 0 {
		c.Archive.MaxAge = DefaultArchiveMaxAge
	}
	if c.Archive.Backoff == 0 {
		c.Archive.Backoff = 100 * time.Millisecond
	}
	return c
}

// rules is the configuration of the shard's semantics.Rules.
func (c *PipelineConfig) rules() semantics.Config {
	return semantics.Config{Policy: c.Semantics.Policy, Runs: c.Semantics.Runs, NoColumnLineage: c.Semantics.NoColumnLineage,
		MaxRunDatasets: c.Budgets.MaxRunDatasets, MaxEmissionEdges: c.Budgets.MaxEmissionEdges}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("processor: bad config")

// Validate says what to fix. Call it on the result of WithDefaults.
func (c PipelineConfig) Validate() error {
	if err := c.Window.Config.Validate(); err != nil {
		return err
	}
	switch c.Window.TimeSource {
	case TimeArrival, TimeEvent:
	default:
		return fmt.Errorf("%w: time source %q: use %q or %q", ErrConfig, c.Window.TimeSource, TimeArrival, TimeEvent)
	}
	switch c.Semantics.Runs {
	case semantics.RunsAll, semantics.RunsFailed, semantics.RunsNone:
	default:
		return fmt.Errorf("%w: runs %q: use %q, %q or %q", ErrConfig, c.Semantics.Runs, semantics.RunsAll, semantics.RunsFailed, semantics.RunsNone)
	}
	switch c.Semantics.Policy {
	case semantics.PolicyStrict, semantics.PolicyAny:
	default:
		return fmt.Errorf("%w: policy %q: use %q or %q", ErrConfig, c.Semantics.Policy, semantics.PolicyStrict, semantics.PolicyAny)
	}
	if c.Semantics.RunTimeout < 0 || c.Dedup.TTL < 0 || c.BarrierInterval < 0 || c.Dedup.SharedTimeout < 0 || c.RunStore.Timeout < 0 {
		return fmt.Errorf("%w: run timeout, dedup TTL, shared dedup timeout, run store timeout and barrier interval must be >= 0", ErrConfig)
	}
	if c.RunStore.Store != nil && c.Semantics.RunTimeout < c.Window.Size+c.Window.Lateness {
		return fmt.Errorf("%w: run timeout %v with a run store: it is the runs' retention, set it to at least a window plus its lateness (%v; default %v)",
			ErrConfig, c.Semantics.RunTimeout, c.Window.Size+c.Window.Lateness, DefaultStoreRunTimeout)
	}
	if r := c.Window.Refresh; r != 0 {
		if size := c.Window.Size; r < 0 || r <= size || r%size != 0 || size < 2*time.Millisecond {
			return fmt.Errorf("%w: refresh window %v: must be 0 (off) or a whole multiple of the window size %v greater than it (e.g. %v)", ErrConfig, r, size, 6*size)
		}
	}
	switch c.UnsafeBreak {
	case "", UnsafeBreakEarlyCheckpoint:
	default:
		return fmt.Errorf("%w: unsafe break %q: use \"\" or %q", ErrConfig, c.UnsafeBreak, UnsafeBreakEarlyCheckpoint)
	}
	b := &c.Budgets
	if b.MaxRecordBytes < 1024 || b.MaxRecordBytes > lineage.DefaultMaxBytes {
		return fmt.Errorf("%w: max record bytes %d: must be in 1024..%d (a Kinesis record is at most 1 MiB)", ErrConfig, b.MaxRecordBytes, lineage.DefaultMaxBytes)
	}
	if b.MaxNameBytes < 64 || b.MaxNameBytes > lineage.DefaultMaxBytes/8 {
		return fmt.Errorf("%w: max name bytes %d: must be in 64..%d (a vertex write holds its id and name twice, in a 1 MiB request)", ErrConfig, b.MaxNameBytes, lineage.DefaultMaxBytes/8)
	}
	if b.MaxEventDatasets < 1 || b.MaxRunDatasets < 1 || b.MaxEmissionEdges < 1 || b.MaxDeadLettersPerBarrier < 1 || b.MaxRuns < 1 {
		return fmt.Errorf("%w: max event datasets, run datasets, emission edges, dead letters per barrier and runs must be >= 1", ErrConfig)
	}
	if c.Dedup.MaxBytes > 0 && c.Dedup.MaxBytes < int64(fpMinSlots)*4 {
		return fmt.Errorf("%w: dedup max bytes %d: must be >= %d (the smallest fingerprint table) or negative (no bound)", ErrConfig, c.Dedup.MaxBytes, fpMinSlots*4)
	}
	if c.Drain.ParkAfter < 1 {
		return fmt.Errorf("%w: park after %d: must be >= 1", ErrConfig, c.Drain.ParkAfter)
	}
	if a := &c.Archive; a.Store != nil {
		if c.Dedup.Shared == nil {
			return fmt.Errorf("%w: the archive needs the shared dedup tier (-dedup-redis): a shard taken over by another worker must decide duplicates as its first owner did, or the archive holds an event twice", ErrConfig)
		}
		if a.MinBytes < 1 || a.MaxAge < 0 || a.Backoff < 0 {
			return fmt.Errorf("%w: archive min bytes %d and max age %v must be > 0", ErrConfig, a.MinBytes, a.MaxAge)
		}
		if a.Prefix != "" && a.Prefix[len(a.Prefix)-1] != '/' {
			return fmt.Errorf("%w: archive prefix %q must be empty or end in /", ErrConfig, a.Prefix)
		}
	}
	if b.MaxOpenKeys < 1 || c.Drain.OutboxCap < 1 || c.Drain.ChunkRecords < 3 {
		return fmt.Errorf("%w: MaxOpenKeys and OutboxCap must be >= 1 and ChunkRecords >= 3 (an edge and its two vertices)", ErrConfig)
	}
	return nil
}
