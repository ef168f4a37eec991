package sink

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lineageflow/lineageflow/graph"
)

// Config configures [Neptune]. The zero value of every field but Endpoint
// means "use the default" (see [Config.WithDefaults]).
type Config struct {
	// Endpoint is the Gremlin websocket URL: ws://127.0.0.1:8182/gremlin
	// locally, wss://<cluster>.<region>.neptune.amazonaws.com:8182/gremlin
	// for Neptune. Required.
	Endpoint string

	// TLS configures wss:// connections (nil: system roots, server name
	// from the endpoint). Ignored for ws://.
	TLS *tls.Config

	// IAMAuth signs every websocket handshake with SigV4 (service
	// "neptune-db", credentials from the AWS default chain), re-signed on
	// every (re)connect. Region is required with it. See [graph.Config].
	IAMAuth bool
	Region  string

	// Writers is the number of writers N (default 4). A vertex is always
	// written by writer xxhash(vertex id) mod N and an edge by writer
	// xxhash(out-vertex id) mod N, each over its own connection, so two
	// writers never race on one vertex.
	Writers int

	// InFlightPerWriter bounds the requests queued for one writer (default
	// 4). A writer runs its requests one at a time, in order; when its
	// queue is full, WriteBatch blocks (backpressure).
	InFlightPerWriter int

	// BatchRecords is the largest number of records in one request
	// (default 200, Neptune's guidance); a vertex with its properties, or
	// an edge with its properties, is one record.
	BatchRecords int

	// MaxRequestBytes caps the estimated serialized size of one request
	// (default 512 KiB); it must stay below WriteBufferSize, or gremlin-go
	// refuses the request.
	MaxRequestBytes int

	// WriteBufferSize is gremlin-go's websocket write buffer and its
	// largest request (default 1 MiB).
	WriteBufferSize int

	// RequestTimeout is how long one request may go unanswered before it
	// is abandoned, its connection replaced and the request retried
	// (default 30 s). gremlin-go has no timeout of its own.
	RequestTimeout time.Duration

	// DialTimeout bounds opening a connection (default 5 s).
	DialTimeout time.Duration

	// Retry is the retry policy of one request (see retry.go).
	Retry RetryPolicy

	// TraversalShape is the shape of one request's traversal (default
	// DefaultTraversalShape; see DESIGN.md, "Sink > Traversal shape"):
	//
	//   - ShapeChained: one mergeV (or mergeE and its two conditional
	//     sideEffect steps) per record, values as step arguments; the
	//     traversal grows with the request.
	//   - ShapeFlat: g.inject(rows).unfold() and one mergeV (or mergeE and
	//     its conditional updates) reading each row with select; the
	//     traversal has the same steps whatever the request's size.
	//
	// Both give the same graph.
	TraversalShape string

	// VertexCacheSize is the number of vertex ids remembered as written
	// (default 100,000; negative disables the cache). A vertex in the
	// cache is not sent again with later batches.
	VertexCacheSize int

	// CoalesceWait is how long a writer that takes an edge request from
	// its queue waits for more edge requests to merge into the same
	// traversal (default 250 ms; negative: no wait, merge only what is
	// already queued). Shards seal the same 10 s window within moments of
	// each other, and an edge that several of them saw (the same
	// dataset-to-dataset edge from runs on different shards) is then one
	// upsert, folded by [lineage.Edge.Merge], instead of one per shard.
	// It adds at most CoalesceWait to the time an edge takes to become
	// visible; vertex requests never wait.
	CoalesceWait time.Duration

	// Logger receives the sink's logs (default slog.Default()).
	Logger *slog.Logger

	// dial replaces the Gremlin connection (tests).
	dial dialFunc
	// inFlight, when set, is called when a writer starts (begin) and ends
	// a request, with the vertex ids the request writes (tests).
	inFlight func(writer int, ids []string, begin bool)
}

// Traversal shapes of [Config.TraversalShape].
const (
	ShapeChained = "chained"
	ShapeFlat    = "flat"
)

// RetryPolicy bounds the retries of one request. Backoff is exponential
// with full jitter: before retry k (k = 1 before the second attempt) the
// writer waits a uniformly random time in
// [0, min(MaxBackoff, BaseBackoff*2^(k-1))).
type RetryPolicy struct {
	// MaxAttempts is the number of times one request is sent before its
	// writer gives up and WriteBatch returns an [*Error] (default 8). The
	// batch is never dropped: the caller keeps it and sends it again.
	MaxAttempts int
	BaseBackoff time.Duration // default 50 ms
	MaxBackoff  time.Duration // default 5 s
}

