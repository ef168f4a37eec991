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

// PipelineConfig configures the per-shard pipeline. The zero value of
// every field means its default ([PipelineConfig.WithDefaults]).
type PipelineConfig struct {
	// Window sizes the tumbling windows and their allowed lateness.
	Window window.Config
	// TimeSource picks the timestamp that buckets a record (default arrival).
	TimeSource TimeSource
	// Policy is the commit policy (default strict).
	Policy semantics.Policy
	// Runs says which runs are recorded as Run vertices with RUN_OF, READ
	// and WROTE edges: "failed" (default: the runs that fail, whose
	// datasets lineage never shows), "all" (at least one graph write per
	// run) or "none" (lineage only).
	Runs semantics.RunRecords
	// NoColumnLineage turns column lineage off (DatasetField, FIELD_OF,
	// COLUMN_DERIVES from columnLineage facets): it costs about as many
	// graph writes as the dataset lineage on Spark-like workloads.
	NoColumnLineage bool
	// RefreshWindow turns on the refresh lane (refresh.go): records that
	// only refresh a stamp (an unchanged facet property's eventTime, the
	// lastSeen of a known FIELD_OF, ALIAS_OF, Job CHILD_OF or
	// COLUMN_DERIVES edge) are collapsed over windows of this size instead
	// of Window.Size. 0 (default): off. A whole multiple of Window.Size,
	// greater than it.
	RefreshWindow time.Duration
	// RunTimeout: an open run with no event for this long (by record
	// arrival time) expires without edges and is counted; committed and
	// closed runs are forgotten after it too (default 1 h; with a
	// RunStore, a retention: default 72 h, and the store's items expire
	// at the same age).
	RunTimeout time.Duration
	// RunStore is the run-state store shared by every worker (nil: run
	// state only in the local Pebble, open runs pin the checkpoint). See
	// runstore.go.
	RunStore RunStore
	// RunStoreTimeout bounds one barrier's write to RunStore and one
	// batch's read, retries included (default 30 s); past it the shard
	// fails (the worker stops and restarts from its checkpoint).
	RunStoreTimeout time.Duration
	// DedupTTL: how long (by record arrival time) a payload hash is kept
	// for dedup (default 24 h).
	DedupTTL time.Duration
	// BarrierInterval: processing time between barriers (default 1 s).
	// Barriers also happen when a window seals and when the in-memory
	// table reaches MaxOpenKeys.
	BarrierInterval time.Duration
	// MaxOpenKeys caps the in-memory delta table between barriers
	// (default 262144); reaching it forces a barrier, so memory stays flat
	// whatever a window holds.
	MaxOpenKeys int
	// OutboxCap is the number of unacknowledged outbox entries per shard
	// at which sealing blocks (default 4096): the backpressure bound.
	OutboxCap int
	// ChunkRecords is the maximum number of vertex+edge records in one
	// outbox entry (default 200, the Neptune guidance).
	ChunkRecords int
	// MaxRecordBytes is the decoder's size limit (default
	// lineage.DefaultMaxBytes, 1 MiB: the Kinesis record limit, so no
	// record Kinesis delivers is refused for its size). Larger records are
	// dead letters with reason oversized.
	MaxRecordBytes int
	// DeadLetterBytes caps the raw bytes kept per dead letter (default 16 KiB).
	DeadLetterBytes int
	// Budgets (budget.go; 0: the default). MaxEventDatasets: inputs +
	// outputs of one event, beyond: dead letter too_many_datasets.
	// MaxRunDatasets: inputs + outputs a run accumulates, beyond: left out,
	// counted. MaxEmissionEdges: edges of one emission, beyond: the DERIVES
	// edges left out, counted. MaxDeadLettersPerBarrier: dead letters held
	// in memory, reaching it forces a barrier. MaxRuns: runs a shard holds,
	// beyond: the oldest forgotten, counted. DeadLetterRetention (age by
	// arrival time) and DeadLetterMaxBytes (per shard): older or beyond,
	// the oldest dead letters are deleted, counted; negative: no bound.
	MaxEventDatasets         int
	MaxRunDatasets           int
	MaxEmissionEdges         int
	MaxDeadLettersPerBarrier int
	MaxRuns                  int
	DeadLetterRetention      time.Duration
	DeadLetterMaxBytes       int64
	// DedupMaxBytes bounds the memory of a shard's dedup old tier (its
	// fingerprint table; the recent tier is a fixed ~16 MiB). Beyond, the
	// old tier is looked up in Pebble (slower, exact), counted. Negative:
	// no bound.
	DedupMaxBytes int64
	// Clock is processing time (default time.Now). Only barrier pacing
	// and idle watermark advance read it.
	Clock func() time.Time
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Stats receives counters (default: a new Stats).
	Stats *Stats
	// SinkBackoff is the first retry delay of a failed WriteBatch (default
	// 50 ms, doubling up to SinkBackoffMax, default 5 s).
	SinkBackoff, SinkBackoffMax time.Duration
	// SharedDedup is the dedup tier shared by every worker (nil: the
	// local tier only). See shared.go.
	SharedDedup SharedDedup
	// SharedDedupTimeout bounds one batch's claim on SharedDedup
	// (default 50 ms); past it the local tier decides alone.
	SharedDedupTimeout time.Duration
	// ParkAfter: an outbox entry the sink refuses with a permanent
	// (non-retriable) error this many times in a row is parked and the
	// shard goes on (default 5; drain.go).
	ParkAfter int
	// UnsafeBreak is fault injection for the e2e fault matrix, never for
	// production: "" (default) or [UnsafeBreakEarlyCheckpoint].
	UnsafeBreak string
}

