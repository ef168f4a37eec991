package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/cli"
	"github.com/lineageflow/lineageflow/processor"
)

func deadLetters(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("deadletters", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "the worker's data directory (the worker must be stopped)")
	raw := fs.Bool("raw", false, "also print the first 200 bytes of each record")
	parked := fs.Bool("parked", false, "list the parked sink batches (refused permanently by the graph) instead")
	fs.Usage = cli.Usage(fs, "lineageflow deadletters -data-dir DIR", "List refused records: shard, sequence number, reason, field, message.")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *dataDir == "" {
		return fmt.Errorf("-data-dir is required")
	}
	if _, err := os.Stat(*dataDir); err != nil {
		return fmt.Errorf("-data-dir: %w", err)
	}
	db, err := processor.OpenDB(*dataDir, checkpoint.Options{})
	if err != nil {
		return fmt.Errorf("%w (is a worker still running on it?)", err)
	}
	defer func() { _ = db.Close() }()
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	if *parked {
		return listParked(db, tw)
	}
	fmt.Fprintln(tw, "SHARD\tSEQ\tSUB\tARRIVAL\tREASON\tFIELD\tMESSAGE")
	n := 0
	err = checkpoint.ListDeadLetters(db, func(d checkpoint.DeadLetter) error {
		n++
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", d.Shard, d.Seq, d.Sub, d.Arrival.Format("2006-01-02T15:04:05.000Z"), d.Reason, d.Field, d.Message)
		if *raw {
			r := d.Raw
			if len(r) > 200 {
				r = r[:200]
			}
			fmt.Fprintf(tw, "\t%q\n", r)
		}
		return nil
	})
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d dead letter(s)\n", n)
	return nil
}

// listParked prints the parked sink batches.
func listParked(db *pebble.DB, tw *tabwriter.Writer) error {
	fmt.Fprintln(tw, "SHARD\tOUTBOX_SEQ\tAT\tATTEMPTS\tVERTICES\tEDGES\tREASON")
	n := 0
	err := checkpoint.ListParked(db, func(p checkpoint.Parked) error {
		n++
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%s\n", p.Shard, p.OutboxSeq, p.At.Format("2006-01-02T15:04:05.000Z"), p.Attempts, p.Vertices, p.Edges, p.Reason)
		return nil
	})
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d parked batch(es)\n", n)
	return nil
}
