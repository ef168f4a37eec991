// Command e2e is the fault matrix that proves exactly-once: real worker
// processes (`lineageflow run`) on the local stand-ins, a generated stream,
// one fault per scenario, and the live graph compared with the reference
// model. Each scenario prints one line:
//
//	scenario=<name> events=N expected_edges=N actual_edges=N missing=N extra=N duplicate=N ghost=N dlq=N mismatched=N recover_s=X result=PASS|FAIL
//
// and the run ends with a summary line. Run it through scripts/e2e.sh
// (make e2e), which starts and stops the stand-ins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kinesistypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/graphread"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify"
	"github.com/lineageflow/lineageflow/verify/refmodel"
	"github.com/lineageflow/lineageflow/window"
)

func main() {
	var (
		only     = flag.String("scenarios", "", "comma-separated scenario names to run (default: all)")
		short    = flag.Bool("short", os.Getenv("E2E_SHORT") == "1", "CI version: scenarios kill, term, gremlin-down and dup-ooo only, smaller streams, 10 s outage")
		events   = flag.Int("events", 0, "generated events per scenario (default 12000, 6000 with -short)")
		outage   = flag.Duration("outage", 0, "how long Gremlin Server stays down in gremlin-down (default 30s, 10s with -short)")
		dir      = flag.String("dir", "", "work directory (default a new temp dir, removed on success)")
		breakArg = flag.String("break", os.Getenv("E2E_BREAK"), "inject a broken invariant into the workers to show the matrix catches it: early-checkpoint")
		list     = flag.Bool("list", false, "list the scenarios and exit")
	)
	flag.Parse()
	if *list {
		for _, s := range scenarios {
			fmt.Printf("%-16s %s\n", s.name, s.what)
		}
		return
	}
	if *events == 0 {
		*events = 12000
		if *short {
			*events = 6000
		}
	}
	if *outage == 0 {
		*outage = 30 * time.Second
		if *short {
			*outage = 10 * time.Second
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, config{only: *only, short: *short, events: *events, outage: *outage, dir: *dir, breakMode: *breakArg}))
}

type config struct {
	only      string
	short     bool
	events    int
	outage    time.Duration
	dir       string
	breakMode string
}

// scenario is one row of the matrix. fault runs while the stream is being
// replayed; it returns when the fault is over (the time the graph then
// takes to be complete is recover_s).
type scenario struct {
	name    string
	what    string
	short   bool // part of the CI (short) matrix
	workers int
	steal   bool
	gen     func(c gen.Config) gen.Config
	fault   func(ctx context.Context, s *state) error
	check   func(ctx context.Context, s *state) error // extra assertions after the graph is complete
	live    func(ctx context.Context, s *state) error // assertions on the running workers, graph complete
}