// Defaults of [Config].
const (
	DefaultWriters           = 4
	DefaultInFlightPerWriter = 4
	DefaultBatchRecords      = 200
	DefaultMaxRequestBytes   = 512 << 10
	DefaultWriteBufferSize   = graph.DefaultWriteBufferSize
	DefaultRequestTimeout    = 30 * time.Second
	DefaultDialTimeout       = graph.DefaultDialTimeout
	DefaultMaxAttempts       = 8
	DefaultBaseBackoff       = 50 * time.Millisecond
	DefaultMaxBackoff        = 5 * time.Second
	DefaultVertexCacheSize   = 100_000
	DefaultTraversalShape    = ShapeFlat
	DefaultCoalesceWait      = 250 * time.Millisecond
)

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	c.Endpoint = graph.NormalizeEndpoint(c.Endpoint)
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	defd := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Writers, DefaultWriters)
	def(&c.InFlightPerWriter, DefaultInFlightPerWriter)
	def(&c.BatchRecords, DefaultBatchRecords)
	def(&c.MaxRequestBytes, DefaultMaxRequestBytes)
	def(&c.WriteBufferSize, DefaultWriteBufferSize)
	def(&c.VertexCacheSize, DefaultVertexCacheSize)
	def(&c.Retry.MaxAttempts, DefaultMaxAttempts)
	defd(&c.RequestTimeout, DefaultRequestTimeout)
	defd(&c.DialTimeout, DefaultDialTimeout)
	defd(&c.Retry.BaseBackoff, DefaultBaseBackoff)
	defd(&c.Retry.MaxBackoff, DefaultMaxBackoff)
	defd(&c.CoalesceWait, DefaultCoalesceWait)
	if c.TraversalShape == "" {
		c.TraversalShape = DefaultTraversalShape
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate says what is wrong with c (after [Config.WithDefaults]).
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sink: "+format, a...)) }
	if c.dial == nil {
		// Endpoint, TLS, IAM, Region, DialTimeout: how the graph is reached.
		errs = append(errs, c.DialConfig().Validate())
	}
	if c.Writers < 1 {
		bad("Writers = %d: need at least 1", c.Writers)
	}
	if c.InFlightPerWriter < 1 {
		bad("InFlightPerWriter = %d: need at least 1", c.InFlightPerWriter)
	}
	if c.BatchRecords < 1 {
		bad("BatchRecords = %d: need at least 1 (Neptune suggests ~200)", c.BatchRecords)
	}
	if c.MaxRequestBytes < 4096 || c.MaxRequestBytes >= c.WriteBufferSize {
		bad("MaxRequestBytes = %d: must be at least 4096 and below WriteBufferSize (%d)", c.MaxRequestBytes, c.WriteBufferSize)
	}
	if c.RequestTimeout < 0 {
		bad("RequestTimeout must be positive")
	}
	if c.TraversalShape != ShapeChained && c.TraversalShape != ShapeFlat {
		bad("TraversalShape = %q: must be %q or %q", c.TraversalShape, ShapeChained, ShapeFlat)
	}
	if c.CoalesceWait > 5*time.Second {
		bad("CoalesceWait = %v: at most 5s (every edge may wait that long before it is sent)", c.CoalesceWait)
	}
	if c.Retry.MaxAttempts < 1 {
		bad("Retry.MaxAttempts = %d: need at least 1", c.Retry.MaxAttempts)
	}
	if c.Retry.BaseBackoff < 0 || c.Retry.MaxBackoff < c.Retry.BaseBackoff {
		bad("Retry: need 0 <= BaseBackoff <= MaxBackoff (got %v, %v)", c.Retry.BaseBackoff, c.Retry.MaxBackoff)
	}
	return errors.Join(errs...)
}

// DialConfig is how c reaches the graph: the [graph.Config] the writers
// dial with.
func (c Config) DialConfig() graph.Config {
	return graph.Config{Endpoint: c.Endpoint, TLS: c.TLS, IAMAuth: c.IAMAuth, Region: c.Region,
		DialTimeout: c.DialTimeout, WriteBufferSize: c.WriteBufferSize, Logger: c.Logger}
}
