// Package dedupredis is the shared dedup tier on Redis
// ([processor.SharedDedup]; DESIGN.md, Processor, "Shared dedup tier").
//
// One [Store.Claim] is one pipelined round trip of, for each record,
//
//	SET <prefix><hex sha256> <owner> NX GET EX <ttl seconds>
//
// which records the owner (the record's shard/seq/sub) if the key is new
// and returns the owner already recorded otherwise (SET with NX and GET
// together needs Redis >= 7.0), then, only if some records of the batch
// are duplicates (their key has another owner), a second pipelined round
// trip of, for each of them,
//
//	SET <prefix>dup:<owner> 1 NX EX <ttl seconds>
//
// which marks the duplicate's position as counted: the claim that set the
// marker gets Count, a replay of the position (the new owner of a moved
// shard, or the old owner finishing its batch) does not, so the sum of the
// workers' duplicate counters is exact. No read-then-write race: two
// workers claiming the same key or position at once get one winner.
// (A Lua script doing both in one round trip cost 5-6x the claim time on
// the stand-in: bench/RESULTS.md.)
//
// Redis slow or down never blocks ingestion: every claim is bounded by its
// context (the processor's -dedup-timeout), the client does not retry, and
// after a failure the store answers [ErrUnavailable] at once, without a
// network call, for a backoff (1 s doubling to 30 s) before it tries Redis
// again. The processor then lets its local tier decide alone and counts it.
package dedupredis

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lineageflow/lineageflow/internal/redact"
	"github.com/lineageflow/lineageflow/processor"
)

// ErrUnavailable is returned by Claim while the store backs off after a
// failure.
var ErrUnavailable = errors.New("dedupredis: redis unavailable (backing off)")

// Defaults.
const (
	DefaultTTL        = 24 * time.Hour
	DefaultTimeout    = processor.DefaultSharedDedupTimeout
	DefaultBackoff    = time.Second
	DefaultBackoffMax = 30 * time.Second
)

// Config configures a [Store].
type Config struct {
	// URL is redis://[user:password@]host:port/N (or rediss:// for TLS).
	URL string
	// Prefix is put before every key (e.g. "lineageflow:<app>:dedup:"),
	// so that applications sharing a Redis (production and canary) keep
	// separate key spaces.
	Prefix string
	// TTL of a claim (default 24 h, the dedup TTL).
	TTL time.Duration
	// Timeout bounds connecting, and each read and write of the client
	// (default 50 ms). The caller's context bounds a claim as a whole.
	Timeout time.Duration
	// Backoff after a failure (default 1 s, doubling up to BackoffMax,
	// default 30 s).
	Backoff, BackoffMax time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate says what to fix.
func (c Config) Validate() error {
	if c.URL == "" {
		return errors.New("dedupredis: no URL: use redis://host:port/N")
	}
	if _, err := redis.ParseURL(c.URL); err != nil {
		return fmt.Errorf("dedupredis: URL %q: %w (use redis://host:port/N)", redact.String(c.URL), err)
	}
	if c.TTL < time.Second {
		return fmt.Errorf("dedupredis: TTL %s: must be at least 1s", c.TTL)
	}
	if c.Timeout <= 0 || c.Backoff <= 0 || c.BackoffMax < c.Backoff {
		return errors.New("dedupredis: timeout and backoff must be > 0 and backoff max >= backoff")
	}
	return nil
}

// Store is a Redis-backed [processor.SharedDedup]. Safe for concurrent use.
type Store struct {
	cfg Config
	c   *redis.Client
	ttl int64 // seconds

	mu        sync.Mutex
	downUntil time.Time
	backoff   time.Duration
	lastErr   error
}

var _ processor.SharedDedup = (*Store)(nil)

// New returns a store for cfg. It does not connect: the first claim does
// (see [Store.Ping] to check at start).
func New(cfg Config) (*Store, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opt, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("dedupredis: %w", err)
	}
	opt.DialTimeout = cfg.Timeout
	opt.ReadTimeout = cfg.Timeout
	opt.WriteTimeout = cfg.Timeout
	opt.PoolTimeout = cfg.Timeout
	opt.ContextTimeoutEnabled = true // the claim's context bounds it
	opt.MaxRetries = -1              // no retry: a failed claim falls back to the local tier
	opt.DisableIdentity = true       // no CLIENT SETINFO on connect
	return &Store{cfg: cfg, c: redis.NewClient(opt), ttl: int64(cfg.TTL / time.Second), backoff: cfg.Backoff}, nil
}

