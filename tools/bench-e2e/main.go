// Command e2e measures the end-to-end figures of the main job on the local
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
// scripts/bench-e2e.sh, which starts and stops its own stand-ins.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kinesistypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/graphread"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify/refmodel"
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

// ---------------------------------------------------------------- results

type tputResult struct {
	userRecords, kinesisRecords int64
	preloadRPS                  float64
	rawRPS                      float64
	rawSeconds                  float64
	rawBytes                    int64   // Kinesis data bytes read by the raw reader
	hotShardBytes               int64   // of those, on the shard that holds the most
	workerCPU                   float64 // CPU seconds of the worker process until all records were processed
	pipeRPS                     float64 // from worker start to all records processed
	pipeSeconds                 float64
	firstRecord                 float64 // seconds from worker start to its first processed record
	steadyRPS                   float64 // from the first processed record
	leasedAt                    float64 // seconds from worker start until it held every shard's lease
	leasedRPS                   float64 // from then on (0: it finished before holding them all)
	red                         reduction
}

type latResult struct {
	lat          []float64 // seconds, sorted: new edges (first appearance of the id)
	all          []float64 // seconds, sorted: every edge version (new edges and lastSeen updates)
	versions     int
	expected     int
	missing      int
	achievedRate float64
	red          reduction
}

type reduction struct {
	rate                   float64 // replay rate (user records/s)
	records, events        int64   // user records read, decoded events
	edges, vertices        int64   // emitted by the processor (outbox)
	sinkRecords            int64   // records in acknowledged Gremlin requests (after the vertex cache), -1 if unknown
	windows                int64
	writesPerRecord, ratio float64
}

func (r reduction) String() string {
	s := fmt.Sprintf("rate=%.0f/s records=%d events=%d edges_emitted=%d vertices_emitted=%d windows=%d writes_per_record=%.4f reduction=%.1f%%",
		r.rate, r.records, r.events, r.edges, r.vertices, r.windows, r.writesPerRecord, 100*r.ratio)
	if r.sinkRecords >= 0 {
		s += fmt.Sprintf(" sink_records_after_cache=%d reduction_after_cache=%.1f%%", r.sinkRecords, 100*(1-float64(r.sinkRecords)/float64(r.records)))
	}
	return s
}

func newReduction(rate float64, st map[string]int64, sinkRecords int64) reduction {
	r := reduction{rate: rate, records: st["records"], events: st["events"], edges: st["edges_emitted"],
		vertices: st["vertices_emitted"], windows: st["windows_sealed"], sinkRecords: sinkRecords}
	if r.records > 0 {
		r.writesPerRecord = float64(r.edges+r.vertices) / float64(r.records)
		r.ratio = 1 - r.writesPerRecord
	}
	return r
}

// ---------------------------------------------------------------- main flow

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

// ---------------------------------------------------------------- figure 1

