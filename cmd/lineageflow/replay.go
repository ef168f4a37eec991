package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/internal/cli"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/replay"
)

func runReplay(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	stream := fs.String("stream", "", "Kinesis stream name (required)")
	shards := fs.Int("shards", 4, "shard count when the stream has to be created (0: the stream must exist)")
	region := fs.String("region", os.Getenv("AWS_REGION"), "AWS region (required)")
	kinEP := fs.String("kinesis-endpoint", "", "Kinesis endpoint URL override (e.g. http://127.0.0.1:4567)")
	accessKey := fs.String("access-key-id", "", "static AWS access key id (stand-ins); empty: the SDK default chain")
	secretKey := fs.String("secret-access-key", "", "static AWS secret access key: set it through the environment (LINEAGEFLOW_SECRET_ACCESS_KEY), never on the command line (a warning says so)")
	rate := fs.Float64("rate", 0, "records per second (0: as fast as the stream takes them)")
	aggregate := fs.Float64("aggregate", 0, "share of records sent KPL-aggregated, 0..1 (as the OpenLineage Kinesis transport does through the KPL)")
	concurrency := fs.Int("concurrency", 4, "parallel PutRecords lanes (records of one partition key stay in order)")
	progress := fs.Duration("progress-every", 5*time.Second, "progress line period on standard error")
	useGen := fs.Bool("gen", false, "replay the generator's workload instead of NDJSON files (see the gen-* flags)")
	genCfg := genFlags(fs, "gen-")
	fs.Usage = cli.Usage(fs, "lineageflow replay [flags] [file.ndjson ...]",
		"Creates the stream if missing and puts records at a target rate, with partition keys like\n"+
			"the OpenLineage Kinesis transport (run:<namespace>/<name> of the parent run facet's root job,\n"+
			"else its job, else the event's job; job:, dataset:), optionally\n"+
			"KPL-aggregated. Ends with a summary: records, bytes, retries, throttles.")
	if done, err := parseFlags(fs, args, "secret-access-key"); done || err != nil {
		return err
	}
	if fs.NArg() == 0 && !*useGen {
		return &exitError{2, errors.New("give NDJSON files to replay, or -gen")}
	}
	if fs.NArg() > 0 && *useGen {
		return &exitError{2, errors.New("give NDJSON files or -gen, not both")}
	}
	aws := awsconf.Config{Region: *region, KinesisEndpoint: *kinEP, AccessKeyID: *accessKey, SecretAccessKey: *secretKey}
	cfg := replay.Config{Stream: *stream, Shards: *shards, Rate: *rate, Aggregate: *aggregate,
		Concurrency: *concurrency, Progress: os.Stderr, ProgressEvery: *progress}
	if err := errors.Join(aws.Validate(), cfg.Validate()); err != nil {
		return &exitError{2, err}
	}
	client, err := aws.Kinesis(ctx)
	if err != nil {
		return err
	}
	var src replay.Source
	if *useGen {
		gc := genCfg()
		cfg.Total = int64(gc.Events)
		src = replay.SourceFunc(func(ctx context.Context, emit func(replay.Record) error) error {
			return gen.Stream(gc, func(r gen.Record) error {
				return emit(replay.Record{PartitionKey: r.PartitionKey, Data: r.Data})
			})
		})
	} else {
		src = replay.FromNDJSON(fs.Args()...)
	}
	sum, err := replay.Run(ctx, client, cfg, src)
	fmt.Fprintf(os.Stderr, "lineageflow replay: %s\n", sum)
	return err
}
