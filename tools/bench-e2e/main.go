// Command bench-e2e measures the end-to-end figures of the main job on the local
// stand-ins (kinesalite, dynalite, Gremlin Server), all in one run so they
// compare as ratios on a noisy machine:
//
//  1. throughput: one `lineageflow run` worker draining a pre-loaded stream,
//     as a ratio of kinesalite's own raw GetRecords rate (a plain reader, same
//     stream, same run);
//  2. latency: from the PutRecords acknowledgement of the record that makes
//     an edge exist (reference model, stream order) to the edge being
//     visible in the graph (Gremlin sink), at a steady replay rate;
//  3. write reduction: graph writes (vertex + edge upserts) per input record
//     at that steady rate, and at the pre-load's burst rate.
//
// It prints one summary line per figure (and per round), and with -results
// appends a dated section to bench/RESULTS.md. Run it through
// scripts/bench-e2e.sh, which starts its own stand-ins (.standins/bench)
// and stops, at the end, those it started.
//
// main.go holds the flags and the round loop, throughput.go figure 1,
// latency.go figure 2, reduction.go the write-reduction counts of both,
// worker.go what the figures read off a worker process (settled stats, CPU
// time, /metrics), summary.go the medians and targets over the rounds, and
// results.go the RESULTS.md section.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

type config struct {
	rounds     int
	shards     int
	tputEvents int
	tputPipes  int
	aggregate  float64
	tputSink   string
	latRate    int
	latSeconds int
	poll       time.Duration
	dir        string
	results    string
	command    string
	workerArgs string
	maxRecords int
}

func main() {
	var c config
	flag.IntVar(&c.rounds, "rounds", 3, "rounds of every figure (the spread is reported)")
	flag.IntVar(&c.shards, "shards", 32, "shards of every stream")
	flag.IntVar(&c.tputEvents, "tput-events", 300000, "generated events pre-loaded for the throughput figure")
	flag.IntVar(&c.tputPipes, "tput-pipelines", 256, "generated pipelines (root jobs, each its own partition key) of the throughput figure; 0: the generator's default (8), which leaves a few shards with most of the data (each read at the 2 MB/s the KCL allows a shard)")
	flag.Float64Var(&c.aggregate, "aggregate", 0.5, "share of the pre-loaded records sent KPL-aggregated")
	flag.StringVar(&c.tputSink, "tput-sink", "file", "sink of the throughput worker: file or gremlin")
	flag.IntVar(&c.latRate, "lat-rate", 750, "steady replay rate (records/s) of the latency figure")
	flag.IntVar(&c.latSeconds, "lat-seconds", 60, "length of the steady replay")
	flag.DurationVar(&c.poll, "poll", 150*time.Millisecond, "graph poll period of the latency figure")
	flag.StringVar(&c.dir, "dir", "", "work directory (default a new temp dir, removed on success)")
	flag.StringVar(&c.results, "results", "", "append the figures as a dated section to this file (bench/RESULTS.md)")
	flag.StringVar(&c.command, "command", "scripts/bench-e2e.sh", "the command line quoted in the results section")
	flag.IntVar(&c.maxRecords, "max-records", 2500, "GetRecords limit of the raw reader and of every worker (-max-records). kinesalite does not cap a response at 10 MB as Kinesis does, and the KCL sleeps bytes/2MB/s whole seconds after a big read; 2500 records of this workload stay under 10 MB")
	flag.StringVar(&c.workerArgs, "worker-args", "-shard-sync 100ms", "extra flags for every `lineageflow run` (space-separated), e.g. \"-idle-between-reads 50ms\"")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "bench-e2e:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	root := testenv.RepoRoot()
	env, ok := harness.StandinsEnv()
	if !ok || env.GremlinEndpoint == "" {
		return errors.New("stand-ins not found: run it through scripts/bench-e2e.sh")
	}
	work := c.dir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "lineageflow-bench-e2e-"); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(work, "bench.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	log := io.MultiWriter(logf, os.Stderr)
	bin, err := harness.Build(ctx, root, work)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "bench-e2e: work dir %s, %d rounds, kinesis %s, gremlin %s\n", work, c.rounds, env.KinesisEndpoint, env.GremlinEndpoint)

	var tputs []tputResult
	var lats []latResult
	for i := 1; i <= c.rounds; i++ {
		t, err := throughput(ctx, c, env, bin, filepath.Join(work, fmt.Sprintf("tput-%d", i)), log, i)
		if err != nil {
			return fmt.Errorf("round %d throughput: %w (logs in %s)", i, err, work)
		}
		fmt.Printf("round=%d throughput: raw_rps=%.0f pipeline_rps=%.0f ratio=%.2f (steady, from the first record: %.0f rps, ratio %.2f; first record after %.1f s; with every lease held (after %.1f s): %.0f rps, ratio %.2f) records=%d kinesis_records=%d MB=%.1f raw_MBps_per_shard=%.2f pipeline_MBps_per_shard=%.2f hottest_shard_MB=%.1f (mean %.1f) raw_s=%.1f pipeline_s=%.1f worker_cpu=%.0f%% sink=%s\n",
			i, t.rawRPS, t.pipeRPS, t.pipeRPS/t.rawRPS, t.steadyRPS, t.steadyRPS/t.rawRPS, t.firstRecord, t.leasedAt, t.leasedRPS, t.leasedRPS/t.rawRPS,
			t.userRecords, t.kinesisRecords, float64(t.rawBytes)/1e6, float64(t.rawBytes)/1e6/t.rawSeconds/float64(c.shards),
			float64(t.rawBytes)/1e6/t.pipeSeconds/float64(c.shards), float64(t.hotShardBytes)/1e6, float64(t.rawBytes)/1e6/float64(c.shards), t.rawSeconds, t.pipeSeconds, 100*t.workerCPU/t.pipeSeconds, c.tputSink)
		fmt.Printf("round=%d reduction (pre-loaded burst): %s\n", i, t.red)
		tputs = append(tputs, t)
		l, err := latency(ctx, c, env, bin, filepath.Join(work, fmt.Sprintf("lat-%d", i)), log, i)
		if err != nil {
			return fmt.Errorf("round %d latency: %w (logs in %s)", i, err, work)
		}
		fmt.Printf("round=%d latency (every edge version: new edges and lastSeen updates): n=%d/%d p50=%.2fs p90=%.2fs p99=%.2fs max=%.2fs rate=%.0f/s\n",
			i, len(l.all), l.versions, pct(l.all, 50), pct(l.all, 90), pct(l.all, 99), pct(l.all, 100), l.achievedRate)
		fmt.Printf("round=%d latency (new edge ids only): n=%d/%d missing=%d p50=%.2fs p90=%.2fs p99=%.2fs max=%.2fs\n",
			i, len(l.lat), l.expected, l.missing, pct(l.lat, 50), pct(l.lat, 90), pct(l.lat, 99), pct(l.lat, 100))
		fmt.Printf("round=%d reduction (steady): %s\n", i, l.red)
		lats = append(lats, l)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	sum := summarize(c, tputs, lats)
	fmt.Print(sum.lines)
	if c.results != "" {
		if err := appendResults(c, sum, tputs, lats); err != nil {
			return err
		}
		fmt.Fprintf(log, "bench-e2e: appended to %s\n", c.results)
	}
	if c.dir == "" {
		os.RemoveAll(work)
	}
	return nil
}

// runArgs are the flags every `lineageflow run` of the bench gets.
func (c config) runArgs() []string {
	return append([]string{"-max-records", strconv.Itoa(c.maxRecords)}, strings.Fields(c.workerArgs)...)
}
