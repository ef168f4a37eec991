package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/lineageflow/lineageflow/sink"
)

// gremlinConnOptions are the flags of how to reach the Gremlin endpoint
// (Neptune IAM, TLS roots): shared by `run` (the sink) and `serve` (the
// explorer), which both dial through sink.Dialer.
type gremlinConnOptions struct {
	iam    *bool
	caFile *string
}

func gremlinConnFlags(fs *flag.FlagSet) *gremlinConnOptions {
	return &gremlinConnOptions{
		iam:    fs.Bool("neptune-iam", false, "sign the Gremlin websocket handshake with SigV4 (Neptune IAM database authentication; credentials from the AWS default chain, -region required)"),
		caFile: fs.String("gremlin-ca-file", "", "PEM bundle of CAs to trust for wss:// (default: the system roots)"),
	}
}

// apply sets cfg's Endpoint, Region, IAMAuth and TLS from the flags.
func (o *gremlinConnOptions) apply(cfg *sink.Config, endpoint, region string) error {
	cfg.Endpoint, cfg.Region, cfg.IAMAuth = endpoint, region, *o.iam
	if *o.caFile == "" {
		return nil
	}
	if !strings.HasPrefix(endpoint, "wss://") {
		return errors.New("-gremlin-ca-file is for wss:// endpoints: use wss://... or drop the flag")
	}
	pem, err := os.ReadFile(*o.caFile)
	if err != nil {
		return fmt.Errorf("-gremlin-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("-gremlin-ca-file %s: no PEM certificate in it", *o.caFile)
	}
	cfg.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return nil
}

// gremlinOptions are the flags of the Neptune / Gremlin Server sink.
type gremlinOptions struct {
	conn           *gremlinConnOptions
	writers        *int
	inFlight       *int
	batchRecords   *int
	requestTimeout *time.Duration
	vertexCache    *int
	shape          *string
	coalesceWait   *time.Duration
}

func gremlinFlags(fs *flag.FlagSet) *gremlinOptions {
	return &gremlinOptions{
		conn:           gremlinConnFlags(fs),
		writers:        fs.Int("gremlin-writers", 4, "graph writers; a vertex is always written by writer hash(id) mod N, an edge by hash(out-vertex id) mod N"),
		inFlight:       fs.Int("gremlin-in-flight", 4, "requests queued per writer before WriteBatch blocks (backpressure)"),
		batchRecords:   fs.Int("gremlin-batch-records", 200, "records (a vertex or an edge with its properties) per Gremlin request"),
		requestTimeout: fs.Duration("gremlin-request-timeout", 30*time.Second, "abandon a request unanswered this long, replace its connection and retry"),
		vertexCache:    fs.Int("gremlin-vertex-cache", 100000, "vertex ids remembered as written, not resent (negative: no cache)"),
		coalesceWait:   fs.Duration("gremlin-coalesce-wait", sink.DefaultCoalesceWait, "how long a writer holds an edge request to merge the same edges from other shards' batches into one upsert (0: merge only what is already queued; adds up to this much to edge latency)"),
		shape:          fs.String("gremlin-traversal-shape", "flat", "request shape: flat (inject(rows).unfold().mergeE(...), constant step count) or chained (one mergeV/mergeE step per record)"),
	}
}

// config returns the sink configuration for endpoint, validated.
func (o *gremlinOptions) config(endpoint, region string, l *slog.Logger) (sink.Config, error) {
	cfg := sink.Config{
		Writers: *o.writers, InFlightPerWriter: *o.inFlight, BatchRecords: *o.batchRecords,
		RequestTimeout: *o.requestTimeout, VertexCacheSize: *o.vertexCache, Logger: l,
		TraversalShape: *o.shape,
	}
	switch w := *o.coalesceWait; {
	case w < 0:
		return cfg, fmt.Errorf("-gremlin-coalesce-wait %v: must be 0 (no wait) or positive", w)
	case w == 0:
		cfg.CoalesceWait = -1 // sink.Config: negative means no wait
	default:
		cfg.CoalesceWait = w
	}
	if err := o.conn.apply(&cfg, endpoint, region); err != nil {
		return cfg, err
	}
	if err := cfg.WithDefaults().Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}
