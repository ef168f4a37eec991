package archive_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/archive/archivetest"
	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// TestRebuildFromArchive is the disaster-recovery procedure on the
// stand-ins: the generated workload's unique valid events are archived as
// the sink writes them (objects per day and shard on the S3 stand-in), and
// `lineageflow rebuild` puts the days of the workload back on a fresh
// stream; a worker of a new application reads it into an empty graph, and
// `lineageflow verify` (the reference model over the original input,
// duplicates and malformed records included) passes exactly. Another
// workload archived in the days before the range is not read: one of its
// events in the graph would be an extra vertex.
func TestRebuildFromArchive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "rebuild")
	st := standinStore(t, ctx, "dr/lineage/")
	s3ep := testenv.S3(t)
	ep := testenv.PrivateGremlin(t)

	// Event times over three days; the decoy ends before they start.
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	recs := gen.Generate(gen.Config{Seed: 31, Events: 2000, Start: start.Add(20 * time.Hour), EventGap: 45 * time.Second})
	decoy := gen.Generate(gen.Config{Seed: 32, Events: 300, Start: start.AddDate(0, 0, -3), EventGap: time.Minute})
	var objs []archivetest.Object
	for _, w := range [][]gen.Record{recs, decoy} {
		rows, err := archivetest.Rows(w, 2)
		if err != nil {
			t.Fatal(err)
		}
		o, err := archivetest.Objects(st.Loc.Prefix, rows, 150)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o...)
	}
	if err := archivetest.Write(ctx, st, objs); err != nil {
		t.Fatal(err)
	}
	unique := len(archivetest.Unique(recs))

	// Bad flags fail before any remote call (the endpoints are closed
	// ports: a call would fail differently).
	bad := exec.CommandContext(ctx, h.Bin, "rebuild", "-archive", "s3://b/p", "-from", "2026-03-02", "-to", "2026-03-01",
		"-stream", "x", "-region", "us-east-1", "-kinesis-endpoint", "http://127.0.0.1:1", "-archive-endpoint", "http://127.0.0.1:1")
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "-to 2026-03-01T00:00:00Z is not after -from") {
		t.Fatalf("rebuild with -to before -from: %v\n%s", err, out)
	}

	if err := h.CreateStream(ctx, 2); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, h.Bin, "rebuild", "-archive", "s3://"+st.Loc.Bucket+"/dr/lineage",
		"-archive-endpoint", s3ep, "-from", "2026-03-01", "-to", "2026-03-05", "-stream", h.Stream, "-shards", "0",
		"-region", h.Env.Region, "-kinesis-endpoint", h.Env.KinesisEndpoint, "-access-key-id", h.Env.AccessKeyID,
		"-progress-every", "1s")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LINEAGEFLOW_SECRET_ACCESS_KEY=" + h.Env.SecretAccessKey}
	out, err := cmd.CombinedOutput()
	t.Logf("rebuild:\n%s", out)
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if want := " " + strconv.Itoa(unique) + " events put"; !strings.Contains(string(out), want) {
		t.Fatalf("rebuild did not report%s (the unique valid events of the range)", want)
	}

	if _, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Sink: "gremlin:" + ep}); err != nil {
		t.Fatal(err)
	}
	_, data := harness.Generated(recs)
	want := refmodel.Build(data, refmodel.Options{})
	exp := verify.Expected{Vertices: want.Vertices, Edges: want.Edges}
	var last *verify.Report
	if err := h.WaitFor(ctx, 4*time.Minute, "the rebuilt graph to match the reference model", func() (bool, error) {
		s, err := graph.Dump(ep, time.Minute)
		if err != nil {
			return false, nil
		}
		r := verify.Compare(exp, s)
		last = r
		return r.OK(), nil
	}); err != nil {
		if last != nil {
			t.Logf("last comparison: %s", last.String())
		}
		t.Fatal(err)
	}

	// And the verify command says so, on the original input.
	in := filepath.Join(t.TempDir(), "input.ndjson")
	var b bytes.Buffer
	for _, d := range data {
		b.Write(d)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	vout, err := exec.CommandContext(ctx, h.Bin, "verify", "-gremlin-endpoint", ep, in).CombinedOutput()
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, vout)
	}
	t.Logf("verify: %s", strings.TrimSpace(string(vout)))
}
