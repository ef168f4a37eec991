// Command e2e is the fault matrix that proves exactly-once: real worker
// processes (`lineageflow run`) on the local stand-ins, a generated stream,
// one fault per scenario, and the live graph compared with the reference
// model. Each scenario prints one line:
//
//	scenario=<name> events=N expected_edges=N actual_edges=N missing=N extra=N duplicate=N ghost=N dlq=N mismatched=N recover_s=X result=PASS|FAIL
//
// (a scenario may add its own key=value fields before result=, e.g.
// join-redis its duplicate counts; it needs the Redis stand-in, which
// scripts/e2e.sh starts when redis-server is installed)
// and the run ends with a summary line. Run it through scripts/e2e.sh
// (make e2e), which starts the stand-ins if they are not running and then
// stops the ones it started.
//
// main.go holds the flags and the scenario loop, scenarios.go the matrix
// (one row per fault), state.go what a fault and its checks work with,
// runscenario.go one scenario from stream to verdict, outcome.go its result
// line and the dead-letter count, metrics.go the live /metrics check.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
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
