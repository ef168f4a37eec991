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

	"github.com/lineageflow/lineageflow/internal/cli"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/graphread"
	"github.com/lineageflow/lineageflow/verify"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

func runVerify(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	endpoint := fs.String("gremlin-endpoint", "ws://127.0.0.1:8182/gremlin", "Gremlin endpoint of the graph to check (ws:// or wss://)")
	policy := fs.String("policy", "strict", "commit policy the graph was built with: strict (edges only from COMPLETE runs) or any")
	runs := fs.String("runs", "failed", "run history the graph was built with (lineageflow run -runs): failed, all or none")
	columns := fs.Bool("column-lineage", true, "whether the graph was built with column lineage (lineageflow run -column-lineage)")
	genSeed := fs.Int64("gen-seed", 0, "instead of NDJSON files, regenerate the input with this generator seed")
	genEvents := fs.Int("gen-events", 0, "number of generated events (with -gen-seed)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	summary := fs.Bool("summary", false, "also print a short summary of the live graph (counts by label, a sample lineage path)")
	wait := fs.Duration("wait", 0, "poll the graph until it matches or this much time has passed (0: check once)")
	timeout := fs.Duration("read-timeout", 2*time.Minute, "abandon one read of the graph after this long")
	fs.Usage = cli.Usage(fs, "lineageflow verify [flags] [input.ndjson ...]",
		"Computes the graph the input must give with the independent reference model (not the\n"+
			"processor's code path), reads the live graph over Gremlin, and reports missing, extra\n"+
			"(ghost), duplicate and property-mismatched vertices and edges. Exit status 1 on any\n"+
			"difference, 2 on bad usage.")
	if err := cli.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{2, err}
	}
	if *policy != "strict" && *policy != "any" {
		return &exitError{2, fmt.Errorf("-policy %q: want strict or any", *policy)}
	}
	if *runs != "all" && *runs != "failed" && *runs != "none" {
		return &exitError{2, fmt.Errorf("-runs %q: want failed, all or none", *runs)}
	}
	if (fs.NArg() == 0) == (*genSeed == 0 && *genEvents == 0) {
		return &exitError{2, errors.New("give NDJSON input files, or -gen-seed and -gen-events, not both")}
	}
	model := refmodel.New(refmodel.Options{Policy: *policy, Runs: *runs, NoColumns: !*columns})
	if fs.NArg() > 0 {
		for _, path := range fs.Args() {
			if err := addNDJSON(model, path); err != nil {
				return err
			}
		}
	} else {
		cfg := gen.Config{Seed: *genSeed, Events: *genEvents}.WithDefaults()
		if err := gen.Stream(cfg, func(r gen.Record) error { model.Add(r.Data); return nil }); err != nil {
			return err
		}
	}
	g := model.Graph()
	want := verify.Expected{Vertices: g.Vertices, Edges: g.Edges}

	deadline := time.Now().Add(*wait)
	var rep *verify.Report
	var lastSnap *graphread.Snapshot
	for {
		snap, err := graphread.Dump(*endpoint, *timeout)
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
	if *asJSON {
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
		if *summary {
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
