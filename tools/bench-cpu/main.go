// Command bench-cpu measures, in one run on the local stand-ins, the CPU a
// worker spends per record read from kinesalite against the CPU the core
// pipeline spends per event (issue 16), so the figures compare as ratios on
// a shared, noisy machine:
//
//  1. worker: one `lineageflow run -cpu-profile` drains a pre-loaded stream
//     (generated events, a share KPL-aggregated); its CPU seconds (/proc,
//     every thread) from its first processed record to its last, per
//     million records; its wall rate against kinesalite's raw GetRecords
//     rate (a plain reader, same stream, same run);
//  2. pipeline: `BenchmarkPipeline/batch=10000` (processor/: raw bytes ->
//     sealed outbox, no Kinesis) reports cpu-us/event and events/s;
//  3. decoder: `BenchmarkDecode` (lineage/) events/s;
//  4. the ratios worker CPU per record / pipeline CPU per event and
//     pipeline events/s / decoder events/s, and the worker's CPU profile by
//     component (SDK, KCL, de-aggregation, decode, dedup, runs, window,
//     barrier, sink, ...): each sample goes to the component of the frame
//     nearest its leaf that belongs to one (runtime frames such as malloc
//     count for their caller), see components.go.
//
// Run it through scripts/bench-cpu.sh, which starts the stand-ins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kinesistypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

type config struct {
	rounds     int
	shards     int
	events     int
	aggregate  float64
	sink       string
	maxRecords int
	workerArgs string
	benchTime  string
	dir        string
	top        int
	classify   string
	baseline   string
}

func main() {
	var c config
	flag.IntVar(&c.rounds, "rounds", 3, "rounds (each: pre-load, raw read, worker, pipeline and decoder benchmarks)")
	flag.IntVar(&c.shards, "shards", 8, "shards of the stream")
	flag.IntVar(&c.events, "events", 100000, "generated events pre-loaded (gen defaults otherwise: duplicates, failed runs, malformed records)")
	flag.Float64Var(&c.aggregate, "aggregate", 0.5, "share of the pre-loaded records sent KPL-aggregated")
	flag.StringVar(&c.sink, "sink", "file", "sink of the worker: file or gremlin")
	flag.IntVar(&c.maxRecords, "max-records", 2500, "GetRecords limit of the raw reader and the worker (kinesalite does not cap a response at 10 MB)")
	flag.StringVar(&c.workerArgs, "worker-args", "-shard-sync 100ms", "extra flags for `lineageflow run` (space-separated)")
	flag.StringVar(&c.benchTime, "benchtime", "2x", "-benchtime of BenchmarkPipeline (50,000 events per x)")
	flag.StringVar(&c.dir, "dir", "", "work directory (default a new temp dir, removed on success)")
	flag.IntVar(&c.top, "top", 25, "lines of `go tool pprof -top` printed for the last round's worker profile")
	flag.StringVar(&c.classify, "classify", "", "only print the components of this CPU profile of `lineageflow run` (with -classify-bin, the binary that wrote it) and exit")
	flag.StringVar(&c.baseline, "baseline-bin", "", "a `lineageflow` binary of another commit (e.g. before a change): each round also drains the stream with it (no profile), for a before/after in the same run")
	classifyBin := flag.String("classify-bin", "", "the binary of the -classify profile")
	flag.Parse()
	if c.classify != "" {
		ss, err := components(context.Background(), *classifyBin, c.classify)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-cpu:", err)
			os.Exit(1)
		}
		for _, s := range ss {
			fmt.Printf("%6.1f%% %8v  %s\n", 100*s.frac, s.d, s.name)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "bench-cpu:", err)
		os.Exit(1)
	}
}

type round struct {
	records, kinesisRecords int64
	rawRPS                  float64
	workerRPS               float64 // first to last processed record
	workerCPU               float64 // CPU seconds, first to last processed record
	baseCPU, baseRPS        float64 // the same of the -baseline-bin worker
	pipeCPU                 float64 // us per event
	pipeRPS                 float64
	decodeRPS               float64
	decodeCPU               float64 // us per event
	comps                   []share
	profile                 string
}

