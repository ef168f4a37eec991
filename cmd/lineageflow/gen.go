package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/lineageflow/lineageflow/internal/cli"
	"github.com/lineageflow/lineageflow/internal/gen"
)

// genFlags declares the generator's knobs on fs; gen and replay share them.
func genFlags(fs *flag.FlagSet, prefix string) func() gen.Config {
	seed := fs.Int64(prefix+"seed", 1, "generator seed: the same seed gives the same bytes")
	events := fs.Int(prefix+"events", 1000, "approximate number of records")
	pipelines := fs.Int(prefix+"pipelines", 8, "independent pipelines (root jobs)")
	dup := fs.Float64(prefix+"duplicate-share", 0.20, "share of producer retries (byte-identical resends); negative for none")
	fail := fs.Float64(prefix+"fail-share", 0.1, "share of runs ending FAIL or ABORT; negative for none")
	bad := fs.Float64(prefix+"malformed-share", 0.01, "share of malformed records; negative for none")
	ooo := fs.Float64(prefix+"out-of-order", 0.1, "share of events with an eventTime earlier than the previous one; negative for none")
	return func() gen.Config {
		return gen.Config{Seed: *seed, Events: *events, Pipelines: *pipelines, DuplicateShare: *dup,
			FailShare: *fail, MalformedShare: *bad, OutOfOrder: *ooo}.WithDefaults()
	}
}

func runGen(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	cfg := genFlags(fs, "")
	out := fs.String("out", "-", "output file ('-' for standard output)")
	fs.Usage = cli.Usage(fs, "lineageflow gen [flags]",
		"Writes a realistic, deterministic Spark/Glue OpenLineage workload, one record per line:\n"+
			"multi-hop pipelines, parent/child runs, several events per run, FAIL/ABORT runs,\n"+
			"producer retries, out-of-order event times and malformed records.")
	if done, err := parseFlags(fs, args); done || err != nil {
		return err
	}
	var w io.Writer = os.Stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	n := 0
	err := gen.Stream(cfg(), func(r gen.Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		n++
		bw.Write(r.Data)
		return bw.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "lineageflow gen: %d records\n", n)
	return nil
}
