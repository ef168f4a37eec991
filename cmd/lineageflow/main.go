// Command lineageflow turns OpenLineage events on Kinesis into a live
// lineage graph in Neptune, exactly once. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand. Each lives in its own file and registers
// itself in init.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "lineageflow: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(os.Stderr, `
Every flag can also be set by an environment variable (LINEAGEFLOW_ + the
flag name in upper case, '-' as '_'); a flag on the command line wins.
Run 'lineageflow <command> --help' for a command's flags.
`)
}