func (r round) workerUS() float64 { return r.workerCPU * 1e6 / float64(r.records) }

func run(ctx context.Context, c config) error {
	root := testenv.RepoRoot()
	env, ok := harness.StandinsEnv()
	if !ok {
		return errors.New("stand-ins not found: run it through scripts/bench-cpu.sh")
	}
	work := c.dir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "lineageflow-bench-cpu-"); err != nil {
			return err
		}
	}
	bin, err := harness.Build(ctx, root, work)
	if err != nil {
		return err
	}
	// The benchmark binaries, built once.
	pipeTest, decTest := filepath.Join(work, "processor.test"), filepath.Join(work, "lineage.test")
	for pkg, out := range map[string]string{"./processor": pipeTest, "./lineage": decTest} {
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", out, pkg)
		cmd.Dir, cmd.Stderr = root, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s benchmarks: %w", pkg, err)
		}
	}
	fmt.Printf("bench-cpu: work dir %s, %d rounds, %d events, %d shards, %.0f%% aggregated, sink %s, kinesis %s\n",
		work, c.rounds, c.events, c.shards, 100*c.aggregate, c.sink, env.KinesisEndpoint)
	h, err := harness.New(harness.Options{Env: env, Bin: bin, Dir: work, Log: os.Stderr, Name: "bench-cpu"})
	if err != nil {
		return err
	}
	defer h.Close()
	defer dropTables(h, h.Stream, h.App)
	sum, err := preload(ctx, c, h)
	if err != nil {
		return err
	}
	var rs []round
	for i := 1; i <= c.rounds; i++ {
		r, err := oneRound(ctx, c, h, sum, filepath.Join(work, fmt.Sprintf("round-%d", i)), i)
		if err != nil {
			return fmt.Errorf("round %d: %w (logs in %s)", i, err, work)
		}
		if r.pipeCPU, r.pipeRPS, err = benchValues(ctx, filepath.Join(root, "processor"), pipeTest, "BenchmarkPipeline/batch=10000$", c.benchTime, "cpu-us/event", "events/s"); err != nil {
			return err
		}
		var dec []float64
		if dec, err = benchFigures(ctx, filepath.Join(root, "lineage"), decTest, "^BenchmarkDecode$", "200000x", "events/s", "cpu-us/event"); err != nil {
			return err
		}
		r.decodeRPS, r.decodeCPU = dec[0], dec[1]
		fmt.Printf("round=%d worker: records=%d kinesis_records=%d cpu_s=%.2f cpu_s_per_M=%.1f us_per_record=%.1f rps=%.0f raw_rps=%.0f tput_ratio=%.2f\n",
			i, r.records, r.kinesisRecords, r.workerCPU, r.workerCPU*1e6/float64(r.records), r.workerUS(), r.workerRPS, r.rawRPS, r.workerRPS/r.rawRPS)
		if c.baseline != "" {
			fmt.Printf("round=%d baseline worker (%s): cpu_s=%.2f us_per_record=%.1f rps=%.0f; this/baseline CPU per record=%.2f, rate=%.2f\n",
				i, c.baseline, r.baseCPU, r.baseCPU*1e6/float64(r.records), r.baseRPS, r.workerCPU/r.baseCPU, r.workerRPS/r.baseRPS)
		}
		fmt.Printf("round=%d pipeline: cpu_us_per_event=%.1f events_per_s=%.0f decoder: cpu_us_per_event=%.2f events_per_s=%.0f\n", i, r.pipeCPU, r.pipeRPS, r.decodeCPU, r.decodeRPS)
		fmt.Printf("round=%d RATIOS worker_cpu_per_record/pipeline_cpu_per_event=%.2f (goal <= 1.5) pipeline/decoder events per CPU-second=%.3f, per wall second=%.3f (goal >= 0.5) worker_rps/raw_rps=%.2f (goal >= 0.9)\n",
			i, r.workerUS()/r.pipeCPU, r.decodeCPU/r.pipeCPU, r.pipeRPS/r.decodeRPS, r.workerRPS/r.rawRPS)
		fmt.Printf("round=%d profile by component: %s\n", i, formatShares(r.comps))
		rs = append(rs, r)
	}
	last := rs[len(rs)-1]
	if c.top > 0 {
		out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount", strconv.Itoa(c.top), bin, last.profile).Output()
		if err != nil {
			return fmt.Errorf("pprof -top: %w", err)
		}
		fmt.Printf("worker profile of round %d (%s):\n%s", len(rs), last.profile, out)
	}
	if c.dir == "" && ctx.Err() == nil {
		os.RemoveAll(work)
	}
	return nil
}