func throughput(ctx context.Context, c config, env harness.Env, bin, dir string, log io.Writer, round int) (tputResult, error) {
	var r tputResult
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	h, err := harness.New(harness.Options{Env: env, Bin: bin, Dir: dir, Log: log, Name: "bench-tput"})
	if err != nil {
		return r, err
	}
	defer h.Close()
	defer cleanupStream(h)
	if err := h.CreateStream(ctx, c.shards); err != nil {
		return r, err
	}
	recs := gen.Generate(gen.Config{Seed: int64(1000 + round), Events: c.tputEvents, Pipelines: c.tputPipes}.WithDefaults())
	toReplay, _ := harness.Generated(recs)
	cfg := h.ReplayConfig()
	cfg.Aggregate = c.aggregate
	cfg.Seed = uint64(round)
	sum, err := replay.Run(ctx, h.Kinesis(), cfg, replay.FromSlice(toReplay))
	if err != nil {
		return r, fmt.Errorf("pre-load: %w", err)
	}
	h.Logf("pre-load: %s", sum)
	r.userRecords, r.kinesisRecords, r.preloadRPS = sum.UserRecords, sum.Records, sum.RecordsPerSecond()

	// Kinesalite's own rate: a plain reader per shard, in parallel.
	start := time.Now()
	n, nb, hot, err := rawRead(ctx, h, c.maxRecords)
	if err != nil {
		return r, fmt.Errorf("raw read: %w", err)
	}
	r.rawSeconds = time.Since(start).Seconds()
	if n != sum.UserRecords {
		return r, fmt.Errorf("raw read: %d user records, want %d", n, sum.UserRecords)
	}
	r.rawRPS = float64(n) / r.rawSeconds
	r.rawBytes, r.hotShardBytes = nb, hot
	h.Logf("raw read: %d user records in %.2f s", n, r.rawSeconds)

	spec := harness.WorkerSpec{ID: "w1", StatsEvery: 100 * time.Millisecond, ShardSync: time.Second, FailoverTime: 10 * time.Second,
		Args: c.runArgs()}
	if c.tputSink == "gremlin" {
		if err := graphread.Drop(env.GremlinEndpoint); err != nil {
			return r, err
		}
		spec.Sink = "gremlin:" + env.GremlinEndpoint
	}
	p, err := h.StartWorker(ctx, spec)
	if err != nil {
		return r, err
	}
	var first, leased time.Time
	var leasedN int64
	shardIDs, err := h.ShardIDs(ctx)
	if err != nil {
		return r, err
	}
	err = harness.Poll(ctx, 10*time.Minute, 100*time.Millisecond, func() (bool, error) {
		if done, perr := p.Exited(); done {
			return false, fmt.Errorf("worker exited: %w", perr)
		}
		st := p.Stats()
		if first.IsZero() && st["records"] > 0 {
			first = time.Now()
		}
		// Steady state: the KCL takes one new lease per shard sync, so
		// with many shards the last one starts seconds after the first.
		if leased.IsZero() {
			if ls, lerr := h.Leases(ctx); lerr == nil && len(harness.Owners(ls, time.Now())["w1"]) >= len(shardIDs) {
				leased, leasedN = time.Now(), p.Stats()["records"]
			}
		}
		return st["records"] >= sum.UserRecords, nil
	}, "the worker to process every record")
	if err != nil {
		h.DumpLogs(log, 3000)
		return r, err
	}
	end := time.Now()
	r.workerCPU = cpuSeconds(p.PID())
	r.pipeSeconds = end.Sub(p.Started).Seconds()
	r.pipeRPS = float64(sum.UserRecords) / r.pipeSeconds
	r.firstRecord = first.Sub(p.Started).Seconds()
	r.steadyRPS = float64(sum.UserRecords) / end.Sub(first).Seconds()
	if !leased.IsZero() && leasedN < sum.UserRecords {
		r.leasedAt = leased.Sub(p.Started).Seconds()
		r.leasedRPS = float64(sum.UserRecords-leasedN) / end.Sub(leased).Seconds()
	}
	h.Logf("worker: %d records in %.2f s (first record after %.2f s)", sum.UserRecords, r.pipeSeconds, r.firstRecord)

	// Write reduction at the burst rate: wait until every sealed window is
	// acknowledged (the last window seals on the idle watermark).
	st, err := settle(ctx, p, 90*time.Second)
	if err != nil {
		h.DumpLogs(log, 3000)
		return r, err
	}
	r.red = newReduction(sum.RecordsPerSecond(), st, -1)
	if err := p.Stop(60 * time.Second); err != nil {
		h.Logf("stop: %v", err)
	}
	return r, nil
}

// rawRead reads every shard from TRIM_HORIZON to its end with GetRecords
// (limit records per call, no pause while records come), de-aggregating KPL records,
// and returns the user records read, the data bytes read, and the bytes
// of the shard that holds the most.
func rawRead(ctx context.Context, h *harness.Harness, limit int) (int64, int64, int64, error) {
	ids, err := h.ShardIDs(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	kc := h.Kinesis()
	var total, bytes atomic.Int64
	perShard := make([]int64, len(ids))
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it, err := kc.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(h.Stream),
				ShardId: aws.String(id), ShardIteratorType: kinesistypes.ShardIteratorTypeTrimHorizon})
			if err != nil {
				errs[i] = err
				return
			}
			iter := it.ShardIterator
			for iter != nil {
				out, err := kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(int32(limit))})
				if err != nil {
					errs[i] = err
					return
				}
				for _, rec := range out.Records {
					bytes.Add(int64(len(rec.Data)))
					perShard[i] += int64(len(rec.Data))
					if kpl.IsAggregated(rec.Data) {
						urs, err := kpl.Deaggregate(rec.Data)
						if err == nil {
							total.Add(int64(len(urs)))
							continue
						}
					}
					total.Add(1)
				}
				if len(out.Records) == 0 {
					return // caught up: kinesalite returns whatever there is
				}
				iter = out.NextShardIterator
			}
		}()
	}
	wg.Wait()
	return total.Load(), bytes.Load(), slices.Max(perShard), errors.Join(errs...)
}

