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

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/sink"
)

// gremlinConnOptions are the flags of how to reach a Gremlin endpoint
// (Neptune IAM and its region, TLS roots): one set for `run` (the sink),
// `serve` (the explorer), `verify` and `diff`, which all dial through a
// graph.Dialer, so all four sign and trust alike.
type gremlinConnOptions struct {
	iam    *bool
	region *string
	caFile *string
}

// gremlinConnFlags registers -neptune-iam and -gremlin-ca-file on fs, and
// -region unless region is given (run's -region, which also names the
// KCL's region, is the one flag for both).
func gremlinConnFlags(fs *flag.FlagSet, region *string) *gremlinConnOptions {
	if region == nil {
		region = fs.String("region", "", "AWS region of the Neptune cluster (required with -neptune-iam)")
	}
	return &gremlinConnOptions{
		iam:    fs.Bool("neptune-iam", false, "sign the Gremlin websocket handshake with SigV4 (Neptune IAM database authentication; credentials from the AWS default chain, -region required)"),
		region: region,
		caFile: fs.String("gremlin-ca-file", "", "PEM bundle of CAs to trust for wss:// (default: the system roots)"),
	}
}

// config returns how to reach endpoint with the flags' IAM, region and
// TLS roots (Logger l), validated.
func (o *gremlinConnOptions) config(endpoint string, l *slog.Logger) (graph.Config, error) {
	cfg := graph.Config{Endpoint: endpoint, Region: *o.region, IAMAuth: *o.iam, Logger: l}
	if *o.caFile != "" {
		if !strings.HasPrefix(endpoint, "wss://") {
			return cfg, errors.New("-gremlin-ca-file is for wss:// endpoints: use wss://... or drop the flag")
		}
		pem, err := os.ReadFile(*o.caFile)
		if err != nil {
			return cfg, fmt.Errorf("-gremlin-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return cfg, fmt.Errorf("-gremlin-ca-file %s: no PEM certificate in it", *o.caFile)
		}
		cfg.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if err := cfg.WithDefaults().Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// dialer returns the graph.Dialer of endpoint (see config).
func (o *gremlinConnOptions) dialer(endpoint string, l *slog.Logger) (*graph.Dialer, error) {
	cfg, err := o.config(endpoint, l)
	if err != nil {
		return nil, &exitError{2, err}
	}
	return graph.NewDialer(cfg)
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

// gremlinFlags registers the sink's flags on fs; region is run's -region.
func gremlinFlags(fs *flag.FlagSet, region *string) *gremlinOptions {
	return &gremlinOptions{
		conn:           gremlinConnFlags(fs, region),
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
func (o *gremlinOptions) config(endpoint string, l *slog.Logger) (sink.Config, error) {
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
	conn, err := o.conn.config(endpoint, l)
	if err != nil {
		return cfg, err
	}
	cfg.Endpoint, cfg.Region, cfg.IAMAuth, cfg.TLS = conn.Endpoint, conn.Region, conn.IAMAuth, conn.TLS
	if err := cfg.WithDefaults().Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}
