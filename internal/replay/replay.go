package replay

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"regexp"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/lineageflow/lineageflow/internal/kpl"
)

// Kinesis PutRecords limits.
const (
	MaxBatchRecords = 500
	MaxBatchBytes   = 5 << 20 // data and partition keys of a request
	MaxRecordBytes  = kpl.MaxRecordSize
)

// Client is the part of the Kinesis API replay uses; *kinesis.Client
// implements it.
type Client interface {
	PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error)
	CreateStream(ctx context.Context, in *kinesis.CreateStreamInput, optFns ...func(*kinesis.Options)) (*kinesis.CreateStreamOutput, error)
	DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
	ListShards(ctx context.Context, in *kinesis.ListShardsInput, optFns ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error)
}

// Config says where and how to replay. The zero value of every field but
// Stream is a usable default.
type Config struct {
	// Stream is the Kinesis stream name.
	Stream string
	// Shards, when > 0, is the shard count the stream is created with if it
	// does not exist. 0: the stream must exist. An existing stream is used
	// as it is, whatever its shard count.
	Shards int
	// Rate limits the user records sent per second; 0 sends as fast as
	// possible.
	Rate float64
	// Aggregate is the share (0..1) of user records sent KPL-aggregated,
	// chosen at random (seeded by Seed). A record too large for an aggregate
	// is always sent plain.
	Aggregate float64
	// AggregateMaxSize is the size limit of an aggregated record's data;
	// 0 means kpl.DefaultMaxSize (50 KiB, the KPL's default).
	AggregateMaxSize int
	// Seed seeds the aggregation choice, so a replay is repeatable.
	Seed uint64
	// Concurrency is the number of lanes: each sends one PutRecords request
	// at a time. Partition keys are spread over lanes by hash. 0 means 4.
	Concurrency int
	// Linger is how long a lane waits for more records to fill a request
	// before sending a partial one. 0 means 10ms; negative sends at once.
	Linger time.Duration
	// LooseOrder lets one PutRecords request carry several records of a
	// partition key. Faster for hot keys, but a partially failed request can
	// then store a later record of a key before an earlier one (as the KPL
	// can). By default a request carries at most one Kinesis record per
	// user partition key, and a failed record is re-sent before any later
	// record of its keys.
	LooseOrder bool
	// MaxAttempts bounds the sends of one Kinesis record (first send
	// included) before Run fails. 0 means 30.
	MaxAttempts int
	// RetryBackoff is the first wait of a lane after a failure, doubled per
	// consecutive failure up to MaxRetryBackoff, with jitter. 0 means 100ms
	// and 5s.
	RetryBackoff, MaxRetryBackoff time.Duration
	// CreateTimeout bounds the wait for a created stream to become ACTIVE;
	// 0 means 2 minutes. PollInterval is the DescribeStreamSummary poll
	// period; 0 means 200ms.
	CreateTimeout, PollInterval time.Duration
	// Progress, if set, gets a progress line every ProgressEvery (0 means
	// 10s). Total is the number of user records expected, for those lines;
	// 0 asks the Source (see [Sized]).
	Progress      io.Writer
	ProgressEvery time.Duration
	Total         int64
}

var streamName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)