var scenarios = []scenario{
	{name: "kill", what: "SIGKILL one of three workers mid-window", short: true, workers: 3,
		fault: func(ctx context.Context, s *state) error {
			// Kill when every record is processed but the last windows are
			// still open: what the victim held only in its own state (open
			// windows, open runs, the latest lastSeen stamps) must come back
			// from the survivors' replay of its shards from its KCL
			// checkpoint, or the graph differs.
			if err := s.waitCaughtUp(ctx); err != nil {
				return err
			}
			victim, err := s.busiest(ctx)
			if err != nil {
				return err
			}
			s.h.Logf("SIGKILL %s", victim.Spec.ID)
			return victim.Kill()
		}},
	{name: "term", what: "SIGTERM one of two workers mid-stream: the other holds every lease within seconds", short: true, workers: 2,
		fault: func(ctx context.Context, s *state) error {
			if err := s.waitAcked(ctx); err != nil {
				return err
			}
			victim, err := s.busiest(ctx)
			if err != nil {
				return err
			}
			s.h.Logf("SIGTERM %s", victim.Spec.ID)
			if err := victim.Stop(60 * time.Second); err != nil {
				return fmt.Errorf("graceful stop: %w", err)
			}
			// The KCL releases the leases on a graceful stop: the other
			// worker must pick them up at its next shard sync, not after a
			// failover time.
			t0 := time.Now()
			if err := s.waitOwners(ctx, 1); err != nil {
				return err
			}
			if d := time.Since(t0); d > 10*time.Second {
				return fmt.Errorf("leases handed over after %v, want a few seconds", d)
			}
			s.h.Logf("leases handed over %v after the exit", time.Since(t0))
			return nil
		}},
	{name: "join", what: "a fourth worker joins: leases rebalance", workers: 3, steal: true,
		fault: func(ctx context.Context, s *state) error {
			if err := s.waitAcked(ctx); err != nil {
				return err
			}
			p, err := s.h.StartWorker(ctx, s.spec("w4"))
			if err != nil {
				return err
			}
			s.procs = append(s.procs, p)
			return s.h.WaitFor(ctx, 60*time.Second, "w4 holds a lease", func() (bool, error) {
				ls, err := s.h.Leases(ctx)
				if err != nil {
					return false, nil
				}
				return len(harness.Owners(ls, time.Now())["w4"]) > 0, nil
			})
		}},
	{name: "gremlin-down", what: "Gremlin Server down mid-stream, then back", short: true, workers: 3,
		fault: func(ctx context.Context, s *state) error {
			if err := s.waitAcked(ctx); err != nil {
				return err
			}
			if err := standins("stop", "gremlin"); err != nil {
				return err
			}
			s.h.Logf("Gremlin Server down for %v", s.cfg.outage)
			select {
			case <-time.After(s.cfg.outage):
			case <-ctx.Done():
				return ctx.Err()
			}
			return standins("start", "gremlin")
		}},
	{name: "aws-restart", what: "kinesalite and dynalite restarted mid-stream", workers: 3,
		fault: func(ctx context.Context, s *state) error {
			if err := s.waitAcked(ctx); err != nil {
				return err
			}
			if err := standins("stop", "kinesis", "dynamodb"); err != nil {
				return err
			}
			return standins("start", "kinesis", "dynamodb")
		}},
	{name: "split", what: "a shard split mid-stream", workers: 3,
		fault: func(ctx context.Context, s *state) error {
			if err := s.waitAcked(ctx); err != nil {
				return err
			}
			return s.splitShard(ctx)
		}},
	{name: "dup-ooo", what: "20% producer duplicates plus out-of-order event times; /metrics scraped live", short: true, workers: 3,
		gen:   func(c gen.Config) gen.Config { c.DuplicateShare, c.OutOfOrder = 0.20, 0.25; return c },
		fault: func(ctx context.Context, s *state) error { return nil },
		live:  checkMetrics},
	{name: "malformed", what: "every malformed kind mixed in: dead-letter count exact", workers: 3,
		gen:   func(c gen.Config) gen.Config { c.MalformedShare = 0.05; return c },
		fault: func(ctx context.Context, s *state) error { return nil }},
	{name: "restart-disk", what: "a worker restarted on the same data directory resumes from Pebble", workers: 1,
		fault: func(ctx context.Context, s *state) error {
			if err := s.waitAcked(ctx); err != nil {
				return err
			}
			if err := s.procs[0].Stop(60 * time.Second); err != nil {
				return fmt.Errorf("graceful stop: %w", err)
			}
			p, err := s.h.Restart(ctx, s.procs[0])
			if err != nil {
				return err
			}
			s.procs = append(s.procs, p)
			return nil
		},
		check: func(ctx context.Context, s *state) error {
			last := s.procs[len(s.procs)-1]
			if !strings.Contains(last.Log(), `msg="resumed from local state"`) {
				return errors.New("the restarted worker did not resume from its Pebble state")
			}
			// Resuming means the records it had already made durable were
			// redelivered by KCL and skipped, not processed again.
			if st := last.Stats(); st["skipped"] == 0 {
				return fmt.Errorf("the restarted worker skipped no redelivered record (stats %v)", st)
			}
			return nil
		}},
}

// state is what a scenario's fault and check functions work with.
type state struct {
	cfg       config
	sc        scenario
	h         *harness.Harness
	procs     []*harness.Proc
	replayJob *replayJob
	want      *refmodel.Graph
	records   int // user records put on the stream
	dlq       int
}

type replayJob struct{ j *harness.ReplayJob }

func (s *state) spec(id string) harness.WorkerSpec {
	spec := harness.WorkerSpec{ID: id, Sink: "gremlin:" + s.h.Env.GremlinEndpoint, LeaseStealing: s.sc.steal,
		FailoverTime: 4 * time.Second, ShardSync: 500 * time.Millisecond}
	if s.cfg.breakMode != "" {
		spec.Env = append(spec.Env, "LINEAGEFLOW_UNSAFE_BREAK="+s.cfg.breakMode)
	}
	return spec
}