// settle waits until the worker has sealed and acknowledged everything it
// read (outbox written == acked, no change for 2 s) and returns its stats.
func settle(ctx context.Context, p *harness.Proc, timeout time.Duration) (map[string]int64, error) {
	var last map[string]int64
	var stableSince time.Time
	err := harness.Poll(ctx, timeout, 200*time.Millisecond, func() (bool, error) {
		st := p.Stats()
		if st == nil {
			return false, nil
		}
		same := last != nil && st["outbox_written"] == last["outbox_written"] && st["records"] == last["records"]
		last = st
		if !same || st["outbox_written"] != st["outbox_acked"] {
			stableSince = time.Time{}
			return false, nil
		}
		if stableSince.IsZero() {
			stableSince = time.Now()
		}
		return time.Since(stableSince) > 2*time.Second, nil
	}, "every sealed window acknowledged")
	return last, err
}

// ---------------------------------------------------------------- figure 2

func latency(ctx context.Context, c config, env harness.Env, bin, dir string, log io.Writer, round int) (latResult, error) {
	var r latResult
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	h, err := harness.New(harness.Options{Env: env, Bin: bin, Dir: dir, Log: log, Name: "bench-lat"})
	if err != nil {
		return r, err
	}
	defer h.Close()
	defer cleanupStream(h)

	// The workload, cut into the batches that will be put one per tick
	// (100 ms), and for every edge the first batch after which the
	// reference model (stream order, strict policy) holds it. All of this
	// before the worker starts: nothing but the replay and the graph poll
	// runs while latencies are measured.
	const tick = 100 * time.Millisecond
	recs := gen.Generate(gen.Config{Seed: int64(2000 + round), Events: c.latRate * c.latSeconds}.WithDefaults())
	per := max(1, int(math.Round(float64(c.latRate)*tick.Seconds())))
	if per > replay.MaxBatchRecords {
		return r, fmt.Errorf("-lat-rate %d: at most %d records per 100 ms tick", c.latRate, replay.MaxBatchRecords)
	}
	var batches [][]gen.Record
	for i := 0; i < len(recs); i += per {
		batches = append(batches, recs[i:min(i+per, len(recs))])
	}
	model := refmodel.New(refmodel.Options{Policy: "strict"})
	var versions []version
	final := map[string]int64{} // edge id -> lastSeen after the whole stream
	for b, batch := range batches {
		for _, rec := range batch {
			model.Add(rec.Data)
		}
		for id, e := range model.Graph().Edges {
			old, seen := final[id]
			if !seen || e.LastSeen > old {
				versions = append(versions, version{id: id, lastSeen: e.LastSeen, batch: b, isNew: !seen})
				final[id] = e.LastSeen
			}
		}
	}
	r.expected = len(final)
	r.versions = len(versions)
	h.Logf("latency workload: %d records in %d batches of %d, %d expected edges, %d edge versions (lastSeen changes)", len(recs), len(batches), per, r.expected, len(versions))

	if err := graphread.Drop(env.GremlinEndpoint); err != nil {
		return r, err
	}
	if err := h.CreateStream(ctx, c.shards); err != nil {
		return r, err
	}
	p, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Sink: "gremlin:" + env.GremlinEndpoint, StatsEvery: time.Second,
		ShardSync: time.Second, FailoverTime: 10 * time.Second, Args: c.runArgs()})
	if err != nil {
		return r, err
	}
	if err := h.WaitFor(ctx, 90*time.Second, "the worker holds every lease", func() (bool, error) {
		ls, err := h.Leases(ctx)
		if err != nil {
			return false, nil
		}
		return len(harness.Owners(ls, time.Now())["w1"]) == c.shards, nil
	}); err != nil {
		h.DumpLogs(log, 3000)
		return r, err
	}

	// Poll the graph's edge ids while replaying.
	visible := map[string][]sighting{}
	var vmu sync.Mutex
	pollCtx, stopPoll := context.WithCancel(ctx)
	pollDone := make(chan error, 1)
	go func() { pollDone <- pollEdges(pollCtx, env.GremlinEndpoint, c.poll, visible, &vmu) }()

	acks := make([]time.Time, len(batches))
	kc := h.Kinesis()
	start := time.Now()
	for b, batch := range batches {
		if d := time.Until(start.Add(time.Duration(b) * tick)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				stopPoll()
				return r, ctx.Err()
			}
		}
		if err := putBatch(ctx, kc, h.Stream, batch); err != nil {
			stopPoll()
			return r, fmt.Errorf("put batch %d: %w", b, err)
		}
		acks[b] = time.Now()
	}
	r.achievedRate = float64(len(recs)) / time.Since(start).Seconds()
	h.Logf("steady replay: %d records at %.0f/s", len(recs), r.achievedRate)

	// Wait for every expected edge (the last window seals on the idle
	// watermark), then stop polling.
	werr := h.WaitFor(ctx, 90*time.Second, "every expected edge visible", func() (bool, error) {
		vmu.Lock()
		defer vmu.Unlock()
		for id, ls := range final {
			if v := visible[id]; len(v) == 0 || v[len(v)-1].lastSeen < ls {
				return false, nil
			}
		}
		return true, nil
	})
	stopPoll()
	if err := <-pollDone; err != nil && !errors.Is(err, context.Canceled) {
		return r, err
	}
	for _, v := range versions {
		at, ok := firstAtLeast(visible[v.id], v.lastSeen)
		if !ok {
			if v.isNew {
				r.missing++
			}
			continue
		}
		d := at.Sub(acks[v.batch]).Seconds()
		r.all = append(r.all, d)
		if v.isNew {
			r.lat = append(r.lat, d)
		}
	}
	sort.Float64s(r.all)
	sort.Float64s(r.lat)
	if werr != nil {
		h.Logf("%v: %d of %d edges missing", werr, r.missing, r.expected)
	}

	st, err := settle(ctx, p, 60*time.Second)
	if err != nil {
		h.DumpLogs(log, 3000)
		return r, err
	}
	sinkRecords := int64(-1)
	if m, err := scrapeMetrics(p); err == nil {
		if v, ok := m["lineage_sink_records_total"]; ok {
			sinkRecords = int64(v)
		}
	} else {
		h.Logf("metrics: %v", err)
	}
	r.red = newReduction(r.achievedRate, st, sinkRecords)
	if err := p.Stop(60 * time.Second); err != nil {
		h.Logf("stop: %v", err)
	}
	return r, nil
}

