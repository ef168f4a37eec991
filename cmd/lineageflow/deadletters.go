package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/cli"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/processor"
)

func deadLetters(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("deadletters", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "the worker's data directory (the worker must be stopped: Pebble locks it)")
	workerAddr := fs.String("worker-addr", "", "instead of -data-dir: a running worker's -http-addr (host:port, e.g. 127.0.0.1:9090); it lists from its open state (no -raw)")
	raw := fs.Bool("raw", false, "also print the first 200 bytes of each record")
	parked := fs.Bool("parked", false, "list the parked sink items (vertices and edges refused permanently by the graph, each set apart from its batch) instead")
	replay := fs.Bool("replay-parked", false, "write the parked sink items again through -sink (after the graph or the item's cause was fixed); each written one is deleted, each refused again stays and is listed")
	sinkSpec := fs.String("sink", "", "with -replay-parked: gremlin:<ws-url> (the worker's -sink)")
	gopt := gremlinFlags(fs, nil)
	fs.Usage = cli.Usage(fs, "lineageflow deadletters -data-dir DIR | -worker-addr HOST:PORT", "List refused records: shard, sequence number, reason, field, message.")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *workerAddr != "" {
		if *dataDir != "" || *raw {
			return &exitError{2, errors.New("-worker-addr lists a running worker's dead letters: without -data-dir and -raw (the records' bytes stay on its disk)")}
		}
		return listFromWorker(ctx, *workerAddr, *parked)
	}
	if *dataDir == "" {
		return &exitError{2, errors.New("-data-dir (a stopped worker's data directory) or -worker-addr (a running worker's -http-addr) is required")}
	}
	if *replay && !strings.HasPrefix(*sinkSpec, "gremlin:") {
		return fmt.Errorf("-replay-parked needs -sink gremlin:<ws-url>")
	}
	if !*replay && *sinkSpec != "" {
		return fmt.Errorf("-sink is used only with -replay-parked")
	}
	if _, err := os.Stat(*dataDir); err != nil {
		return fmt.Errorf("-data-dir: %w", err)
	}
	db, err := processor.OpenDB(*dataDir, checkpoint.Options{})
	if err != nil {
		return fmt.Errorf("%w (is a worker still running on it? then use -worker-addr with its -http-addr)", err)
	}
	defer func() { _ = db.Close() }()
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	if *replay {
		w, closeSink, err := openSink(ctx, *sinkSpec, gopt, slog.New(slog.NewTextHandler(os.Stderr, nil)))
		if err != nil {
			return err
		}
		defer closeSink()
		return replayParked(ctx, db, w, tw)
	}
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
	fmt.Fprintln(tw, "SHARD\tOUTBOX_SEQ\tAT\tATTEMPTS\tVERTICES\tEDGES\tITEM\tFROM\tREASON")
	n := 0
	err := checkpoint.ListParked(db, func(p checkpoint.Parked) error {
		n++
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", p.Shard, p.OutboxSeq, p.At.Format("2006-01-02T15:04:05.000Z"), p.Attempts, p.Vertices, p.Edges,
			shortItem(p.Item), parkedFrom(p), shortItem(p.Reason))
		return nil
	})
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d parked item(s)\n", n)
	return nil
}

// shortItem cuts an id or a reason for one line of the listing.
func shortItem(s string) string {
	if len(s) > 160 {
		return fmt.Sprintf("%s... (%d bytes)", s[:160], len(s))
	}
	if s == "" {
		return "-"
	}
	return s
}