// waitAcked waits until the graph holds some of the stream's edges, so a
// fault hits a pipeline in full flow (windows open, batches in flight).
func (s *state) waitAcked(ctx context.Context) error {
	return s.h.WaitFor(ctx, 90*time.Second, "first edges in the graph", func() (bool, error) {
		n, err := countEdges(s.h.Env.GremlinEndpoint)
		return err == nil && n > 0, nil
	})
}

// waitCaughtUp waits until the replay is done and the workers' stats
// lines say they processed every record put (each record once: no worker
// has failed over yet).
func (s *state) waitCaughtUp(ctx context.Context) error {
	if _, err := s.replayJob.j.Wait(); err != nil {
		return err
	}
	return s.h.WaitFor(ctx, 2*time.Minute, "workers processed every record", func() (bool, error) {
		var n int64
		for _, p := range s.procs {
			n += p.Stats()["records"]
		}
		return n >= int64(s.records), nil
	})
}

// busiest returns the live worker that holds the most leases (a worker
// holding none would make a fault that tests nothing).
func (s *state) busiest(ctx context.Context) (*harness.Proc, error) {
	ls, err := s.h.Leases(ctx)
	if err != nil {
		return nil, err
	}
	owners := harness.Owners(ls, time.Now())
	var best *harness.Proc
	for _, p := range s.procs {
		if done, _ := p.Exited(); done {
			continue
		}
		if best == nil || len(owners[p.Spec.ID]) > len(owners[best.Spec.ID]) {
			best = p
		}
	}
	if best == nil || len(owners[best.Spec.ID]) == 0 {
		return nil, fmt.Errorf("no live worker holds a lease (owners %v)", owners)
	}
	return best, nil
}

// waitOwners waits until exactly n workers hold all the shards' leases.
func (s *state) waitOwners(ctx context.Context, n int) error {
	return s.h.WaitFor(ctx, 60*time.Second, fmt.Sprintf("%d workers hold every lease", n), func() (bool, error) {
		ls, err := s.h.Leases(ctx)
		if err != nil {
			return false, nil
		}
		owners := harness.Owners(ls, time.Now())
		held := 0
		for _, shards := range owners {
			held += len(shards)
		}
		open := 0
		for _, l := range ls {
			if l.Checkpoint != "SHARD_END" {
				open++
			}
		}
		return len(owners) == n && held >= open, nil
	})
}

// splitShard splits the stream's first open shard at the middle of its
// hash key range, and waits until the stream is ACTIVE again.
func (s *state) splitShard(ctx context.Context) error {
	kc := s.h.Kinesis()
	out, err := kc.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(s.h.Stream)})
	if err != nil {
		return err
	}
	for _, sh := range out.Shards {
		if sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil {
			continue // closed already
		}
		lo, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.StartingHashKey), 10)
		hi, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.EndingHashKey), 10)
		mid := new(big.Int).Rsh(new(big.Int).Add(lo, hi), 1)
		s.h.Logf("split %s at %s", aws.ToString(sh.ShardId), mid)
		if _, err := kc.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(s.h.Stream),
			ShardToSplit: sh.ShardId, NewStartingHashKey: aws.String(mid.String())}); err != nil {
			return fmt.Errorf("split %s: %w", aws.ToString(sh.ShardId), err)
		}
		return s.h.WaitFor(ctx, time.Minute, "stream ACTIVE after the split", func() (bool, error) {
			d, err := kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(s.h.Stream)})
			if err != nil {
				return false, nil
			}
			return d.StreamDescriptionSummary.StreamStatus == kinesistypes.StreamStatusActive, nil
		})
	}
	return errors.New("no open shard to split")
}

