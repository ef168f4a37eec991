package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/archive/reader"
	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/internal/cli"
	"github.com/lineageflow/lineageflow/internal/replay"
)

// parseRangeTime reads a -from/-to value: RFC 3339, or a date (midnight
// UTC).
func parseRangeTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, fmt.Errorf("-%s is required: give an RFC 3339 time (2026-01-02T15:04:05Z) or a date (2026-01-02, midnight UTC)", name)
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(archive.DateLayout, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("-%s %q: give an RFC 3339 time (2026-01-02T15:04:05Z) or a date (2026-01-02, midnight UTC)", name, v)
}

func runRebuild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rebuild", flag.ContinueOnError)
	loc := fs.String("archive", "", "the event archive to read: s3://bucket/prefix (required)")
	archEP := fs.String("archive-endpoint", "", "S3 endpoint URL override for the archive (e.g. http://127.0.0.1:4569; path-style)")
	fromS := fs.String("from", "", "first event time put back, included (RFC 3339, or a date: midnight UTC; required)")
	toS := fs.String("to", "", "end of the event times put back, excluded (RFC 3339, or a date: midnight UTC; required)")
	stream := fs.String("stream", "", "Kinesis stream to put the events on (required on the command line: a value from LINEAGEFLOW_STREAM, the live stream, is refused): a new one, read by a worker with a new -app-name")
	shards := fs.Int("shards", 4, "shard count when the stream has to be created (0: the stream must exist)")
	region := fs.String("region", os.Getenv("AWS_REGION"), "AWS region (required)")
	kinEP := fs.String("kinesis-endpoint", "", "Kinesis endpoint URL override (e.g. http://127.0.0.1:4567)")
	accessKey := fs.String("access-key-id", "", "static AWS access key id (stand-ins); empty: the SDK default chain")
	secretKey := fs.String("secret-access-key", "", "static AWS secret access key: set it through the environment (LINEAGEFLOW_SECRET_ACCESS_KEY), never on the command line (a warning says so)")
	rate := fs.Float64("rate", 0, "records per second (0: as fast as the stream takes them)")
	concurrency := fs.Int("concurrency", 4, "parallel PutRecords lanes (records of one partition key stay in order)")
	progress := fs.Duration("progress-every", 5*time.Second, "progress line period on standard error while a day is put")
	fs.Usage = cli.Usage(fs, "lineageflow rebuild -archive s3://bucket/prefix -from T -to T -stream NAME [flags]",
		"Puts the archived events of [from, to) back on a Kinesis stream, day by day in event-time\n"+
			"order, as the producers sent them (PutRecords, batched, retried on throttling, partition\n"+
			"key of the OpenLineage Kinesis transport), so that a worker with a new application name\n"+
			"rebuilds a lost graph (README, \"Rebuilding the graph from the archive\"). Reads only the\n"+
			"event_date partitions of the range.")
	if done, err := parseFlags(fs, args, "secret-access-key"); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{2, fmt.Errorf("unexpected arguments %q: rebuild takes flags only", fs.Args())}
	}
	var errs []error
	if *stream != "" && !cli.OnCommandLine(fs, "stream") {
		// LINEAGEFLOW_STREAM is the live workers' stream where they run:
		// rebuilding into it would feed the live application again.
		errs = append(errs, fmt.Errorf("-stream must be given on the command line, not only as LINEAGEFLOW_STREAM (%q): rebuild into a new stream, read by a worker with a new -app-name", *stream))
	}
	l, err := archive.ParseLocation(*loc)
	errs = append(errs, err, reader.CheckEndpoint(*archEP))
	from, err := parseRangeTime("from", *fromS)
	errs = append(errs, err)
	to, err := parseRangeTime("to", *toS)
	errs = append(errs, err)
	ac := awsconf.Config{Region: *region, KinesisEndpoint: *kinEP, AccessKeyID: *accessKey, SecretAccessKey: *secretKey}
	cfg := reader.RebuildConfig{From: from, To: to, Progress: os.Stderr,
		Replay: replay.Config{Stream: *stream, Shards: *shards, Rate: *rate, Concurrency: *concurrency,
			Progress: os.Stderr, ProgressEvery: *progress}}
	errs = append(errs, ac.Validate())
	if !from.IsZero() && !to.IsZero() {
		errs = append(errs, cfg.Validate())
	} else {
		errs = append(errs, cfg.Replay.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return &exitError{2, err}
	}
	s3c, err := reader.NewS3Client(ctx, ac, *archEP)
	if err != nil {
		return err
	}
	kin, err := ac.Kinesis(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "lineageflow rebuild: %s, %s .. %s -> stream %s\n", l, from.Format(time.RFC3339), to.Format(time.RFC3339), *stream)
	sum, err := reader.Rebuild(ctx, reader.Store{S3: s3c, Loc: l}, kin, cfg)
	fmt.Fprintf(os.Stderr, "lineageflow rebuild: %s\n", sum)
	return err
}
