package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/lineageflow/lineageflow/collect"
	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/internal/cli"
	"github.com/lineageflow/lineageflow/processor"
)

func runCollect(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("collect", flag.ContinueOnError)
	var (
		stream      = fs.String("stream", "", "Kinesis stream the workers read (required; it must exist)")
		region      = fs.String("region", os.Getenv("AWS_REGION"), "AWS region (required)")
		kinEP       = fs.String("kinesis-endpoint", "", "Kinesis endpoint URL override (e.g. http://127.0.0.1:4567)")
		accessKey   = fs.String("access-key-id", "", "static AWS access key id (stand-ins); empty: the SDK default chain (IRSA in EKS)")
		secretKey   = fs.String("secret-access-key", "", "static AWS secret access key: set it through the environment (LINEAGEFLOW_SECRET_ACCESS_KEY), never on the command line (a warning says so)")
		httpAddr    = fs.String("http-addr", "127.0.0.1:5000", "listen address of the OpenLineage endpoint (POST /api/v1/lineage, /api/v1/lineage/batch), its probes and /metrics; beyond loopback it needs API keys or -insecure-no-auth")
		apiKeys     = fs.String("api-keys", "", "accepted API keys (Authorization: Bearer <key>), comma-separated, several for rotation: set it through the environment (LINEAGEFLOW_API_KEYS), never on the command line")
		apiKeysFile = fs.String("api-keys-file", "", "file of accepted API keys, one a line ('#' comments), added to -api-keys (e.g. a mounted Kubernetes secret)")
		insecure    = fs.Bool("insecure-no-auth", false, "accept unauthenticated writes on an address beyond loopback (trusted networks only)")
		linger      = fs.Duration("linger", 5*time.Millisecond, "how long the first event of a PutRecords batch waits for others (every request waits up to this long)")
		aggregate   = fs.Bool("aggregate", true, "KPL-aggregate the events of one shard within a batch (as the OpenLineage Kinesis transport's KPL does)")
		putConc     = fs.Int("put-concurrency", 8, "PutRecords requests in flight")
		putAttempts = fs.Int("put-attempts", 8, "sends of one Kinesis record before its requests are answered 503 (Retry-After)")
		ackTimeout  = fs.Duration("ack-timeout", 10*time.Second, "longest time spent putting one batch before its requests are answered 503 (Retry-After)")
		maxBatch    = fs.Int("max-batch-bytes", 16<<20, "largest batch request body, decompressed (413 beyond)")
		maxBytes    = fs.Int64("max-inflight-bytes", 64<<20, "in-flight budget: event bytes held before requests are answered 429 (Retry-After)")
		maxReqs     = fs.Int("max-inflight-requests", 1024, "in-flight budget: requests served at once before others are answered 429 (Retry-After)")
		maxEvDS     = fs.Int("max-event-datasets", processor.DefaultMaxEventDatasets, "the workers' -max-event-datasets: an event naming more inputs + outputs is refused (too_many_datasets) as they would dead-letter it")
		grace       = fs.Duration("shutdown-grace", 25*time.Second, "on SIGTERM, how long the requests in flight get to finish (keep below the pod's terminationGracePeriodSeconds)")
		logFormat   = fs.String("log-format", "text", "log format: json or text")
		logLevel    = fs.String("log-level", "info", "log level: debug, info, warn, error")
	)
	fs.Usage = cli.Usage(fs, "lineageflow collect [flags]",
		"Serve the OpenLineage HTTP API (POST /api/v1/lineage as Marquez, a batch route) in front of\n"+
			"the Kinesis stream: each event is checked by the workers' decoder (a 4xx names the reason and\n"+
			"the field), KPL-aggregated with the events of other requests for -linger, and acknowledged\n"+
			"only once Kinesis holds it.")
	if done, err := parseFlags(fs, args, "secret-access-key", "api-keys"); done || err != nil {
		return err
	}
	logger, err := newLogger(*logFormat, *logLevel)
	if err != nil {
		return &exitError{2, err}
	}
	keys, err := collect.ParseKeys(*apiKeys, *apiKeysFile)
	if err != nil {
		return &exitError{2, err}
	}
	aws := awsconf.Config{Region: *region, KinesisEndpoint: *kinEP, AccessKeyID: *accessKey, SecretAccessKey: *secretKey}
	cfg := collect.Config{Stream: *stream, Keys: keys, Linger: *linger, Aggregate: *aggregate, Concurrency: *putConc,
		MaxAttempts: *putAttempts, AckTimeout: *ackTimeout, MaxBatchBytes: *maxBatch, MaxInflightBytes: *maxBytes,
		MaxInflightRequests: *maxReqs, MaxEventDatasets: *maxEvDS, Logger: logger}
	if err := errors.Join(aws.Validate(), cfg.Validate(), collect.CheckListen(*httpAddr, keys, *insecure)); err != nil {
		return &exitError{2, err}
	}
	client, err := aws.Kinesis(ctx)
	if err != nil {
		return err
	}
	srv, err := collect.New(ctx, cfg, client)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		srv.Close()
		return fmt.Errorf("-http-addr: %w", err)
	}
	logger.Info("collector listening", "url", "http://"+ln.Addr().String()+"/api/v1/lineage", "stream", *stream, "api_keys", len(keys))
	return srv.Serve(ctx, ln, *grace)
}
