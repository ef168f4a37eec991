package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/archive/archivetest"
	"github.com/lineageflow/lineageflow/archive/reader"
	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify"
)

// graphLostFault is the disaster-recovery procedure (README, "Rebuilding
// the graph from the archive") as a fault: once the graph is complete, the
// workers are stopped and the graph is emptied (a wrong drop(), a cluster
// recreated); the stream's unique valid events, archived on the S3
// stand-in as the archive sink writes them (objects per event date and
// shard), are put back on a new stream by `lineageflow rebuild`, and a
// worker of a new application rebuilds the graph, which the matrix then
// compares with the reference as for every scenario.
func graphLostFault(ctx context.Context, s *state) error {
	s3ep, ok := testenv.Lookup("LINEAGEFLOW_S3_ENDPOINT")
	if !ok {
		return fmt.Errorf("the S3 stand-in is not running: run through scripts/e2e.sh, which starts it")
	}
	if err := s.waitCaughtUp(ctx); err != nil {
		return err
	}
	expected := verify.Expected{Vertices: s.want.Vertices, Edges: s.want.Edges}
	if err := s.h.WaitFor(ctx, 3*time.Minute, "the graph complete before it is lost", func() (bool, error) {
		snap, err := graph.Dump(s.h.Env.GremlinEndpoint, time.Minute)
		return err == nil && verify.Compare(expected, snap).OK(), nil
	}); err != nil {
		return err
	}
	for _, p := range s.procs {
		if err := p.Stop(60 * time.Second); err != nil {
			return fmt.Errorf("stop %s: %w", p.Spec.ID, err)
		}
	}
	lost := time.Now()
	s.h.Logf("graph lost: dropping every vertex and edge")
	if err := graph.Drop(s.h.Env.GremlinEndpoint); err != nil {
		return err
	}

	// The archive the sink keeps.
	ac := s.h.Env.AWS()
	c, err := reader.NewS3Client(ctx, ac, s3ep)
	if err != nil {
		return err
	}
	bucket := fmt.Sprintf("e2e-graph-lost-%d", time.Now().UnixNano())
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("create bucket: %w", err)
	}
	st := reader.Store{S3: c, Loc: archive.Location{Bucket: bucket, Prefix: "lineage/"}}
	rows, err := archivetest.Rows(s.recs, 4)
	if err != nil {
		return err
	}
	objs, err := archivetest.Objects(st.Loc.Prefix, rows, 500)
	if err != nil {
		return err
	}
	if err := archivetest.Write(ctx, st, objs); err != nil {
		return err
	}
	from, to := rows[0].EventTime, rows[0].EventTime
	for _, r := range rows {
		if r.EventTime.Before(from) {
			from = r.EventTime
		}
		if r.EventTime.After(to) {
			to = r.EventTime
		}
	}

	// A new stream and application; the rebuild and its worker.
	h2, err := harness.New(harness.Options{Env: s.h.Env, Bin: s.h.Bin, Dir: s.h.Dir + "/rebuild", Name: "e2e-rebuilt"})
	if err != nil {
		return err
	}
	s.closers = append(s.closers, h2.Close)
	if err := h2.CreateStream(ctx, 4); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, s.h.Bin, "rebuild", "-archive", "s3://"+bucket+"/lineage", "-archive-endpoint", s3ep,
		"-from", reader.Days(from, from)[0].Format(archive.DateLayout), "-to", reader.Days(to, to)[0].AddDate(0, 0, 1).Format(archive.DateLayout),
		"-stream", h2.Stream, "-shards", "0", "-region", ac.Region, "-kinesis-endpoint", ac.KinesisEndpoint,
		"-access-key-id", ac.AccessKeyID)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.h.Dir, "LINEAGEFLOW_SECRET_ACCESS_KEY=" + ac.SecretAccessKey}
	out, err := cmd.CombinedOutput()
	s.h.Logf("rebuild:\n%s", out)
	if err != nil {
		return fmt.Errorf("rebuild: %w\n%s", err, out)
	}
	if want := fmt.Sprintf(" %d events put", len(rows)); !strings.Contains(string(out), want) {
		return fmt.Errorf("rebuild did not report%s", want)
	}
	p, err := h2.StartWorker(ctx, s.spec("rebuilt-1"))
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	s.note += fmt.Sprintf(" archived=%d objects=%d rebuild_put_s=%.1f", len(rows), len(objs), time.Since(lost).Seconds())
	return nil
}
