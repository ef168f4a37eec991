// Command lineageflow turns OpenLineage events on Kinesis into a live
// lineage graph in Neptune, exactly once. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/lineageflow/lineageflow/internal/cli"
)

// command is one subcommand. Each lives in its own file.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

// commands returns the subcommands by name.
func commands() map[string]command {
	m := map[string]command{}
	for _, c := range []command{
		{name: "collect", summary: "serve the OpenLineage HTTP API in front of the Kinesis stream (acknowledged once Kinesis holds the event)", run: runCollect},
		{name: "deadletters", summary: "list the dead letters of a stopped worker's data dir, or of a running worker (-worker-addr)", run: deadLetters},
		{name: "diff", summary: "compare two live graphs (production and canary): missing, extra, different, divergence ratio", run: runDiff},
		{name: "gen", summary: "write a deterministic generated workload as NDJSON", run: runGen},
		{name: "mirror", summary: "put a deterministic share of a stream on a canary stream (its own KCL application)", run: runMirror},
		{name: "rebuild", summary: "put the archived events of a time range back on a stream (rebuild a lost graph)", run: runRebuild},
		{name: "replay", summary: "put NDJSON files or generated events on a Kinesis stream (creates it if missing)", run: runReplay},
		{name: "run", summary: "run a worker: Kinesis (KCL) -> windows (Pebble) -> graph", run: runWorker},
		{name: "serve", summary: "serve the lineage explorer (web UI, Marquez-compatible API) over the graph", run: runServe},
		{name: "verify", summary: "compare the live graph with the graph the input must give", run: runVerify},
	} {
		m[c.name] = c
	}
	return m
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	c, ok := commands()[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "lineageflow: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	// SIGHUP (a closed terminal, a supervisor's reload) stops gracefully
	// like SIGTERM: nothing is reloaded in place.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := c.run(ctx, os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "lineageflow %s: %v\n", c.name, err)
		os.Exit(exitCode(err))
	}
}

// exitError carries a specific exit status (e.g. verify's "graph differs").
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return 1
}

func usage() {
	fmt.Fprint(os.Stderr, `lineageflow: OpenLineage events on Kinesis -> a live lineage graph in Neptune, exactly once.

Usage:
  lineageflow <command> [flags]

Commands:
`)
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", n, cmds[n].summary)
	}
	fmt.Fprint(os.Stderr, `
Every flag can also be set by an environment variable (LINEAGEFLOW_ + the
flag name in upper case, '-' as '_'); a flag on the command line wins.
Run 'lineageflow <command> --help' for a command's flags.
`)
}

// parseFlags parses a subcommand's flags (command line, then environment):
// done is true after -help (the command returns nil), a bad flag is an
// exit-2 error, and each of secrets given on the command line prints its
// warning.
func parseFlags(fs *flag.FlagSet, args []string, secrets ...string) (done bool, err error) {
	if err := cli.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, &exitError{2, err}
	}
	for _, name := range secrets {
		if w := cli.SecretFlagWarning(fs, name); w != "" {
			fmt.Fprintln(os.Stderr, "warning:", w)
		}
	}
	return false, nil
}