// WithDefaults fills zero fields.
func (c PipelineConfig) WithDefaults() PipelineConfig {
	c.Window = c.Window.WithDefaults()
	if c.TimeSource == "" {
		c.TimeSource = TimeArrival
	}
	if c.Runs == "" {
		c.Runs = semantics.RunsFailed
	}
	if c.Policy == "" {
		c.Policy = semantics.PolicyStrict
	}
	if c.RunTimeout == 0 {
		c.RunTimeout = DefaultRunTimeout
		if c.RunStore != nil {
			c.RunTimeout = DefaultStoreRunTimeout
		}
	}
	if c.RunStoreTimeout == 0 {
		c.RunStoreTimeout = DefaultRunStoreTimeout
	}
	if c.DedupTTL == 0 {
		c.DedupTTL = DefaultDedupTTL
	}
	if c.BarrierInterval == 0 {
		c.BarrierInterval = DefaultBarrierInterval
	}
	if c.MaxOpenKeys == 0 {
		c.MaxOpenKeys = DefaultMaxOpenKeys
	}
	if c.OutboxCap == 0 {
		c.OutboxCap = DefaultOutboxCap
	}
	if c.ChunkRecords == 0 {
		c.ChunkRecords = DefaultChunkRecords
	}
	if c.DeadLetterBytes == 0 {
		c.DeadLetterBytes = DefaultDeadLetterBytes
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = lineage.DefaultMaxBytes
	}
	if c.MaxEventDatasets == 0 {
		c.MaxEventDatasets = DefaultMaxEventDatasets
	}
	if c.MaxRunDatasets == 0 {
		c.MaxRunDatasets = DefaultMaxRunDatasets
	}
	if c.MaxEmissionEdges == 0 {
		c.MaxEmissionEdges = DefaultMaxEmissionEdges
	}
	if c.MaxDeadLettersPerBarrier == 0 {
		c.MaxDeadLettersPerBarrier = DefaultMaxDeadLettersPerBarrier
	}
	if c.MaxRuns == 0 {
		c.MaxRuns = DefaultMaxRuns
	}
	if c.DeadLetterRetention == 0 {
		c.DeadLetterRetention = DefaultDeadLetterRetention
	}
	if c.DeadLetterMaxBytes == 0 {
		c.DeadLetterMaxBytes = DefaultDeadLetterMaxBytes
	}
	if c.DedupMaxBytes == 0 {
		c.DedupMaxBytes = DefaultDedupMaxBytes
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
	if c.SharedDedupTimeout == 0 {
		c.SharedDedupTimeout = DefaultSharedDedupTimeout
	}
	if c.ParkAfter == 0 {
		c.ParkAfter = DefaultParkAfter
	}
	if c.SinkBackoff == 0 {
		c.SinkBackoff = 50 * time.Millisecond
	}
	if c.SinkBackoffMax == 0 {
		c.SinkBackoffMax = 5 * time.Second
	}
	return c
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("processor: bad config")

// Validate says what to fix. Call it on the result of WithDefaults.
func (c PipelineConfig) Validate() error {
	if err := c.Window.Validate(); err != nil {
		return err
	}
	switch c.TimeSource {
	case TimeArrival, TimeEvent:
	default:
		return fmt.Errorf("%w: time source %q: use %q or %q", ErrConfig, c.TimeSource, TimeArrival, TimeEvent)
	}
	switch c.Runs {
	case semantics.RunsAll, semantics.RunsFailed, semantics.RunsNone:
	default:
		return fmt.Errorf("%w: runs %q: use %q, %q or %q", ErrConfig, c.Runs, semantics.RunsAll, semantics.RunsFailed, semantics.RunsNone)
	}
	switch c.Policy {
	case semantics.PolicyStrict, semantics.PolicyAny:
	default:
		return fmt.Errorf("%w: policy %q: use %q or %q", ErrConfig, c.Policy, semantics.PolicyStrict, semantics.PolicyAny)
	}
	if c.RunTimeout < 0 || c.DedupTTL < 0 || c.BarrierInterval < 0 || c.SharedDedupTimeout < 0 || c.RunStoreTimeout < 0 {
		return fmt.Errorf("%w: run timeout, dedup TTL, shared dedup timeout, run store timeout and barrier interval must be >= 0", ErrConfig)
	}
	if c.RunStore != nil && c.RunTimeout < c.Window.Size+c.Window.Lateness {
		return fmt.Errorf("%w: run timeout %v with a run store: it is the runs' retention, set it to at least a window plus its lateness (%v; default %v)",
			ErrConfig, c.RunTimeout, c.Window.Size+c.Window.Lateness, DefaultStoreRunTimeout)
	}
	if r := c.RefreshWindow; r != 0 {
		if size := c.Window.Size; r < 0 || r <= size || r%size != 0 || size < 2*time.Millisecond {
			return fmt.Errorf("%w: refresh window %v: must be 0 (off) or a whole multiple of the window size %v greater than it (e.g. %v)", ErrConfig, r, size, 6*size)
		}
	}
	switch c.UnsafeBreak {
	case "", UnsafeBreakEarlyCheckpoint:
	default:
		return fmt.Errorf("%w: unsafe break %q: use \"\" or %q", ErrConfig, c.UnsafeBreak, UnsafeBreakEarlyCheckpoint)
	}
	if c.MaxRecordBytes < 1024 || c.MaxRecordBytes > lineage.DefaultMaxBytes {
		return fmt.Errorf("%w: max record bytes %d: must be in 1024..%d (a Kinesis record is at most 1 MiB)", ErrConfig, c.MaxRecordBytes, lineage.DefaultMaxBytes)
	}
	if c.MaxEventDatasets < 1 || c.MaxRunDatasets < 1 || c.MaxEmissionEdges < 1 || c.MaxDeadLettersPerBarrier < 1 || c.MaxRuns < 1 {
		return fmt.Errorf("%w: max event datasets, run datasets, emission edges, dead letters per barrier and runs must be >= 1", ErrConfig)
	}
	if c.DedupMaxBytes > 0 && c.DedupMaxBytes < int64(fpMinSlots)*4 {
		return fmt.Errorf("%w: dedup max bytes %d: must be >= %d (the smallest fingerprint table) or negative (no bound)", ErrConfig, c.DedupMaxBytes, fpMinSlots*4)
	}
	if c.ParkAfter < 1 {
		return fmt.Errorf("%w: park after %d: must be >= 1", ErrConfig, c.ParkAfter)
	}
	if c.MaxOpenKeys < 1 || c.OutboxCap < 1 || c.ChunkRecords < 3 {
		return fmt.Errorf("%w: MaxOpenKeys and OutboxCap must be >= 1 and ChunkRecords >= 3 (an edge and its two vertices)", ErrConfig)
	}
	return nil
}
