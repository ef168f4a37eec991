package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/lineageflow/lineageflow/internal/cli"
	"github.com/lineageflow/lineageflow/internal/keyspace"
	"github.com/lineageflow/lineageflow/verify"
)

// DefaultDivergenceThreshold is 0.001%, the design's rollback threshold.
const DefaultDivergenceThreshold = 0.00001

// diffOptions are diff's flags.
type diffOptions struct {
	prodEP, canaryEP, promFile *string
	conn                       *gremlinConnOptions
	share, threshold           *float64
	asJSON                     *bool
	timeout                    *time.Duration
}

func diffFlags() (*flag.FlagSet, *diffOptions) {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	o := &diffOptions{
		prodEP:    fs.String("production-endpoint", "", "Gremlin endpoint of graph A, production (ws:// or wss://; required)"),
		canaryEP:  fs.String("canary-endpoint", "", "Gremlin endpoint of graph B, the canary (required)"),
		conn:      gremlinConnFlags(fs, nil),
		share:     fs.Float64("key-share", 0, "compare only the mirrored key space: the jobs a mirror at this share (0..1] sends to the canary, their edges, runs and datasets (0: compare whole graphs)"),
		threshold: fs.Float64("threshold", DefaultDivergenceThreshold, "exit 1 when the divergence ratio (missing+extra+different ids / ids compared) is above this"),
		asJSON:    fs.Bool("json", false, "print the report as JSON"),
		timeout:   fs.Duration("read-timeout", 2*time.Minute, "abandon one read of a graph after this long"),
		promFile:  fs.String("prom-file", "", "also write the result as Prometheus metrics to this file (replaced atomically; for the node exporter's textfile collector), which the LineageCanaryDiverging alert watches"),
	}
	fs.Usage = cli.Usage(fs, "lineageflow diff -production-endpoint ws://... -canary-endpoint ws://... [flags]",
		"Reads both graphs over Gremlin and compares them by vertex and edge id: missing (in production,\n"+
			"not in the canary), extra (in the canary only) and different (properties, label, endpoints),\n"+
			"and the divergence ratio. Both graphs are reached with the same -neptune-iam, -region and\n"+
			"-gremlin-ca-file. Exit status 1 above -threshold, 2 on bad usage.")
	return fs, o
}

func runDiff(ctx context.Context, args []string) error {
	fs, o := diffFlags()
	if done, err := parseFlags(fs, args); done || err != nil {
		return err
	}
	if *o.prodEP == "" || *o.canaryEP == "" {
		return &exitError{2, errors.New("give -production-endpoint and -canary-endpoint")}
	}
	if *o.share != 0 {
		if err := keyspace.ValidateShare("-key-share", *o.share); err != nil {
			return &exitError{2, err}
		}
	}
	if math.IsNaN(*o.threshold) || *o.threshold < 0 || *o.threshold >= 1 {
		return &exitError{2, fmt.Errorf("-threshold %v: give a ratio in [0, 1), e.g. 0.00001 for 0.001%%", *o.threshold)}
	}
	prod, err := o.conn.dialer(*o.prodEP, nil)
	if err != nil {
		return err
	}
	canary, err := o.conn.dialer(*o.canaryEP, nil)
	if err != nil {
		return err
	}
	a, err := dumpWithin(ctx, prod, *o.timeout)
	if err != nil {
		return fmt.Errorf("diff: production: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := dumpWithin(ctx, canary, *o.timeout)
	if err != nil {
		return fmt.Errorf("diff: canary: %w", err)
	}
	rep := verify.Diff(a, b, verify.DiffOptions{KeyShare: *o.share})
	if *o.promFile != "" {
		if err := writePromFile(*o.promFile, rep); err != nil {
			return err
		}
	}
	above := rep.Divergence > *o.threshold
	if *o.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			*verify.DiffReport
			Threshold float64 `json:"threshold"`
			Above     bool    `json:"above_threshold"`
		}{rep, *o.threshold, above}); err != nil {
			return err
		}
	} else {
		fmt.Print(rep.String())
		fmt.Printf("threshold=%g above=%v\n", *o.threshold, above)
	}
	if above {
		return &exitError{1, fmt.Errorf("divergence %.6g above the threshold %g", rep.Divergence, *o.threshold)}
	}
	return nil
}

// writePromFile writes rep to path through a temporary file and a rename,
// so a scraper never reads half a file.
func writePromFile(path string, rep *verify.DiffReport) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("-prom-file: %w", err)
	}
	if err := verify.WritePromText(f, rep, time.Now()); err != nil {
		f.Close()
		return fmt.Errorf("-prom-file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("-prom-file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("-prom-file: %w", err)
	}
	return nil
}