// replayParked writes every parked item (or whole parked batch) through
// w, one at a time, and deletes each one written; one refused again stays
// parked and is listed with the new error.
func replayParked(ctx context.Context, db *pebble.DB, w processor.Writer, tw *tabwriter.Writer) error {
	var all []checkpoint.Parked
	if err := checkpoint.ListParked(db, func(p checkpoint.Parked) error { all = append(all, p); return nil }); err != nil {
		return err
	}
	fmt.Fprintln(tw, "SHARD\tOUTBOX_SEQ\tITEM\tRESULT")
	written := 0
	for _, p := range all {
		e, err := processor.DecodeOutbox(p.Entry)
		if err != nil {
			return fmt.Errorf("parked %s/%d: %w", p.Shard, p.OutboxSeq, err)
		}
		e.Batch.Key = fmt.Sprintf("replay/%s/%d/%s", p.Shard, p.OutboxSeq, p.Item)
		result := "written"
		if err := w.WriteBatch(ctx, e.Batch); err != nil {
			result = "refused again: " + shortItem(err.Error())
		} else if err := checkpoint.DeleteParked(db, p.Key); err != nil {
			return err
		} else {
			written++
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", p.Shard, p.OutboxSeq, shortItem(p.Item), result)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d of %d parked item(s) written and deleted\n", written, len(all))
	if written < len(all) {
		return fmt.Errorf("%d parked item(s) refused again", len(all)-written)
	}
	return nil
}

// listFromWorker prints the dead letters (or parked batches) a running
// worker serves at /deadletters on its ops server.
func listFromWorker(ctx context.Context, addr string, parked bool) error {
	u := "http://" + addr + "/deadletters"
	if parked {
		u += "?parked=1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return &exitError{2, fmt.Errorf("-worker-addr %q: %w", addr, err)}
	}
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return fmt.Errorf("-worker-addr: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("-worker-addr %s: %s: %s", addr, resp.Status, strings.TrimSpace(string(b)))
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	if parked {
		fmt.Fprintln(tw, "SHARD\tOUTBOX_SEQ\tAT\tATTEMPTS\tVERTICES\tEDGES\tITEM\tFROM\tREASON")
	} else {
		fmt.Fprintln(tw, "SHARD\tSEQ\tSUB\tARRIVAL\tREASON\tFIELD\tMESSAGE")
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var end *listLine
	n := 0
	for sc.Scan() {
		var l listLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("-worker-addr %s: bad line: %w", addr, err)
		}
		switch {
		case l.End:
			end = &l
		case l.DeadLetter != nil:
			d := l.DeadLetter
			n++
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", d.Shard, d.Seq, d.Sub, d.Arrival.Format("2006-01-02T15:04:05.000Z"), d.Reason, d.Field, d.Message)
		case l.Parked != nil:
			p := l.Parked
			n++
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", p.Shard, p.OutboxSeq, p.At.Format("2006-01-02T15:04:05.000Z"), p.Attempts, p.Vertices, p.Edges,
				shortItem(p.Item), parkedFrom(*p), shortItem(p.Reason))
		}
	}
	if err := errors.Join(sc.Err(), tw.Flush()); err != nil {
		return err
	}
	switch {
	case end == nil:
		return fmt.Errorf("-worker-addr %s: the list ended early (%d entries read)", addr, n)
	case end.Error != "":
		return fmt.Errorf("-worker-addr %s: the worker failed listing after %d entries: %s", addr, n, end.Error)
	}
	what := "dead letter(s)"
	if parked {
		what = "parked batch(es)"
	}
	fmt.Fprintf(os.Stderr, "%d %s (from the running worker at %s)\n", n, what, addr)
	return nil
}

// parkedFrom names the report that produced a parked item: the run and
// eventTime of an edge (its lastRunId and lastSeen), or the newest stamped
// property of a vertex (its lastRunId when it has one). "-" for a whole
// parked entry or an item that cannot be read.
func parkedFrom(p checkpoint.Parked) string {
	if p.Item == "" {
		return "-"
	}
	e, err := processor.DecodeOutbox(p.Entry)
	if err != nil {
		return "-"
	}
	at := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
	for _, ed := range e.Batch.Edges {
		if ed.ID == p.Item {
			return fmt.Sprintf("run %s at %s", shortItem(ed.LastRunID), at(ed.LastSeen))
		}
	}
	for _, v := range e.Batch.Vertices {
		if v.ID != p.Item {
			continue
		}
		var newest int64
		for _, x := range v.Props.List() {
			if !x.IsNum || x.Key == lineage.PropLastSeen {
				newest = max(newest, x.Stamp)
			}
		}
		run := "-"
		if x, ok := v.Props.Get(lineage.PropLastRunID); ok {
			run = shortItem(x.Str)
		}
		if newest == 0 {
			return "run " + run
		}
		return fmt.Sprintf("run %s at %s", run, at(newest))
	}
	return "-"
}
