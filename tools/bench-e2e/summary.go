package main

import (
	"fmt"
	"math"
	"sort"
)

// pct returns the p-th percentile (nearest rank) of sorted xs.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p/100*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// spread formats the median and range of xs.
func spread(xs []float64, format string) string {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	if len(s) == 1 {
		return fmt.Sprintf(format, med)
	}
	return fmt.Sprintf(format+" ("+format+"-"+format+")", med, s[0], s[len(s)-1])
}

type summary struct {
	lines                            string
	ratio, steady, leased, raw, pipe string
	rawMB, pipeMB, cpu, hot, mean    string
	p50, p90, p99, pmax, n           string // every edge version
	np50, np90, np99, npmax, nn      string // new edge ids
	redSteady, redBurst, cacheSteady string
	cacheEvents                      string
	lineage, runPerRun               string // lineage alone after the cache, run history per run
	lineageOK                        bool
	rateSteady, rateBurst            string
	ratioOK, latOK, redOK            bool
	ratioMin, p99Max, redSteadyMin   float64
	missing                          int
}

func summarize(c config, ts []tputResult, ls []latResult) summary {
	var s summary
	col := func(f func(i int) float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	nt, nl := len(ts), len(ls)
	ratios := col(func(i int) float64 { return ts[i].pipeRPS / ts[i].rawRPS }, nt)
	s.ratio = spread(ratios, "%.2f")
	s.steady = spread(col(func(i int) float64 { return ts[i].steadyRPS / ts[i].rawRPS }, nt), "%.2f")
	s.leased = spread(col(func(i int) float64 { return ts[i].leasedRPS / ts[i].rawRPS }, nt), "%.2f")
	s.raw = spread(col(func(i int) float64 { return ts[i].rawRPS }, nt), "%.0f")
	s.pipe = spread(col(func(i int) float64 { return ts[i].pipeRPS }, nt), "%.0f")
	s.rawMB = spread(col(func(i int) float64 { return float64(ts[i].rawBytes) / 1e6 / ts[i].rawSeconds / float64(c.shards) }, nt), "%.2f")
	s.pipeMB = spread(col(func(i int) float64 { return float64(ts[i].rawBytes) / 1e6 / ts[i].pipeSeconds / float64(c.shards) }, nt), "%.2f")
	s.hot = spread(col(func(i int) float64 { return float64(ts[i].hotShardBytes) / 1e6 }, nt), "%.1f")
	s.mean = spread(col(func(i int) float64 { return float64(ts[i].rawBytes) / 1e6 / float64(c.shards) }, nt), "%.1f")
	s.cpu = spread(col(func(i int) float64 { return 100 * ts[i].workerCPU / ts[i].pipeSeconds }, nt), "%.0f%%")
	p99s := col(func(i int) float64 { return pct(ls[i].all, 99) }, nl)
	s.p50 = spread(col(func(i int) float64 { return pct(ls[i].all, 50) }, nl), "%.2f")
	s.p90 = spread(col(func(i int) float64 { return pct(ls[i].all, 90) }, nl), "%.2f")
	s.p99 = spread(p99s, "%.2f")
	s.pmax = spread(col(func(i int) float64 { return pct(ls[i].all, 100) }, nl), "%.2f")
	s.n = spread(col(func(i int) float64 { return float64(len(ls[i].all)) }, nl), "%.0f")
	np99s := col(func(i int) float64 { return pct(ls[i].lat, 99) }, nl)
	s.np50 = spread(col(func(i int) float64 { return pct(ls[i].lat, 50) }, nl), "%.2f")
	s.np90 = spread(col(func(i int) float64 { return pct(ls[i].lat, 90) }, nl), "%.2f")
	s.np99 = spread(np99s, "%.2f")
	s.npmax = spread(col(func(i int) float64 { return pct(ls[i].lat, 100) }, nl), "%.2f")
	s.nn = spread(col(func(i int) float64 { return float64(len(ls[i].lat)) }, nl), "%.0f")
	redS := col(func(i int) float64 { return 100 * ls[i].red.ratio }, nl)
	redB := col(func(i int) float64 { return 100 * ts[i].red.ratio }, nt)
	s.redSteady = spread(redS, "%.1f%%")
	s.redBurst = spread(redB, "%.1f%%")
	graph := col(func(i int) float64 {
		r := ls[i].red
		return 100 * (1 - float64(r.sinkRecords)/float64(r.records))
	}, nl)
	s.cacheSteady = spread(graph, "%.1f%%")
	s.cacheEvents = spread(col(func(i int) float64 {
		r := ls[i].red
		return 100 * (1 - float64(r.sinkRecords)/float64(r.events))
	}, nl), "%.1f%%")
	if len(ls) > 0 && ls[0].red.sinkRunRecords >= 0 && ls[0].red.runs > 0 {
		lin := col(func(i int) float64 { return ls[i].red.lineageReduction() }, nl)
		per := col(func(i int) float64 { return ls[i].red.runWritesPerRun() }, nl)
		s.lineage, s.runPerRun = spread(lin, "%.2f%%"), spread(per, "%.3f")
		s.lineageOK = minOf(lin) >= 85 && maxOf(per) <= 1.5
	}
	s.rateSteady = spread(col(func(i int) float64 { return ls[i].red.rate }, nl), "%.0f")
	s.rateBurst = spread(col(func(i int) float64 { return ts[i].red.rate }, nt), "%.0f")
	s.ratioMin, s.p99Max, s.redSteadyMin = minOf(ratios), math.Max(maxOf(p99s), maxOf(np99s)), minOf(graph)
	for _, l := range ls {
		s.missing += l.missing
	}
	s.ratioOK, s.latOK, s.redOK = s.ratioMin >= 0.9, s.p99Max <= 11.5 && s.missing == 0, s.redSteadyMin >= 90
	s.lines = fmt.Sprintf("throughput: pipeline/raw ratio=%s (target >= 0.9: %s) raw_rps=%s pipeline_rps=%s steady_ratio=%s all_leases_ratio=%s raw_MBps_per_shard=%s pipeline_MBps_per_shard=%s worker_cpu=%s rounds=%d sink=%s\n",
		s.ratio, okWord(s.ratioOK), s.raw, s.pipe, s.steady, s.leased, s.rawMB, s.pipeMB, s.cpu, nt, c.tputSink) +
		fmt.Sprintf("latency: every edge version p50=%ss p90=%ss p99=%ss max=%ss n=%s; new edge ids p50=%ss p99=%ss max=%ss n=%s missing=%d (target p99 <= 11.5 s: %s) rate=%s/s rounds=%d sink=gremlin\n",
			s.p50, s.p90, s.p99, s.pmax, s.n, s.np50, s.np99, s.npmax, s.nn, s.missing, okWord(s.latOK), s.rateSteady, nl) +
		fmt.Sprintf("reduction: graph writes (records in acknowledged Gremlin requests) per input record %s, per decoded event %s, at %s records/s (target >= 90%%: %s); upserts the processor emitted per input record %s; at the pre-load burst (%s records/s) %s\n",
			s.cacheSteady, s.cacheEvents, s.rateSteady, okWord(s.redOK), s.redSteady, s.rateBurst, s.redBurst)
	if s.lineage != "" {
		s.lines += fmt.Sprintf("reduction counted apart: lineage alone %s (target >= 85%%), run history %s writes per run (target <= 1.5): %s\n",
			s.lineage, s.runPerRun, okWord(s.lineageOK))
	}
	return s
}

func okWord(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}