func run(ctx context.Context, cfg config) int {
	root := testenv.RepoRoot()
	env, ok := harness.StandinsEnv()
	if !ok || env.GremlinEndpoint == "" {
		fmt.Fprintln(os.Stderr, "e2e: stand-ins not found: run it through scripts/e2e.sh (make e2e)")
		return 2
	}
	work := cfg.dir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "lineageflow-e2e-"); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 2
		}
	}
	bin, err := harness.Build(ctx, root, work)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 2
	}
	want := map[string]bool{}
	for _, n := range strings.Split(cfg.only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	var results []string
	failed := 0
	start := time.Now()
	for _, sc := range scenarios {
		if len(want) > 0 && !want[sc.name] || len(want) == 0 && cfg.short && !sc.short {
			continue
		}
		line, pass := runScenario(ctx, cfg, env, bin, filepath.Join(work, sc.name), sc)
		fmt.Println(line)
		results = append(results, line)
		if !pass {
			failed++
		}
		if ctx.Err() != nil {
			break
		}
	}
	res := "PASS"
	if failed > 0 || len(results) == 0 {
		res = "FAIL"
	}
	fmt.Printf("e2e: scenarios=%d passed=%d failed=%d duration_s=%.0f result=%s\n",
		len(results), len(results)-failed, failed, time.Since(start).Seconds(), res)
	if res == "PASS" && cfg.dir == "" {
		os.RemoveAll(work)
	} else {
		fmt.Fprintf(os.Stderr, "e2e: logs kept in %s\n", work)
	}
	if res != "PASS" {
		return 1
	}
	return 0
}

