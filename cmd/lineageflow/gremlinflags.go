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

// gremlinOptions are the flags of the Neptune / Gremlin Server sink.
type gremlinOptions struct {
	iam            *bool
	caFile         *string
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
		iam:            fs.Bool("neptune-iam", false, "sign the Gremlin websocket handshake with SigV4 (Neptune IAM database authentication; credentials from the AWS default chain, -region required)"),
		caFile:         fs.String("gremlin-ca-file", "", "PEM bundle of CAs to trust for wss:// (default: the system roots)"),
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
		Endpoint: endpoint, Region: region, IAMAuth: *o.iam,
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
