package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/cli"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/verify"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// verifyOptions are verify's flags.
type verifyOptions struct {
	endpoint, policy, runs *string
	conn                   *gremlinConnOptions
	columns                *bool
	genSeed                *int64
	genEvents              *int
	asJSON, summary        *bool
	wait, timeout          *time.Duration
}

func verifyFlags() (*flag.FlagSet, *verifyOptions) {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	o := &verifyOptions{
		endpoint:  fs.String("gremlin-endpoint", "ws://127.0.0.1:8182/gremlin", "Gremlin endpoint of the graph to check (ws:// or wss://)"),
		conn:      gremlinConnFlags(fs, nil),
		policy:    fs.String("policy", "strict", "commit policy the graph was built with: strict (edges only from COMPLETE runs) or any"),
		runs:      fs.String("runs", "all", "run history the graph was built with (lineageflow run -runs): all, failed or none"),
		columns:   fs.Bool("column-lineage", true, "whether the graph was built with column lineage (lineageflow run -column-lineage)"),
		genSeed:   fs.Int64("gen-seed", 0, "instead of NDJSON files, regenerate the input with this generator seed"),
		genEvents: fs.Int("gen-events", 0, "number of generated events (with -gen-seed)"),
		asJSON:    fs.Bool("json", false, "print the report as JSON"),
		summary:   fs.Bool("summary", false, "also print a short summary of the live graph (counts by label, a sample lineage path)"),
		wait:      fs.Duration("wait", 0, "poll the graph until it matches or this much time has passed (0: check once)"),
		timeout:   fs.Duration("read-timeout", 2*time.Minute, "abandon one read of the graph after this long"),
	}
	fs.Usage = cli.Usage(fs, "lineageflow verify [flags] [input.ndjson ...]",
		"Computes the graph the input must give with the independent reference model (not the\n"+
			"processor's code path), reads the live graph over Gremlin, and reports missing, extra\n"+
			"(ghost), duplicate and property-mismatched vertices and edges. Exit status 1 on any\n"+
			"difference, 2 on bad usage.")
	return fs, o
}

func runVerify(ctx context.Context, args []string) error {
	fs, o := verifyFlags()
	if done, err := parseFlags(fs, args); done || err != nil {
		return err
	}
	if *o.policy != "strict" && *o.policy != "any" {
		return &exitError{2, fmt.Errorf("-policy %q: want strict or any", *o.policy)}
	}
	if *o.runs != "all" && *o.runs != "failed" && *o.runs != "none" {
		return &exitError{2, fmt.Errorf("-runs %q: want failed, all or none", *o.runs)}
	}
	if (fs.NArg() == 0) == (*o.genSeed == 0 && *o.genEvents == 0) {
		return &exitError{2, errors.New("give NDJSON input files, or -gen-seed and -gen-events, not both")}
	}
	d, err := o.conn.dialer(*o.endpoint, nil)
	if err != nil {
		return err
	}
	model := refmodel.New(refmodel.Options{Policy: *o.policy, Runs: *o.runs, NoColumns: !*o.columns})
	if fs.NArg() > 0 {
		for _, path := range fs.Args() {
			if err := addNDJSON(model, path); err != nil {
				return err
			}
		}
	} else {
		cfg := gen.Config{Seed: *o.genSeed, Events: *o.genEvents}.WithDefaults()
		if err := gen.Stream(cfg, func(r gen.Record) error { model.Add(r.Data); return nil }); err != nil {
			return err
		}
	}
	g := model.Graph()
	want := verify.Expected{Vertices: g.Vertices, Edges: g.Edges}

	deadline := time.Now().Add(*o.wait)
	var rep *verify.Report
	var lastSnap *graph.Snapshot
	for {
		snap, err := dumpWithin(ctx, d, *o.timeout)
		if err != nil {
			return err
		}
		rep = verify.Compare(want, snap)
		lastSnap = snap
		if rep.OK() || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if *o.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			OK bool `json:"ok"`
			*verify.Report
		}{rep.OK(), rep}); err != nil {
			return err
		}
	} else {
		fmt.Printf("input: events=%d invalid=%d duplicates=%d\n", g.Events, g.Invalid, g.Duplicates)
		fmt.Print(rep.String())
		if *o.summary {
			fmt.Print(verify.Summary(lastSnap))
		}
	}
	if !rep.OK() {
		return &exitError{1, errors.New("the graph differs from the expected one")}
	}
	return nil
}

func addNDJSON(m *refmodel.Model, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 1<<20), 4<<20)
	for s.Scan() {
		line := s.Bytes()
		if len(line) == 0 {
			continue
		}
		m.Add(append([]byte(nil), line...))
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// dumpWithin reads the whole graph of d, abandoning the read after timeout.
func dumpWithin(ctx context.Context, d *graph.Dialer, timeout time.Duration) (*graph.Snapshot, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := d.Dump(rctx)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		return nil, fmt.Errorf("no answer from %s within -read-timeout %v: %w", d.Endpoint(), timeout, err)
	}
	return s, err
}