// putBatch puts recs with one PutRecords (re-sending failed records until
// all are stored): its return is the acknowledgement time of every record.
func putBatch(ctx context.Context, kc *kinesis.Client, stream string, recs []gen.Record) error {
	entries := make([]kinesistypes.PutRecordsRequestEntry, len(recs))
	for i, r := range recs {
		entries[i] = kinesistypes.PutRecordsRequestEntry{PartitionKey: aws.String(r.PartitionKey), Data: r.Data}
	}
	for attempt := 0; len(entries) > 0; attempt++ {
		if attempt == 30 {
			return errors.New("records still failing after 30 attempts")
		}
		out, err := kc.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: entries})
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var failed []kinesistypes.PutRecordsRequestEntry
		for i, res := range out.Records {
			if res.ErrorCode != nil {
				failed = append(failed, entries[i])
			}
		}
		entries = failed
	}
	return nil
}

// version is one state of an edge in the reference model: the edge
// exists (isNew) or its lastSeen grew, after batch.
type version struct {
	id       string
	lastSeen int64
	batch    int
	isNew    bool
}

// sighting is a lastSeen value of an edge the graph first returned at.
type sighting struct {
	at       time.Time
	lastSeen int64
}

// firstAtLeast returns when the graph first showed lastSeen >= ls.
func firstAtLeast(ss []sighting, ls int64) (time.Time, bool) {
	for _, s := range ss {
		if s.lastSeen >= ls {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// pollEdges reads every edge's id and lastSeen every period and notes each
// new value with the time the answer arrived.
func pollEdges(ctx context.Context, endpoint string, period time.Duration, visible map[string][]sighting, mu *sync.Mutex) error {
	g, closeFn, err := graphread.Connect(endpoint)
	if err != nil {
		return err
	}
	defer closeFn()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		rs, err := g.E().Project("id", "ls").By(gremlingo.T.Id).By(gremlingo.T__.Values("lastSeen")).ToList()
		now := time.Now()
		if err == nil {
			mu.Lock()
			for _, r := range rs {
				m, ok := r.GetInterface().(map[any]any)
				if !ok {
					continue
				}
				id := fmt.Sprint(m["id"])
				ls, ok := graphread.AsInt64(m["ls"])
				if !ok {
					continue
				}
				if v := visible[id]; len(v) == 0 || v[len(v)-1].lastSeen < ls {
					visible[id] = append(v, sighting{at: now, lastSeen: ls})
				}
			}
			mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ---------------------------------------------------------------- helpers

// cpuSeconds returns the user+system CPU time of a process (Linux /proc).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return math.NaN()
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return math.NaN()
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

var httpAddr = regexp.MustCompile(`msg="http server listening" addr=(\S+)`)

// scrapeMetrics reads the worker's /metrics (address from its log) and
// returns the unlabelled samples and the sums of labelled ones by name.
func scrapeMetrics(p *harness.Proc) (map[string]float64, error) {
	m := httpAddr.FindStringSubmatch(p.Log())
	if m == nil {
		return nil, errors.New("no http address in the worker's log")
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(f[0], "{")
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[name] += v
		}
	}
	return out, sc.Err()
}

// cleanupStream deletes the stream and the lease table of h (frees
// kinesalite's disk between rounds).
func cleanupStream(h *harness.Harness) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = h.Kinesis().DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String(h.Stream), EnforceConsumerDeletion: aws.Bool(true)})
	_, _ = h.DynamoDB().DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(h.App)})
}