// Claim implements [processor.SharedDedup]: one pipelined round trip,
// and a second one for the counted markers of the batch's duplicates if
// it has any.
func (s *Store) Claim(ctx context.Context, claims []processor.SharedClaim) error {
	if len(claims) == 0 {
		return nil
	}
	if err := s.backingOff(); err != nil {
		return err
	}
	pipe := s.c.Pipeline()
	cmds := make([]*redis.Cmd, len(claims))
	key := make([]byte, 0, len(s.cfg.Prefix)+64)
	for i := range claims {
		c := &claims[i]
		key = append(key[:0], s.cfg.Prefix...)
		key = hex.AppendEncode(key, c.Key[:])
		cmds[i] = pipe.Do(ctx, "set", string(key), c.Owner, "nx", "get", "ex", s.ttl)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return s.failed(fmt.Errorf("dedupredis: claim of %d keys: %w", len(claims), err))
	}
	var dups []int
	for i, cmd := range cmds {
		prior, err := cmd.Text()
		switch {
		case errors.Is(err, redis.Nil):
			prior = ""
		case err != nil:
			return s.failed(fmt.Errorf("dedupredis: claim: %w", err))
		}
		claims[i].Prior, claims[i].Count = prior, false
		if prior != "" && prior != claims[i].Owner {
			dups = append(dups, i)
		}
	}
	if len(dups) > 0 {
		pipe := s.c.Pipeline()
		marks := make([]*redis.Cmd, len(dups))
		for j, i := range dups {
			marks[j] = pipe.Do(ctx, "set", s.cfg.Prefix+"dup:"+claims[i].Owner, "1", "nx", "ex", s.ttl)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return s.failed(fmt.Errorf("dedupredis: counted markers of %d duplicates: %w", len(dups), err))
		}
		for j, i := range dups {
			err := marks[j].Err()
			switch {
			case errors.Is(err, redis.Nil): // marked before: counted already
			case err != nil:
				return s.failed(fmt.Errorf("dedupredis: counted marker: %w", err))
			default:
				claims[i].Count = true
			}
		}
	}
	s.succeeded()
	return nil
}

// Ping checks that Redis answers (for a start-up message; a failure is not
// fatal: claims fall back until Redis answers).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.c.Ping(ctx).Err(); err != nil {
		return s.failed(fmt.Errorf("dedupredis: ping %s: %w", redact.String(s.cfg.URL), err))
	}
	s.succeeded()
	return nil
}

// Status returns nil while Redis answered the last call, else why not
// (for /readyz).
func (s *Store) Status() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Close closes the client's connections.
func (s *Store) Close() error { return s.c.Close() }

func (s *Store) backingOff() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr != nil && time.Now().Before(s.downUntil) {
		return fmt.Errorf("%w: %w", ErrUnavailable, s.lastErr)
	}
	return nil
}

func (s *Store) failed(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr == nil {
		s.cfg.Logger.Warn("shared dedup: redis failed, backing off", "err", err, "backoff", s.backoff)
	}
	s.lastErr = err
	s.downUntil = time.Now().Add(s.backoff)
	s.backoff = min(2*s.backoff, s.cfg.BackoffMax)
	return err
}

func (s *Store) succeeded() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = nil
	s.backoff = s.cfg.Backoff
}
