package main

import (
	"context"
	"errors"
	"flag"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/internal/cli"
	"github.com/lineageflow/lineageflow/ops/httpserver"
	"github.com/lineageflow/lineageflow/source"
)

func runMirror(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("mirror", flag.ContinueOnError)
	var (
		stream     = fs.String("stream", "", "Kinesis stream to read (required)")
		canary     = fs.String("canary-stream", "", "Kinesis stream the share goes to (required; must exist)")
		app        = fs.String("app", "lineageflow-mirror", "the mirror's KCL application name (its lease table); never a worker application's name")
		workerID   = fs.String("worker-id", "", "worker id in the lease table (default host-pid)")
		share      = fs.Float64("share", 0.1, "share (0..1] of the key space to mirror: events whose own job (or dataset) hashes into it, whole runs at a time; lineageflow diff -key-share takes the same value")
		aggregate  = fs.Bool("aggregate", true, "re-aggregate (KPL) the mirrored records of one partition key in a batch into one Kinesis record")
		region     = fs.String("region", "", "AWS region (required)")
		kinEP      = fs.String("kinesis-endpoint", "", "Kinesis endpoint URL override")
		ddbEP      = fs.String("dynamodb-endpoint", "", "DynamoDB endpoint URL override")
		accessKey  = fs.String("access-key-id", "", "static AWS access key id (stand-ins); empty: the SDK default chain")
		secretKey  = fs.String("secret-access-key", "", "static AWS secret access key")
		failover   = fs.Duration("failover-time", source.DefaultFailoverTime, "lease lifetime without renewal")
		shardSync  = fs.Duration("shard-sync", source.DefaultShardSync, "shard/lease sync interval")
		idleReads  = fs.Duration("idle-between-reads", source.DefaultIdleBetweenReads, "pause after an empty GetRecords")
		maxRecords = fs.Int("max-records", source.DefaultMaxRecords, "records per GetRecords call (1..10000)")
		fromLatest = fs.Bool("from-latest", false, "start shards without a checkpoint at LATEST (default TRIM_HORIZON)")
		httpAddr   = fs.String("http-addr", "127.0.0.1:9091", "listen address of /metrics, /healthz and /readyz (empty: none); loopback by default: a deployment that scrapes or probes from outside sets it (e.g. :9091)")
		logFormat  = fs.String("log-format", "text", "log format: json or text")
		logLevel   = fs.String("log-level", "info", "log level: debug, info, warn, error")
	)
	fs.Usage = cli.Usage(fs, "lineageflow mirror [flags]",
		"Reads -stream with a KCL application of its own and puts the events of a deterministic share of\n"+
			"the jobs on -canary-stream (partition keys kept), checkpointing a batch only once the canary\n"+
			"stream acknowledged all of its mirrored records.")
	if err := cli.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := errors.Join(source.ValidateStreamName("-stream", *stream), source.ValidateStreamName("-canary-stream", *canary),
		source.ValidateAppName("-app", *app)); err != nil {
		return &exitError{2, err}
	}
	logger, err := newLogger(*logFormat, *logLevel)
	if err != nil {
		return err
	}
	st := &source.MirrorStats{}
	cfg := source.MirrorConfig{Stream: *stream, Canary: *canary, AppName: *app, WorkerID: *workerID, Share: *share, Aggregate: *aggregate,
		AWS:          awsconf.Config{Region: *region, KinesisEndpoint: *kinEP, DynamoDBEndpoint: *ddbEP, AccessKeyID: *accessKey, SecretAccessKey: *secretKey},
		FailoverTime: *failover, ShardSync: *shardSync, IdleBetweenReads: *idleReads, MaxRecords: *maxRecords, FromLatest: *fromLatest,
		Logger: logger, Stats: st}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if *httpAddr != "" {
		hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		srv, err := httpserver.Start(hctx, httpserver.Config{Addr: *httpAddr, Metrics: mirrorMetrics(st), Logger: logger,
			Ready: func() error {
				if !st.Running() {
					return errors.New("mirror not running (starting or stopping)")
				}
				return nil
			}})
		if err != nil {
			cancel()
			return err
		}
		defer func() { cancel(); _ = srv.Wait() }()
	}
	return source.RunMirror(ctx, cfg)
}

// mirrorMetrics serves the mirror's rate and lag counters (lineage_mirror_*).
func mirrorMetrics(st *source.MirrorStats) http.Handler {
	reg := prometheus.NewRegistry()
	counter := func(name, help string, f func() int64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f()) }))
	}
	counter("lineage_mirror_records_read_total", "User records the mirror read from the stream.", st.Read.Load)
	counter("lineage_mirror_records_selected_total", "User records in the mirrored share.", st.Selected.Load)
	counter("lineage_mirror_records_put_total", "Mirrored user records the canary stream acknowledged.", st.Put.Load)
	counter("lineage_mirror_kinesis_records_put_total", "Kinesis records put on the canary stream (a KPL aggregate counts once).", st.PutRecords.Load)
	counter("lineage_mirror_put_retries_total", "Records the canary stream refused and the mirror sent again.", st.PutRetries.Load)
	counter("lineage_mirror_leases_lost_total", "Shards the mirror stopped because another mirror owns their lease (the lease guard).", st.LeasesLost.Load)
	counter("lineage_mirror_checkpoints_total", "KCL checkpoints written by the mirror (each after the canary acknowledged its batch).", st.Checkpoints.Load)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lineage_mirror_millis_behind_latest",
		Help: "MillisBehindLatest of the mirror's last read: its lag behind the tip of the stream."}, func() float64 { return float64(st.Behind.Load()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lineage_mirror_running",
		Help: "1 while the mirror's KCL worker runs."}, func() float64 {
		if st.Running() {
			return 1
		}
		return 0
	}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