// Validate reports what to fix in c.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("replay: "+format, args...)) }
	if !streamName.MatchString(c.Stream) {
		add("stream name %q: give 1 to 128 characters of a-z, A-Z, 0-9, '_', '.', '-'", c.Stream)
	}
	if c.Shards < 0 || c.Shards > 100000 {
		add("shards %d: give a shard count from 1 (0: the stream must exist)", c.Shards)
	}
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		add("rate %v: give records per second, or 0 for no limit", c.Rate)
	}
	if !(c.Aggregate >= 0 && c.Aggregate <= 1) {
		add("aggregate %v: give the share of records to aggregate, from 0 to 1", c.Aggregate)
	}
	if c.AggregateMaxSize != 0 && (c.AggregateMaxSize < 1024 || c.AggregateMaxSize > MaxRecordBytes-4*kpl.MaxPartitionKeyLen) {
		add("aggregate max size %d: give 1024 to %d bytes, or 0 for %d", c.AggregateMaxSize, MaxRecordBytes-4*kpl.MaxPartitionKeyLen, kpl.DefaultMaxSize)
	}
	if c.Concurrency < 0 || c.Concurrency > 1024 {
		add("concurrency %d: give 1 to 1024 lanes, or 0 for 4", c.Concurrency)
	}
	if c.MaxAttempts < 0 {
		add("max attempts %d: give at least 1, or 0 for 30", c.MaxAttempts)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"retry backoff", c.RetryBackoff}, {"max retry backoff", c.MaxRetryBackoff}, {"create timeout", c.CreateTimeout}, {"poll interval", c.PollInterval}, {"progress interval", c.ProgressEvery}} {
		if d.v < 0 {
			add("%s %v: give a positive duration, or 0 for the default", d.name, d.v)
		}
	}
	if c.Total < 0 {
		add("total %d: give the expected record count, or 0", c.Total)
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if c.AggregateMaxSize == 0 {
		c.AggregateMaxSize = kpl.DefaultMaxSize
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 30
	}
	def(&c.Linger, 10*time.Millisecond)
	def(&c.RetryBackoff, 100*time.Millisecond)
	def(&c.MaxRetryBackoff, 5*time.Second)
	def(&c.CreateTimeout, 2*time.Minute)
	def(&c.PollInterval, 200*time.Millisecond)
	def(&c.ProgressEvery, 10*time.Second)
	return c
}

// Summary counts what a replay did.
type Summary struct {
	UserRecords           int64 // user records written
	Records               int64 // Kinesis records written (plain + aggregated)
	AggregatedRecords     int64 // of Records, the KPL aggregates
	AggregatedUserRecords int64 // of UserRecords, those inside aggregates
	Bytes                 int64 // Kinesis bytes written: data and partition keys
	Requests              int64 // PutRecords calls
	Retries               int64 // Kinesis records sent again after a failure
	Throttles             int64 // of those failures, ProvisionedThroughputExceeded
	Shards                int   // open shards of the stream
	Duration              time.Duration
}

// RecordsPerSecond returns the user records written per second.
func (s Summary) RecordsPerSecond() float64 {
	if s.Duration <= 0 {
		return 0
	}
	return float64(s.UserRecords) / s.Duration.Seconds()
}

func (s Summary) String() string {
	return fmt.Sprintf("%d user records as %d Kinesis records (%d user records in %d KPL aggregates), %.1f MB, %d PutRecords, %d retries (%d throttled), %d shards, %s: %.0f user records/s",
		s.UserRecords, s.Records, s.AggregatedUserRecords, s.AggregatedRecords, float64(s.Bytes)/1e6,
		s.Requests, s.Retries, s.Throttles, s.Shards, s.Duration.Round(time.Millisecond), s.RecordsPerSecond())
}

// counters are the live Summary fields, shared by the lanes.
type counters struct {
	users, records, aggs, aggUsers, bytes, requests, retries, throttles atomic.Int64
}

// Run sends the records of src to the stream through client and returns
// what it did. It creates the stream when missing (see Config.Shards) and
// blocks until every record is written, ctx is done, or a record cannot
// be written (a non-retryable error, or MaxAttempts failures); the Summary
// then counts what was written so far.
//
// Order: records of one partition key are written in src's order (see
// Config.LooseOrder). A KPL aggregate holds only user records of keys that
// map to the same shard (from ListShards; if that fails, of one key only)
// and takes the first one's key as its own: Kinesis puts an aggregate on
// the shard of its outer key, so every user record still lands on the
// shard of its own key. A resharding during the replay can break that for
// aggregates built against the old shard map.
func Run(ctx context.Context, client Client, cfg Config, src Source) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	cfg = cfg.withDefaults()
	start := time.Now()
	if err := ensureStream(ctx, client, cfg); err != nil {
		return Summary{}, err
	}
	shards, err := loadShards(ctx, client, cfg.Stream)
	if err != nil {
		if ctx.Err() != nil {
			return Summary{}, ctx.Err()
		}
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "replay: %v: KPL aggregates will hold records of one partition key only\n", err)
		}
		shards = nil
	}
	r := &runner{cfg: cfg, client: client, shards: shards}
	sum, err := r.run(ctx, src)
	sum.Duration = time.Since(start)
	if shards != nil {
		sum.Shards = shards.len()
	}
	return sum, err
}

type runner struct {
	cfg    Config
	client Client
	shards *shardMap // nil: unknown
	c      counters
}