func runScenario(ctx context.Context, cfg config, env harness.Env, bin, dir string, sc scenario) (line string, pass bool) {
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	logf, _ := os.Create(filepath.Join(dir + ".log"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Sprintf("scenario=%s result=FAIL error=%q", sc.name, err), false
	}
	var log io.Writer = io.Discard
	if logf != nil {
		defer logf.Close()
		log = logf
	}
	h, err := harness.New(harness.Options{Env: env, Bin: bin, Dir: dir, Log: log, Name: "e2e-" + sc.name})
	if err != nil {
		return fmt.Sprintf("scenario=%s result=FAIL error=%q", sc.name, err), false
	}
	defer h.Close()
	s := &state{cfg: cfg, sc: sc, h: h}
	r := outcome{name: sc.name}
	fail := func(err error) (string, bool) {
		r.err = err
		h.DumpLogs(log, 4000)
		return r.line(), false
	}

	gc := gen.Config{Seed: int64(len(sc.name)*7919 + 1), Events: cfg.events}.WithDefaults()
	if sc.gen != nil {
		gc = sc.gen(gc)
	}
	recs := gen.Generate(gc)
	toReplay, data := harness.Generated(recs)
	s.want = refmodel.Build(data, refmodel.Options{Policy: "strict"})
	anyG := refmodel.Build(data, refmodel.Options{Policy: "any"})
	r.events, r.expEdges = len(recs), len(s.want.Edges)
	s.records = len(toReplay)

	if err := graphread.Drop(env.GremlinEndpoint); err != nil {
		return fail(err)
	}
	if err := h.CreateStream(ctx, 4); err != nil {
		return fail(err)
	}
	for i := 0; i < sc.workers; i++ {
		p, err := h.StartWorker(ctx, s.spec(fmt.Sprintf("w%d", i+1)))
		if err != nil {
			return fail(err)
		}
		s.procs = append(s.procs, p)
	}
	// Spread the stream over ~20 s so faults land mid-stream.
	rate := float64(len(toReplay)) / 20
	s.replayJob = &replayJob{h.ReplayAsync(ctx, toReplay, rate)}
	if err := sc.fault(ctx, s); err != nil {
		return fail(fmt.Errorf("fault: %w", err))
	}
	if _, err := s.replayJob.j.Wait(); err != nil {
		return fail(fmt.Errorf("replay: %w", err))
	}
	// recover_s: from the end of the fault, or of the stream if later, to
	// the graph being exactly the reference.
	faultOver := time.Now()
	expected := verify.Expected{Vertices: s.want.Vertices, Edges: s.want.Edges}
	var rep *verify.Report
	var snap *graphread.Snapshot
	werr := h.WaitFor(ctx, 3*time.Minute, "graph equals the reference", func() (bool, error) {
		var err error
		snap, err = graphread.Dump(env.GremlinEndpoint, time.Minute)
		if err != nil {
			return false, nil
		}
		rep = verify.Compare(expected, snap)
		return rep.OK(), nil
	})
	r.recover = time.Since(faultOver).Seconds()
	var liveErr error
	if werr == nil && sc.live != nil {
		liveErr = sc.live(ctx, s)
	}
	for _, p := range s.procs {
		if done, _ := p.Exited(); !done {
			_ = p.Stop(60 * time.Second)
		}
	}
	// Whatever the wait said, count what the graph holds now that every
	// worker stopped (a late ghost write would show here).
	if snap2, err := graphread.Dump(env.GremlinEndpoint, time.Minute); err == nil {
		snap = snap2
		rep = verify.Compare(expected, snap)
	}
	if rep == nil {
		return fail(fmt.Errorf("graph never read: %w", werr))
	}
	r.fill(rep, snap, anyG, s.want)
	s.dlq, err = countDeadLetters(h.Procs())
	if err != nil {
		return fail(err)
	}
	r.dlq = s.dlq
	if werr != nil {
		return fail(werr)
	}
	if !rep.OK() {
		fmt.Fprint(log, rep.String())
		return fail(errors.New("graph differs from the reference"))
	}
	// Every refused record is in exactly one dead letter (by shard and
	// sequence number), however often it was processed.
	if s.dlq != s.want.Invalid {
		return fail(fmt.Errorf("dead letters %d, want %d", s.dlq, s.want.Invalid))
	}
	if liveErr != nil {
		return fail(liveErr)
	}
	if sc.check != nil {
		if err := sc.check(ctx, s); err != nil {
			return fail(err)
		}
	}
	return r.line(), true
}

// outcome is one scenario's result line.
type outcome struct {
	name                                            string
	events, expEdges, actEdges, missing, extra, dup int
	ghost, dlq, mismatched                          int
	recover                                         float64
	err                                             error
}

func (o *outcome) fill(rep *verify.Report, snap *graphread.Snapshot, anyG, want *refmodel.Graph) {
	o.actEdges = len(snap.Edges)
	o.missing = rep.MissingEdges.Count + rep.MissingVertices.Count
	o.extra = rep.ExtraEdges.Count + rep.ExtraVertices.Count
	o.dup = rep.DuplicateEdges.Count
	o.mismatched = rep.MismatchedEdges.Count + rep.MismatchedVertices.Count
	// Ghost lineage: edges in the graph that only uncommitted (FAIL, ABORT,
	// never finished) runs give.
	for _, e := range snap.Edges {
		if _, ok := want.Edges[e.ID]; ok {
			continue
		}
		if _, ok := anyG.Edges[e.ID]; ok {
			o.ghost++
		}
	}
}

func (o *outcome) line() string {
	res := "PASS"
	if o.err != nil {
		res = "FAIL"
	}
	l := fmt.Sprintf("scenario=%s events=%d expected_edges=%d actual_edges=%d missing=%d extra=%d duplicate=%d ghost=%d dlq=%d mismatched=%d recover_s=%.1f result=%s",
		o.name, o.events, o.expEdges, o.actEdges, o.missing, o.extra, o.dup, o.ghost, o.dlq, o.mismatched, o.recover, res)
	if o.err != nil {
		l += fmt.Sprintf(" error=%q", o.err.Error())
	}
	return l
}

// countDeadLetters counts the distinct dead letters (by shard, sequence
// and sub-sequence number) in every worker's data dir: a record that two
// workers refused (before and after a failover) counts once.
func countDeadLetters(procs []*harness.Proc) (int, error) {
	seen := map[string]bool{}
	dirs := map[string]bool{}
	for _, p := range procs {
		dirs[p.DataDir] = true
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		db, err := checkpoint.Open(d, checkpoint.Options{Merger: window.Merger})
		if err != nil {
			return 0, fmt.Errorf("dead letters of %s: %w", d, err)
		}
		err = checkpoint.ListDeadLetters(db, func(dl checkpoint.DeadLetter) error {
			seen[fmt.Sprintf("%s/%s/%d", dl.Shard, dl.Seq, dl.Sub)] = true
			return nil
		})
		_ = db.Close()
		if err != nil {
			return 0, err
		}
	}
	return len(seen), nil
}

// standins runs scripts/standins-<verb>.sh for the named stand-ins, with
// this process's STANDIN_* environment (scripts/e2e.sh sets it).
func standins(verb string, names ...string) error {
	cmd := exec.Command("bash", append([]string{filepath.Join(testenv.RepoRoot(), "scripts", "standins-"+verb+".sh")}, names...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("standins-%s %v: %w\n%s", verb, names, err, out)
	}
	return nil
}

func countEdges(endpoint string) (int64, error) {
	g, closeFn, err := graphread.Connect(endpoint)
	if err != nil {
		return 0, err
	}
	defer closeFn()
	rs, err := g.E().Count().ToList()
	if err != nil || len(rs) == 0 {
		return 0, err
	}
	return rs[0].GetInt64()
}