// dropTables deletes the stream (if any) and the KCL tables of app.
func dropTables(h *harness.Harness, stream, app string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if stream != "" {
		_, _ = h.Kinesis().DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String(stream), EnforceConsumerDeletion: aws.Bool(true)})
	}
	for _, t := range []string{app, app + "-handoff"} {
		_, _ = h.DynamoDB().DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)})
	}
}

// preload creates the stream and puts the generated records on it, once
// for every round (every round's worker reads it from TRIM_HORIZON under
// its own KCL application).
func preload(ctx context.Context, c config, h *harness.Harness) (replay.Summary, error) {
	if err := h.CreateStream(ctx, c.shards); err != nil {
		return replay.Summary{}, err
	}
	recs := gen.Generate(gen.Config{Seed: 2000, Events: c.events}.WithDefaults())
	toReplay, _ := harness.Generated(recs)
	rc := h.ReplayConfig()
	rc.Aggregate, rc.Seed = c.aggregate, 1
	sum, err := replay.Run(ctx, h.Kinesis(), rc, replay.FromSlice(toReplay))
	if err != nil {
		return sum, fmt.Errorf("pre-load: %w", err)
	}
	h.Logf("pre-load: %s", sum)
	return sum, nil
}

func oneRound(ctx context.Context, c config, h *harness.Harness, sum replay.Summary, dir string, i int) (round, error) {
	var r round
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	r.records, r.kinesisRecords = sum.UserRecords, sum.Records

	t0 := time.Now()
	n, err := rawRead(ctx, h, c.maxRecords)
	if err != nil {
		return r, fmt.Errorf("raw read: %w", err)
	}
	if n != sum.UserRecords {
		return r, fmt.Errorf("raw read: %d user records, want %d", n, sum.UserRecords)
	}
	r.rawRPS = float64(n) / time.Since(t0).Seconds()

	r.profile = filepath.Join(dir, "worker.cpu.pprof")
	if c.baseline != "" && i%2 == 1 { // alternate which goes first
		if r.baseCPU, r.baseRPS, err = drain(ctx, c, h, sum, c.baseline, fmt.Sprintf("b%d", i), ""); err != nil {
			return r, fmt.Errorf("baseline: %w", err)
		}
	}
	if r.workerCPU, r.workerRPS, err = drain(ctx, c, h, sum, h.Bin, fmt.Sprintf("w%d", i), r.profile); err != nil {
		return r, err
	}
	if c.baseline != "" && i%2 == 0 {
		if r.baseCPU, r.baseRPS, err = drain(ctx, c, h, sum, c.baseline, fmt.Sprintf("b%d", i), ""); err != nil {
			return r, fmt.Errorf("baseline: %w", err)
		}
	}
	if r.comps, err = components(ctx, h.Bin, r.profile); err != nil {
		return r, err
	}
	return r, nil
}