// item is a user record on its way to a lane.
type item struct {
	rec   Record
	agg   bool
	group groupKey
}

// groupKey says which user records may share an aggregate: those of one
// shard, or of one key when the shard map is unknown.
type groupKey struct {
	shard int
	key   string
}

func (r *runner) run(ctx context.Context, src Source) (Summary, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	lanes := make([]*lane, r.cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range lanes {
		lanes[i] = newLane(r, i)
		wg.Add(1)
		go func(l *lane) {
			defer wg.Done()
			if err := l.run(ctx); err != nil {
				cancel(err)
			}
		}(lanes[i])
	}

	stopProgress := r.progress(ctx, src)

	lim := newLimiter(r.cfg.Rate, time.Now, sleep)
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 0x6c696e65616765))
	fits := kpl.NewAggregator(r.cfg.AggregateMaxSize)
	var n int64
	srcErr := src.Records(ctx, func(rec Record) error {
		n++
		if err := checkRecord(rec, n); err != nil {
			return err
		}
		if err := lim.wait(ctx); err != nil {
			return err
		}
		it := item{rec: rec}
		if r.cfg.Aggregate > 0 && rng.Float64() < r.cfg.Aggregate {
			it.agg = fits.Fits(kpl.Record{PartitionKey: rec.PartitionKey, Data: rec.Data})
		}
		if r.shards != nil {
			it.group.shard = r.shards.shard(rec.PartitionKey)
		} else {
			it.group = groupKey{shard: -1, key: rec.PartitionKey}
		}
		l := lanes[laneOf(rec.PartitionKey, len(lanes))]
		select {
		case l.in <- it:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	for _, l := range lanes {
		close(l.in)
	}
	wg.Wait()
	stopProgress()

	sum := r.summary()
	cause := context.Cause(ctx)
	switch {
	case cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded):
		return sum, cause // a lane failed: its error first
	case srcErr != nil:
		if errors.Is(srcErr, cause) {
			return sum, srcErr
		}
		return sum, fmt.Errorf("replay: source: %w", srcErr)
	case cause != nil:
		return sum, cause
	}
	return sum, nil
}

func (r *runner) summary() Summary {
	return Summary{
		UserRecords:           r.c.users.Load(),
		Records:               r.c.records.Load(),
		AggregatedRecords:     r.c.aggs.Load(),
		AggregatedUserRecords: r.c.aggUsers.Load(),
		Bytes:                 r.c.bytes.Load(),
		Requests:              r.c.requests.Load(),
		Retries:               r.c.retries.Load(),
		Throttles:             r.c.throttles.Load(),
	}
}

// progress writes a progress line every ProgressEvery until the returned
// stop is called.
func (r *runner) progress(ctx context.Context, src Source) (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		total := r.cfg.Total
		if s, ok := src.(Sized); ok && total == 0 {
			total = s.Len()
		}
		start := time.Now()
		t := time.NewTicker(r.cfg.ProgressEvery)
		defer t.Stop()
		last, lastAt := int64(0), start
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				users := r.c.users.Load()
				rate := float64(users-last) / now.Sub(lastAt).Seconds()
				last, lastAt = users, now
				of := ""
				if total > 0 {
					of = fmt.Sprintf("/%d (%.0f%%)", total, 100*float64(users)/float64(total))
				}
				fmt.Fprintf(r.cfg.Progress, "replay: %s: %d%s user records sent, %.0f records/s, %d retries (%d throttled)\n",
					now.Sub(start).Round(time.Second), users, of, rate, r.c.retries.Load(), r.c.throttles.Load())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// checkRecord refuses what Kinesis would refuse for the whole request.
func checkRecord(rec Record, n int64) error {
	if rec.PartitionKey == "" || utf8.RuneCountInString(rec.PartitionKey) > kpl.MaxPartitionKeyLen {
		return fmt.Errorf("replay: record %d: partition key of %d characters: Kinesis takes 1 to %d", n, utf8.RuneCountInString(rec.PartitionKey), kpl.MaxPartitionKeyLen)
	}
	if size := len(rec.Data) + len(rec.PartitionKey); size > MaxRecordBytes {
		return fmt.Errorf("replay: record %d (key %q): %d bytes with its key, over the Kinesis limit of %d", n, rec.PartitionKey, size, MaxRecordBytes)
	}
	return nil
}

func laneOf(key string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}
