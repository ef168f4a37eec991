package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"sync"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kinesistypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

type latResult struct {
	lat          []float64 // seconds, sorted: new edges (first appearance of the id)
	all          []float64 // seconds, sorted: every edge version (new edges and lastSeen updates)
	versions     int
	expected     int
	missing      int
	achievedRate float64
	red          reduction
}

func latency(ctx context.Context, c config, env harness.Env, bin, dir string, log io.Writer, round int) (latResult, error) {
	var r latResult
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	h, err := harness.New(harness.Options{Env: env, Bin: bin, Dir: dir, Log: log, Name: "bench-lat"})
	if err != nil {
		return r, err
	}
	defer h.Close()
	defer cleanupStream(h)

	// The workload, cut into the batches that will be put one per tick
	// (100 ms), and for every edge the first batch after which the
	// reference model (stream order, strict policy) holds it. All of this
	// before the worker starts: nothing but the replay and the graph poll
	// runs while latencies are measured.
	const tick = 100 * time.Millisecond
	recs := gen.Generate(gen.Config{Seed: int64(2000 + round), Events: c.latRate * c.latSeconds}.WithDefaults())
	per := max(1, int(math.Round(float64(c.latRate)*tick.Seconds())))
	if per > replay.MaxBatchRecords {
		return r, fmt.Errorf("-lat-rate %d: at most %d records per 100 ms tick", c.latRate, replay.MaxBatchRecords)
	}
	var batches [][]gen.Record
	for i := 0; i < len(recs); i += per {
		batches = append(batches, recs[i:min(i+per, len(recs))])
	}
	model := refmodel.New(refmodel.Options{Policy: "strict"})
	var versions []version
	final := map[string]int64{} // edge id -> lastSeen after the whole stream
	for b, batch := range batches {
		for _, rec := range batch {
			model.Add(rec.Data)
		}
		for id, e := range model.Graph().Edges {
			old, seen := final[id]
			if !seen || e.LastSeen > old {
				versions = append(versions, version{id: id, lastSeen: e.LastSeen, batch: b, isNew: !seen})
				final[id] = e.LastSeen
			}
		}
	}
	r.expected = len(final)
	var runs int64 // the workload's recorded runs (-runs all: every run)
	for _, v := range model.Graph().Vertices {
		if v.Label == lineage.LabelRun {
			runs++
		}
	}
	r.versions = len(versions)
	h.Logf("latency workload: %d records in %d batches of %d, %d expected edges, %d edge versions (lastSeen changes)", len(recs), len(batches), per, r.expected, len(versions))

	if err := graph.Drop(env.GremlinEndpoint); err != nil {
		return r, err
	}
	if err := h.CreateStream(ctx, c.shards); err != nil {
		return r, err
	}
	p, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Sink: "gremlin:" + env.GremlinEndpoint, StatsEvery: time.Second,
		ShardSync: time.Second, FailoverTime: 10 * time.Second, Args: c.runArgs()})
	if err != nil {
		return r, err
	}
	if err := h.WaitFor(ctx, 90*time.Second, "the worker holds every lease", func() (bool, error) {
		ls, err := h.Leases(ctx)
		if err != nil {
			return false, nil
		}
		return len(harness.Owners(ls, time.Now())["w1"]) == c.shards, nil
	}); err != nil {
		h.DumpLogs(log, 3000)
		return r, err
	}

	// Poll the graph's edge ids while replaying.
	visible := map[string][]sighting{}
	var vmu sync.Mutex
	pollCtx, stopPoll := context.WithCancel(ctx)
	pollDone := make(chan error, 1)
	go func() { pollDone <- pollEdges(pollCtx, env.GremlinEndpoint, c.poll, visible, &vmu) }()

	acks := make([]time.Time, len(batches))
	kc := h.Kinesis()
	start := time.Now()
	for b, batch := range batches {
		if d := time.Until(start.Add(time.Duration(b) * tick)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				stopPoll()
				return r, ctx.Err()
			}
		}
		if err := putBatch(ctx, kc, h.Stream, batch); err != nil {
			stopPoll()
			return r, fmt.Errorf("put batch %d: %w", b, err)
		}
		acks[b] = time.Now()
	}
	r.achievedRate = float64(len(recs)) / time.Since(start).Seconds()
	h.Logf("steady replay: %d records at %.0f/s", len(recs), r.achievedRate)

	// Wait for every expected edge (the last window seals on the idle
	// watermark), then stop polling.
	werr := h.WaitFor(ctx, 90*time.Second, "every expected edge visible", func() (bool, error) {
		vmu.Lock()
		defer vmu.Unlock()
		for id, ls := range final {
			if v := visible[id]; len(v) == 0 || v[len(v)-1].lastSeen < ls {
				return false, nil
			}
		}
		return true, nil
	})
	stopPoll()
	if err := <-pollDone; err != nil && !errors.Is(err, context.Canceled) {
		return r, err
	}
	for _, v := range versions {
		at, ok := firstAtLeast(visible[v.id], v.lastSeen)
		if !ok {
			if v.isNew {
				r.missing++
			}
			continue
		}
		d := at.Sub(acks[v.batch]).Seconds()
		r.all = append(r.all, d)
		if v.isNew {
			r.lat = append(r.lat, d)
		}
	}
	sort.Float64s(r.all)
	sort.Float64s(r.lat)
	if werr != nil {
		h.Logf("%v: %d of %d edges missing", werr, r.missing, r.expected)
	}

	st, err := settle(ctx, p, 60*time.Second)
	if err != nil {
		h.DumpLogs(log, 3000)
		return r, err
	}
	sinkRecords, sinkRuns := int64(-1), int64(-1)
	if m, err := scrapeMetrics(p); err == nil {
		if v, ok := m["lineage_sink_records_total"]; ok {
			sinkRecords = int64(v)
		}
		if v, ok := m["lineage_sink_run_records_total"]; ok {
			sinkRuns = int64(v)
		}
	} else {
		h.Logf("metrics: %v", err)
	}
	r.red = newReduction(r.achievedRate, st, sinkRecords)
	r.red.sinkRunRecords, r.red.runs = sinkRuns, runs
	if err := p.Stop(60 * time.Second); err != nil {
		h.Logf("stop: %v", err)
	}
	return r, nil
}

