package window

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of [Config].
const (
	DefaultSize     = 10 * time.Second
	DefaultLateness = 500 * time.Millisecond
)

// Config says how records are cut into windows.
type Config struct {
	// Size of a tumbling window (default 10 s). Windows are aligned on the
	// Unix epoch: [k*Size, (k+1)*Size).
	Size time.Duration
	// Lateness is how far the watermark must pass a window's end before the
	// window is sealed (default 500 ms). A record for a sealed window is
	// late: counted and still written, never dropped.
	Lateness time.Duration
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Size == 0 {
		c.Size = DefaultSize
	}
	if c.Lateness == 0 {
		c.Lateness = DefaultLateness
	}
	return c
}

// ErrConfig is wrapped by every error of [Config.Validate].
var ErrConfig = errors.New("window: bad config")

// Validate says what to fix.
func (c Config) Validate() error {
	if c.Size < time.Millisecond || c.Size%time.Millisecond != 0 {
		return fmt.Errorf("%w: Size %v must be a positive whole number of milliseconds (e.g. 10s)", ErrConfig, c.Size)
	}
	if c.Lateness < 0 {
		return fmt.Errorf("%w: Lateness %v must be >= 0", ErrConfig, c.Lateness)
	}
	return nil
}

// Bucket returns the start (Unix ms) of the window holding ts (Unix ms).
func (c Config) Bucket(ts int64) int64 {
	size := c.Size.Milliseconds()
	b := ts - ts%size
	if ts < 0 && ts%size != 0 {
		b -= size
	}
	return b
}

// SealAt is the watermark (Unix ms) at which the window starting at bucket
// is sealed: its end plus the allowed lateness.
func (c Config) SealAt(bucket int64) int64 {
	return bucket + c.Size.Milliseconds() + c.Lateness.Milliseconds()
}

// Watermark is a shard's event-progress clock: the maximum record timestamp
// seen, advanced by processing time only while the shard is idle. It never
// goes back. The zero value has seen nothing. Not safe for concurrent use.
type Watermark struct {
	cfg Config
	ms  int64
	set bool
}

// NewWatermark returns a watermark for windows of cfg.
func NewWatermark(cfg Config) *Watermark { return &Watermark{cfg: cfg} }

// Restore sets the watermark to ms (from a checkpoint); it never goes back.
func (w *Watermark) Restore(ms int64) { w.Observe(ms) }

// Observe folds a record timestamp (Unix ms) into the watermark.
func (w *Watermark) Observe(ts int64) {
	if !w.set || ts > w.ms {
		w.ms, w.set = ts, true
	}
}

// Idle advances the watermark to the processing time now. Call it only
// when the shard has nothing pending: KCL reported it caught up (an empty
// batch, or MillisBehindLatest == 0 after the batch was processed), so no
// record with an earlier timestamp can still arrive except within the
// allowed lateness.
func (w *Watermark) Idle(now time.Time) { w.Observe(now.UnixMilli()) }

// Value returns the watermark (Unix ms) and whether anything was seen.
func (w *Watermark) Value() (int64, bool) { return w.ms, w.set }

// Sealed reports whether the window starting at bucket is sealed at the
// current watermark. A record whose bucket is sealed when it arrives is
// late.
func (w *Watermark) Sealed(bucket int64) bool {
	return w.set && w.ms >= w.cfg.SealAt(bucket)
}
