package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func pipelines(n int) string {
	if n <= 0 {
		return "8 (the generator's default)"
	}
	return strconv.Itoa(n)
}

func appendResults(c config, s summary, ts []tputResult, ls []latResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## End to end (scripts/bench-e2e.sh), %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "Machine: %d shared cores (%s/%s), %s; kinesalite, dynalite and Gremlin Server (TinkerGraph) stand-ins on the same cores,\n",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "started by the script in `.standins/bench` (ports 54567/54568/58182). %d rounds, all figures of a round in the same run;\n", len(ts))
	fmt.Fprintf(&b, "medians with (min-max) over the rounds. One worker, default `lineageflow run` flags (idle-between-reads 200ms,\n")
	fmt.Fprintf(&b, "shard-sync 1s, lateness 500ms, 10 s windows), plus `%s`.\n\n", strings.Join(c.runArgs(), " "))
	fmt.Fprintf(&b, "Command:\n\n```\n%s\n```\n\n", c.command)
	fmt.Fprintf(&b, "| Figure | Result | Target |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| (1) throughput: one worker (`-sink %s`) from process start until its stats count every record, / kinesalite's raw GetRecords rate (plain reader, one goroutine per shard, the same GetRecords limit (%d) as the worker, KPL de-aggregated), %d shards, %d generated events of %s pipelines (one partition key each) pre-loaded (%.0f%% KPL-aggregated); the hottest shard held %s MB (mean %s) | **%s** (raw %s rec/s = %s MB/s per shard; pipeline %s rec/s = %s MB/s per shard); from the first record processed: %s; once the worker held every shard's lease: %s; worker CPU %s of one core | >= 0.9: %s |\n",
		c.tputSink, c.maxRecords, c.shards, c.tputEvents, pipelines(c.tputPipes), 100*c.aggregate, s.hot, s.mean, s.ratio, s.raw, s.rawMB, s.pipe, s.pipeMB, s.steady, s.leased, s.cpu, okWord(s.ratioOK))
	fmt.Fprintf(&b, "| (2) latency: PutRecords ack of the record after which the reference model holds the edge state -> the graph shows it; steady %d rec/s for %d s in 100 ms PutRecords batches, graph polled every %v (`g.E().project(id, lastSeen)`) | every edge version (new edges and lastSeen updates): p50 %s s, p90 %s s, **p99 %s s**, max %s s, n=%s per round; new edge ids only: p50 %s s, p90 %s s, p99 %s s, max %s s, n=%s, missing %d | p99 <= 11.5 s: %s |\n",
		c.latRate, c.latSeconds, c.poll, s.p50, s.p90, s.p99, s.pmax, s.n, s.np50, s.np90, s.np99, s.npmax, s.nn, s.missing, okWord(s.latOK))
	fmt.Fprintf(&b, "| (3) write reduction: 1 - graph writes / input records, graph writes = vertex and edge records in acknowledged Gremlin requests (`lineage_sink_records_total`: after the vertex cache and the cross-shard merge), default generated workload (`gen` defaults: 8 pipelines, 20%% duplicates, 10%% failed runs, 1%% malformed), the latency run | **%s** at %s rec/s; per decoded event (duplicates and malformed records not counted as input): %s; the processor's emitted upserts (edges_emitted + vertices_emitted) per input record: %s; at the pre-load burst (%s rec/s, processor emissions): %s | >= 90%%: %s |\n\n",
		s.cacheSteady, s.rateSteady, s.cacheEvents, s.redSteady, s.rateBurst, s.redBurst, okWord(s.redOK))
	if s.lineage != "" {
		// Counted apart (issue 21): lineage's writes, and run history's.
		fmt.Fprintf(&b, "(3b) the latency run counted apart: lineage alone (graph writes but the Run vertices, `lineage_sink_run_records_total`) **%s** of input records never a write (target >= 85%%); run history **%s** writes per recorded run (target <= 1.5): %s\n\n",
			s.lineage, s.runPerRun, okWord(s.lineageOK))
	}
	fmt.Fprintf(&b, "Per round:\n\n```\n")
	for i := range ts {
		t, l := ts[i], ls[i]
		fmt.Fprintf(&b, "round %d: raw %.0f rec/s (%.1f s), pipeline %.0f rec/s (%.1f s, first record at %.1f s, worker CPU %.0f%%), ratio %.2f (steady %.2f); %d records in %d Kinesis records, %.1f MB\n",
			i+1, t.rawRPS, t.rawSeconds, t.pipeRPS, t.pipeSeconds, t.firstRecord, 100*t.workerCPU/t.pipeSeconds, t.pipeRPS/t.rawRPS, t.steadyRPS/t.rawRPS, t.userRecords, t.kinesisRecords, float64(t.rawBytes)/1e6)
		fmt.Fprintf(&b, "         latency, versions n=%d/%d p50 %.2f p90 %.2f p99 %.2f max %.2f s; new edges n=%d/%d p50 %.2f p99 %.2f max %.2f s; at %.0f rec/s\n",
			len(l.all), l.versions, pct(l.all, 50), pct(l.all, 90), pct(l.all, 99), pct(l.all, 100),
			len(l.lat), l.expected, pct(l.lat, 50), pct(l.lat, 99), pct(l.lat, 100), l.achievedRate)
		fmt.Fprintf(&b, "         steady: %s\n         burst:  %s\n", l.red, t.red)
	}
	fmt.Fprintf(&b, "```\n")
	f, err := os.OpenFile(c.results, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(b.String())
	return err
}