// pct returns the p-th percentile (nearest rank) of sorted xs.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p/100*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// spread formats the median and range of xs.
func spread(xs []float64, format string) string {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	if len(s) == 1 {
		return fmt.Sprintf(format, med)
	}
	return fmt.Sprintf(format+" ("+format+"-"+format+")", med, s[0], s[len(s)-1])
}

type summary struct {
	lines                            string
	ratio, steady, leased, raw, pipe string
	rawMB, pipeMB, cpu, hot, mean    string
	p50, p90, p99, pmax, n           string // every edge version
	np50, np90, np99, npmax, nn      string // new edge ids
	redSteady, redBurst, cacheSteady string
	cacheEvents                      string
	rateSteady, rateBurst            string
	ratioOK, latOK, redOK            bool
	ratioMin, p99Max, redSteadyMin   float64
	missing                          int
}

func summarize(c config, ts []tputResult, ls []latResult) summary {
	var s summary
	col := func(f func(i int) float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	nt, nl := len(ts), len(ls)
	ratios := col(func(i int) float64 { return ts[i].pipeRPS / ts[i].rawRPS }, nt)
	s.ratio = spread(ratios, "%.2f")
	s.steady = spread(col(func(i int) float64 { return ts[i].steadyRPS / ts[i].rawRPS }, nt), "%.2f")
	s.leased = spread(col(func(i int) float64 { return ts[i].leasedRPS / ts[i].rawRPS }, nt), "%.2f")
	s.raw = spread(col(func(i int) float64 { return ts[i].rawRPS }, nt), "%.0f")
	s.pipe = spread(col(func(i int) float64 { return ts[i].pipeRPS }, nt), "%.0f")
	s.rawMB = spread(col(func(i int) float64 { return float64(ts[i].rawBytes) / 1e6 / ts[i].rawSeconds / float64(c.shards) }, nt), "%.2f")
	s.pipeMB = spread(col(func(i int) float64 { return float64(ts[i].rawBytes) / 1e6 / ts[i].pipeSeconds / float64(c.shards) }, nt), "%.2f")
	s.hot = spread(col(func(i int) float64 { return float64(ts[i].hotShardBytes) / 1e6 }, nt), "%.1f")
	s.mean = spread(col(func(i int) float64 { return float64(ts[i].rawBytes) / 1e6 / float64(c.shards) }, nt), "%.1f")
	s.cpu = spread(col(func(i int) float64 { return 100 * ts[i].workerCPU / ts[i].pipeSeconds }, nt), "%.0f%%")
	p99s := col(func(i int) float64 { return pct(ls[i].all, 99) }, nl)
	s.p50 = spread(col(func(i int) float64 { return pct(ls[i].all, 50) }, nl), "%.2f")
	s.p90 = spread(col(func(i int) float64 { return pct(ls[i].all, 90) }, nl), "%.2f")
	s.p99 = spread(p99s, "%.2f")
	s.pmax = spread(col(func(i int) float64 { return pct(ls[i].all, 100) }, nl), "%.2f")
	s.n = spread(col(func(i int) float64 { return float64(len(ls[i].all)) }, nl), "%.0f")
	np99s := col(func(i int) float64 { return pct(ls[i].lat, 99) }, nl)
	s.np50 = spread(col(func(i int) float64 { return pct(ls[i].lat, 50) }, nl), "%.2f")
	s.np90 = spread(col(func(i int) float64 { return pct(ls[i].lat, 90) }, nl), "%.2f")
	s.np99 = spread(np99s, "%.2f")
	s.npmax = spread(col(func(i int) float64 { return pct(ls[i].lat, 100) }, nl), "%.2f")
	s.nn = spread(col(func(i int) float64 { return float64(len(ls[i].lat)) }, nl), "%.0f")
	redS := col(func(i int) float64 { return 100 * ls[i].red.ratio }, nl)
	redB := col(func(i int) float64 { return 100 * ts[i].red.ratio }, nt)
	s.redSteady = spread(redS, "%.1f%%")
	s.redBurst = spread(redB, "%.1f%%")
	graph := col(func(i int) float64 {
		r := ls[i].red
		return 100 * (1 - float64(r.sinkRecords)/float64(r.records))
	}, nl)
	s.cacheSteady = spread(graph, "%.1f%%")
	s.cacheEvents = spread(col(func(i int) float64 {
		r := ls[i].red
		return 100 * (1 - float64(r.sinkRecords)/float64(r.events))
	}, nl), "%.1f%%")
	s.rateSteady = spread(col(func(i int) float64 { return ls[i].red.rate }, nl), "%.0f")
	s.rateBurst = spread(col(func(i int) float64 { return ts[i].red.rate }, nt), "%.0f")
	s.ratioMin, s.p99Max, s.redSteadyMin = minOf(ratios), math.Max(maxOf(p99s), maxOf(np99s)), minOf(graph)
	for _, l := range ls {
		s.missing += l.missing
	}
	s.ratioOK, s.latOK, s.redOK = s.ratioMin >= 0.9, s.p99Max <= 11.5 && s.missing == 0, s.redSteadyMin >= 90
	s.lines = fmt.Sprintf("throughput: pipeline/raw ratio=%s (target >= 0.9: %s) raw_rps=%s pipeline_rps=%s steady_ratio=%s all_leases_ratio=%s raw_MBps_per_shard=%s pipeline_MBps_per_shard=%s worker_cpu=%s rounds=%d sink=%s\n",
		s.ratio, okWord(s.ratioOK), s.raw, s.pipe, s.steady, s.leased, s.rawMB, s.pipeMB, s.cpu, nt, c.tputSink) +
		fmt.Sprintf("latency: every edge version p50=%ss p90=%ss p99=%ss max=%ss n=%s; new edge ids p50=%ss p99=%ss max=%ss n=%s missing=%d (target p99 <= 11.5 s: %s) rate=%s/s rounds=%d sink=gremlin\n",
			s.p50, s.p90, s.p99, s.pmax, s.n, s.np50, s.np99, s.npmax, s.nn, s.missing, okWord(s.latOK), s.rateSteady, nl) +
		fmt.Sprintf("reduction: graph writes (records in acknowledged Gremlin requests) per input record %s, per decoded event %s, at %s records/s (target >= 90%%: %s); upserts the processor emitted per input record %s; at the pre-load burst (%s records/s) %s\n",
			s.cacheSteady, s.cacheEvents, s.rateSteady, okWord(s.redOK), s.redSteady, s.rateBurst, s.redBurst)
	return s
}

// runArgs are the flags every `lineageflow run` of the bench gets.
func (c config) runArgs() []string {
	return append([]string{"-max-records", strconv.Itoa(c.maxRecords)}, strings.Fields(c.workerArgs)...)
}

func pipelines(n int) string {
	if n <= 0 {
		return "8 (the generator's default)"
	}
	return strconv.Itoa(n)
}

func okWord(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

func appendResults(c config, s summary, ts []tputResult, ls []latResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## End to end (scripts/bench-e2e.sh), %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "Machine: %d shared cores (%s/%s), %s; kinesalite, dynalite and Gremlin Server (TinkerGraph) stand-ins on the same cores,\n",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "started by the script in `.standins/bench` (ports 54567/54568/58182). %d rounds, all figures of a round in the same run;\n", len(ts))
	fmt.Fprintf(&b, "medians with (min-max) over the rounds. One worker, default `lineageflow run` flags (idle-between-reads 200ms,\n")
	fmt.Fprintf(&b, "shard-sync 1s, lateness 500ms, 10 s windows), plus `%s`.\n\n", strings.Join(c.runArgs(), " "))
	fmt.Fprintf(&b, "Command:\n\n```\n%s\n```\n\n", c.command)
	fmt.Fprintf(&b, "| Figure | Result | Target |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| (1) throughput: one worker (`-sink %s`) from process start until its stats count every record, / kinesalite's raw GetRecords rate (plain reader, one goroutine per shard, the same GetRecords limit (%d) as the worker, KPL de-aggregated), %d shards, %d generated events of %s pipelines (one partition key each) pre-loaded (%.0f%% KPL-aggregated); the hottest shard held %s MB (mean %s) | **%s** (raw %s rec/s = %s MB/s per shard; pipeline %s rec/s = %s MB/s per shard); from the first record processed: %s; once the worker held every shard's lease: %s; worker CPU %s of one core | >= 0.9: %s |\n",
		c.tputSink, c.maxRecords, c.shards, c.tputEvents, pipelines(c.tputPipes), 100*c.aggregate, s.hot, s.mean, s.ratio, s.raw, s.rawMB, s.pipe, s.pipeMB, s.steady, s.leased, s.cpu, okWord(s.ratioOK))
	fmt.Fprintf(&b, "| (2) latency: PutRecords ack of the record after which the reference model holds the edge state -> the graph shows it; steady %d rec/s for %d s in 100 ms PutRecords batches, graph polled every %v (`g.E().project(id, lastSeen)`) | every edge version (new edges and lastSeen updates): p50 %s s, p90 %s s, **p99 %s s**, max %s s, n=%s per round; new edge ids only: p50 %s s, p90 %s s, p99 %s s, max %s s, n=%s, missing %d | p99 <= 11.5 s: %s |\n",
		c.latRate, c.latSeconds, c.poll, s.p50, s.p90, s.p99, s.pmax, s.n, s.np50, s.np90, s.np99, s.npmax, s.nn, s.missing, okWord(s.latOK))
	fmt.Fprintf(&b, "| (3) write reduction: 1 - graph writes / input records, graph writes = vertex and edge records in acknowledged Gremlin requests (`lineage_sink_records_total`: after the vertex cache and the cross-shard merge), default generated workload (`gen` defaults: 8 pipelines, 20%% duplicates, 10%% failed runs, 1%% malformed), the latency run | **%s** at %s rec/s; per decoded event (duplicates and malformed records not counted as input): %s; the processor's emitted upserts (edges_emitted + vertices_emitted) per input record: %s; at the pre-load burst (%s rec/s, processor emissions): %s | >= 90%%: %s |\n\n",
		s.cacheSteady, s.rateSteady, s.cacheEvents, s.redSteady, s.rateBurst, s.redBurst, okWord(s.redOK))
	fmt.Fprintf(&b, "Per round:\n\n```\n")
	for i := range ts {
		t, l := ts[i], ls[i]
		fmt.Fprintf(&b, "round %d: raw %.0f rec/s (%.1f s), pipeline %.0f rec/s (%.1f s, first record at %.1f s, worker CPU %.0f%%), ratio %.2f (steady %.2f); %d records in %d Kinesis records, %.1f MB\n",
			i+1, t.rawRPS, t.rawSeconds, t.pipeRPS, t.pipeSeconds, t.firstRecord, 100*t.workerCPU/t.pipeSeconds, t.pipeRPS/t.rawRPS, t.steadyRPS/t.rawRPS, t.userRecords, t.kinesisRecords, float64(t.rawBytes)/1e6)
		fmt.Fprintf(&b, "         latency, versions n=%d/%d p50 %.2f p90 %.2f p99 %.2f max %.2f s; new edges n=%d/%d p50 %.2f p99 %.2f max %.2f s; at %.0f rec/s\n",
			len(l.all), l.versions, pct(l.all, 50), pct(l.all, 90), pct(l.all, 99), pct(l.all, 100),
			len(l.lat), l.expected, pct(l.lat, 50), pct(l.lat, 99), pct(l.lat, 100), l.achievedRate)
		fmt.Fprintf(&b, "         steady: %s\n         burst:  %s\n", l.red, t.red)
	}
	fmt.Fprintf(&b, "```\n")
	f, err := os.OpenFile(c.results, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(b.String())
	return err
}
