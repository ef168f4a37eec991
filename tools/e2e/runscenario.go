package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

func runScenario(ctx context.Context, cfg config, env harness.Env, bin, dir string, sc scenario) (line string, pass bool) {
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	logf, _ := os.Create(filepath.Join(dir + ".log"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Sprintf("scenario=%s result=FAIL error=%q", sc.name, err), false
	}
	var log io.Writer = io.Discard
	if logf != nil {
		defer logf.Close()
		log = logf
	}
	h, err := harness.New(harness.Options{Env: env, Bin: bin, Dir: dir, Log: log, Name: "e2e-" + sc.name})
	if err != nil {
		return fmt.Sprintf("scenario=%s result=FAIL error=%q", sc.name, err), false
	}
	defer h.Close()
	s := &state{cfg: cfg, sc: sc, h: h}
	defer func() {
		for _, c := range s.closers {
			c()
		}
	}()
	r := outcome{name: sc.name}
	fail := func(err error) (string, bool) {
		r.err, r.note = err, s.note
		h.DumpLogs(log, 4000)
		return r.line(), false
	}

	if sc.redis {
		url, ok := testenv.Lookup("LINEAGEFLOW_REDIS_ENDPOINT")
		if !ok {
			return fail(errors.New("the Redis stand-in is not running: install redis-server (7.0+) and run through scripts/e2e.sh, which starts it"))
		}
		s.redisURL = url
	}
	gc := gen.Config{Seed: int64(len(sc.name)*7919 + 1), Events: cfg.events}.WithDefaults()
	if sc.gen != nil {
		gc = sc.gen(gc)
	}
	recs := gen.Generate(gc)
	toReplay, data := harness.Generated(recs)
	s.recs = recs
	s.want = refmodel.Build(data, refmodel.Options{Policy: "strict"})
	anyG := refmodel.Build(data, refmodel.Options{Policy: "any"})
	r.events, r.expEdges = len(recs), len(s.want.Edges)
	s.records = len(toReplay)
	s.generated = toReplay

	if err := graph.Drop(env.GremlinEndpoint); err != nil {
		return fail(err)
	}
	if err := h.CreateStream(ctx, 4); err != nil {
		return fail(err)
	}
	for i := 0; i < sc.workers; i++ {
		p, err := h.StartWorker(ctx, s.spec(fmt.Sprintf("w%d", i+1)))
		if err != nil {
			return fail(err)
		}
		s.procs = append(s.procs, p)
	}
	// Spread the stream over ~20 s so faults land mid-stream.
	rate := float64(len(toReplay)) / replaySeconds
	if sc.collect {
		if s.feed, err = startCollectFeed(ctx, h, toReplay, rate); err != nil {
			return fail(err)
		}
	} else {
		s.replayJob = &replayJob{h.ReplayAsync(ctx, toReplay, rate)}
	}
	if err := sc.fault(ctx, s); err != nil {
		return fail(fmt.Errorf("fault: %w", err))
	}
	if s.feed != nil {
		if err := s.feed.wait(); err != nil {
			return fail(fmt.Errorf("collect: %w", err))
		}
		s.note += fmt.Sprintf(" collect_retries=%d", s.feed.retries.Load())
	} else if _, err := s.replayJob.j.Wait(); err != nil {
		return fail(fmt.Errorf("replay: %w", err))
	}
	// recover_s: from the end of the fault, or of the stream if later, to
	// the graph being exactly the reference.
	faultOver := time.Now()
	expected := verify.Expected{Vertices: s.want.Vertices, Edges: s.want.Edges}
	var rep *verify.Report
	var snap *graph.Snapshot
	werr := h.WaitFor(ctx, 3*time.Minute, "graph equals the reference", func() (bool, error) {
		var err error
		snap, err = graph.Dump(env.GremlinEndpoint, time.Minute)
		if err != nil {
			return false, nil
		}
		rep = verify.Compare(expected, snap)
		return rep.OK(), nil
	})
	r.recover = time.Since(faultOver).Seconds()
	var liveErr error
	if werr == nil && sc.live != nil {
		liveErr = sc.live(ctx, s)
	}
	for _, p := range s.procs {
		if done, _ := p.Exited(); !done {
			_ = p.Stop(60 * time.Second)
		}
	}
	// Whatever the wait said, count what the graph holds now that every
	// worker stopped (a late ghost write would show here).
	if snap2, err := graph.Dump(env.GremlinEndpoint, time.Minute); err == nil {
		snap = snap2
		rep = verify.Compare(expected, snap)
	}
	if rep == nil {
		return fail(fmt.Errorf("graph never read: %w", werr))
	}
	r.fill(rep, snap, anyG, s.want)
	s.dlq, err = countDeadLetters(h.Procs())
	if err != nil {
		return fail(err)
	}
	r.dlq = s.dlq
	if werr != nil {
		return fail(werr)
	}
	if !rep.OK() {
		fmt.Fprint(log, rep.String())
		return fail(errors.New("graph differs from the reference"))
	}
	// Every refused record is in exactly one dead letter (by shard and
	// sequence number), however often it was processed.
	if s.dlq != s.want.Invalid+s.extraDLQ {
		return fail(fmt.Errorf("dead letters %d, want %d", s.dlq, s.want.Invalid+s.extraDLQ))
	}
	if liveErr != nil {
		return fail(liveErr)
	}
	if sc.check != nil {
		if err := sc.check(ctx, s); err != nil {
			return fail(err)
		}
	}
	r.note = s.note
	return r.line(), true
}