// drain runs worker binary bin under a new KCL application (so from
// TRIM_HORIZON) until it has processed every pre-loaded record and returns
// its CPU seconds and rate from its first processed record to the last
// (scaled to every record). profile: its -cpu-profile ("": none, e.g. a
// baseline binary without the flag).
func drain(ctx context.Context, c config, h *harness.Harness, sum replay.Summary, bin, id, profile string) (cpu, rps float64, err error) {
	app := fmt.Sprintf("%s-%s", h.App, id) // a new lease table: the worker starts at TRIM_HORIZON
	defer dropTables(h, "", app)
	args := []string{"-max-records", strconv.Itoa(c.maxRecords), "-app", app}
	if profile != "" {
		args = append(args, "-cpu-profile", profile)
	}
	spec := harness.WorkerSpec{ID: id, StatsEvery: 50 * time.Millisecond, ShardSync: time.Second, FailoverTime: 10 * time.Second,
		Args: append(args, strings.Fields(c.workerArgs)...)}
	if c.sink == "gremlin" {
		if h.Env.GremlinEndpoint == "" {
			return 0, 0, errors.New("-sink gremlin: no Gremlin stand-in")
		}
		if err := graph.Drop(h.Env.GremlinEndpoint); err != nil {
			return 0, 0, err
		}
		spec.Sink = "gremlin:" + h.Env.GremlinEndpoint
	}
	saved := h.Bin
	h.Bin = bin
	p, err := h.StartWorker(ctx, spec)
	h.Bin = saved
	if err != nil {
		return 0, 0, err
	}
	var first time.Time
	var cpuFirst float64
	var firstN int64
	err = harness.Poll(ctx, 10*time.Minute, 20*time.Millisecond, func() (bool, error) {
		if done, perr := p.Exited(); done {
			return false, fmt.Errorf("worker exited: %w", perr)
		}
		st := p.Stats()
		if first.IsZero() && st["records"] > 0 {
			first, cpuFirst, firstN = time.Now(), cpuSeconds(p.PID()), st["records"]
		}
		return st["records"] >= sum.UserRecords, nil
	}, "the worker to process every record")
	if err != nil {
		h.DumpLogs(os.Stderr, 3000)
		_ = p.Kill()
		return 0, 0, err
	}
	end, cpuEnd := time.Now(), cpuSeconds(p.PID())
	// The records before the first observation (one stats period) are
	// left out of both the CPU and the count.
	cpu = (cpuEnd - cpuFirst) * float64(sum.UserRecords) / float64(sum.UserRecords-firstN)
	rps = float64(sum.UserRecords-firstN) / end.Sub(first).Seconds()
	if err := p.Stop(60 * time.Second); err != nil {
		return 0, 0, fmt.Errorf("stop: %w", err)
	}
	return cpu, rps, nil
}

// cpuSeconds returns the user+system CPU time of a process (Linux /proc).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// benchValues runs one benchmark of a test binary and returns two of its
// reported metrics.
func benchValues(ctx context.Context, dir, bin, pattern, benchtime, m1, m2 string) (float64, float64, error) {
	v, err := benchFigures(ctx, dir, bin, pattern, benchtime, m1, m2)
	if err != nil {
		return 0, 0, err
	}
	return v[0], v[1], nil
}

// benchFigures runs the benchmarks matching pattern (one result line
// expected) and returns the named metrics of the line.
func benchFigures(ctx context.Context, dir, bin, pattern, benchtime string, metrics ...string) ([]float64, error) {
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", pattern, "-test.benchtime", benchtime, "-test.count", "1")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s -test.bench %s: %w\n%s", filepath.Base(bin), pattern, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		vals := make([]float64, len(metrics))
		found := 0
		for j := 1; j+1 < len(f); j++ {
			if k := slices.Index(metrics, f[j+1]); k >= 0 {
				v, perr := strconv.ParseFloat(f[j], 64)
				if perr == nil {
					vals[k] = v
					found++
				}
			}
		}
		if found == len(metrics) {
			return vals, nil
		}
	}
	return nil, fmt.Errorf("%s: no line with %v in:\n%s", pattern, metrics, out)
}

// rawRead reads every shard from TRIM_HORIZON to its end with GetRecords
// (limit records per call, no pause while records come), de-aggregating KPL
// records, and returns the user records read (as tools/bench-e2e).
func rawRead(ctx context.Context, h *harness.Harness, limit int) (int64, error) {
	ids, err := h.ShardIDs(ctx)
	if err != nil {
		return 0, err
	}
	kc := h.Kinesis()
	var total atomic.Int64
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
					if kpl.IsAggregated(rec.Data) {
						if urs, err := kpl.Deaggregate(rec.Data); err == nil {
							total.Add(int64(len(urs)))
							continue
						}
					}
					total.Add(1)
				}
				if len(out.Records) == 0 {
					return
				}
				iter = out.NextShardIterator
			}
		}()
	}
	wg.Wait()
	return total.Load(), errors.Join(errs...)
}