// putBatch puts recs with one PutRecords (re-sending failed records until
// all are stored): its return is the acknowledgement time of every record.
func putBatch(ctx context.Context, kc *kinesis.Client, stream string, recs []gen.Record) error {
	entries := make([]kinesistypes.PutRecordsRequestEntry, len(recs))
	for i, r := range recs {
		entries[i] = kinesistypes.PutRecordsRequestEntry{PartitionKey: aws.String(r.PartitionKey), Data: r.Data}
	}
	for attempt := 0; len(entries) > 0; attempt++ {
		if attempt == 30 {
			return errors.New("records still failing after 30 attempts")
		}
		out, err := kc.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: entries})
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var failed []kinesistypes.PutRecordsRequestEntry
		for i, res := range out.Records {
			if res.ErrorCode != nil {
				failed = append(failed, entries[i])
			}
		}
		entries = failed
	}
	return nil
}

// version is one state of an edge in the reference model: the edge
// exists (isNew) or its lastSeen grew, after batch.
type version struct {
	id       string
	lastSeen int64
	batch    int
	isNew    bool
}

// sighting is a lastSeen value of an edge the graph first returned at.
type sighting struct {
	at       time.Time
	lastSeen int64
}

// firstAtLeast returns when the graph first showed lastSeen >= ls.
func firstAtLeast(ss []sighting, ls int64) (time.Time, bool) {
	for _, s := range ss {
		if s.lastSeen >= ls {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// pollEdges reads every edge's id and lastSeen every period and notes each
// new value with the time the answer arrived.
func pollEdges(ctx context.Context, endpoint string, period time.Duration, visible map[string][]sighting, mu *sync.Mutex) error {
	g, closeFn, err := graph.Connect(endpoint)
	if err != nil {
		return err
	}
	defer closeFn()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		rs, err := g.E().Project("id", "ls").By(gremlingo.T.Id).By(gremlingo.T__.Values(lineage.PropLastSeen)).ToList()
		now := time.Now()
		if err == nil {
			mu.Lock()
			for _, r := range rs {
				m, ok := r.GetInterface().(map[any]any)
				if !ok {
					continue
				}
				id := fmt.Sprint(m["id"])
				ls, ok := graph.AsInt64(m["ls"])
				if !ok {
					continue
				}
				if v := visible[id]; len(v) == 0 || v[len(v)-1].lastSeen < ls {
					visible[id] = append(v, sighting{at: now, lastSeen: ls})
				}
			}
			mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
