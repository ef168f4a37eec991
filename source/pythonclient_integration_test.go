package source_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// TestOpenLineagePythonClient (issue 13): events written by the real
// openlineage-python client (1.54.0, its file transport; the program is
// testdata/openlineage-python/emit.py: a Spark application with a SQL job
// that completes and one that fails, a streaming Flink job, a dbt model
// with a DROPped output, a JobEvent, a DatasetEvent) are put on kinesalite
// with the OpenLineage transport's partition keys and read by a worker
// writing to Gremlin Server: no dead letter, and the graph equals the
// reference model's (verify.Compare, every label and property).
func TestOpenLineagePythonClient(t *testing.T) {
	gremlin := testenv.Gremlin(t)
	python := testenv.PythonVenv(t, "openlineage-venv", "LINEAGEFLOW_OPENLINEAGE_VENV", "testdata/openlineage-python/requirements.txt", "import openlineage.client.transport.file") // first use: a few minutes of pip
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "olpy")
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	salt := hex.EncodeToString(rnd[:])
	ns := "olpy-" + salt
	out := filepath.Join(t.TempDir(), "events.ndjson")
	if b, err := exec.Command(python, filepath.Join("..", "testdata", "openlineage-python", "emit.py"), out, ns, salt).CombinedOutput(); err != nil {
		t.Fatalf("emit.py: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	data := refmodel.SplitNDJSON(raw)
	if len(data) < 10 {
		t.Fatalf("the client wrote %d events, want 14", len(data))
	}
	recs := make([]replay.Record, len(data))
	for i, d := range data {
		ev, err := lineage.Decode(d)
		if err != nil {
			t.Fatalf("event %d of the client does not decode: %v\n%s", i+1, err, d)
		}
		if err := refmodel.Valid(d); err != nil {
			t.Fatalf("event %d: the reference model refuses it: %v", i+1, err)
		}
		recs[i] = replay.Record{PartitionKey: ev.PartitionKey(), Data: d}
	}
	want := refmodel.Build(data, refmodel.Options{})

	if err := h.CreateStream(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Sink: "gremlin:" + gremlin})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Replay(ctx, recs, 0); err != nil {
		t.Fatal(err)
	}
	expected := verify.Expected{Vertices: want.Vertices, Edges: want.Edges}
	var rep *verify.Report
	var snap *graph.Snapshot
	err = h.WaitFor(ctx, 90*time.Second, "Gremlin to equal the reference model", func() (bool, error) {
		if exited, err := w.Exited(); exited {
			return false, fmt.Errorf("worker exited: %w", err)
		}
		s, err := graph.Dump(gremlin, 30*time.Second)
		if err != nil {
			return false, nil
		}
		snap = onlyPrefix(s, ns)
		rep = verify.Compare(expected, snap)
		return rep.OK(), nil
	})
	if err != nil {
		if rep != nil {
			t.Log(rep.String())
		}
		t.Fatal(err)
	}
	if st := w.Stats(); st["invalid"] != 0 || st["events"] != int64(len(data)) {
		t.Errorf("worker stats: %d invalid, %d events; want 0, %d", st["invalid"], st["events"], len(data))
	}
	if err := w.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}

	// What the events say is in the graph: a sample checked by hand.
	has := map[string]bool{}
	labels := map[string]int{}
	for _, e := range snap.Edges {
		has[e.ID] = true
		labels[e.Label]++
	}
	for _, v := range snap.Vertices {
		labels[v.Label]++
	}
	ds := func(nsSuffix, name string) string {
		return lineage.DatasetID(lineage.Dataset{Namespace: ns + "-" + nsSuffix, Name: name})
	}
	job := func(nsSuffix, name string) string {
		return lineage.JobID(lineage.Job{Namespace: ns + "-" + nsSuffix, Name: name})
	}
	for what, id := range map[string]string{
		"DERIVES orders -> orders_daily (completed Spark job)":          lineage.EdgeID(lineage.EdgeDerives, ds("s3://lake", "raw/orders"), ds("s3://lake", "mart/orders_daily")),
		"DERIVES clicks -> sessions (streaming Flink job, no COMPLETE)": lineage.EdgeID(lineage.EdgeDerives, ds("kafka://broker:9092", "clicks"), ds("kafka://broker:9092", "sessions")),
		"CHILD_OF SQL job -> application job":                           lineage.EdgeID(lineage.EdgeChildOf, job("spark", "nightly_app.insert_orders_daily"), job("spark", "nightly_app")),
		"COLUMN_DERIVES amount -> total": lineage.EdgeID(lineage.EdgeColumnDerives,
			lineage.DatasetFieldID(lineage.Dataset{Namespace: ns + "-s3://lake", Name: "raw/orders"}, "amount"),
			lineage.DatasetFieldID(lineage.Dataset{Namespace: ns + "-s3://lake", Name: "mart/orders_daily"}, "total")),
	} {
		if !has[id] {
			t.Errorf("missing %s", what)
		}
	}
	// The failed run names its parent (the application's run) on its Run
	// vertex: runs have no edges.
	failed, parent := lineage.RunVertexID(salt+"-0000-7000-8000-000000000003"), salt+"-0000-7000-8000-000000000001"
	foundFailed := false
	for _, v := range snap.Vertices {
		if v.ID == failed {
			foundFailed = true
			if got := fmt.Sprint(v.Props[lineage.PropParentRunID]); !strings.Contains(got, parent) {
				t.Errorf("failed Run %s: parentRunId %s, want %s", failed, got, parent)
			}
		}
	}
	if !foundFailed {
		t.Errorf("missing the failed Run vertex %s", failed)
	}
	// The 1-2-0 transformation of amount -> total, on its COLUMN_DERIVES.
	colID := lineage.EdgeID(lineage.EdgeColumnDerives,
		lineage.DatasetFieldID(lineage.Dataset{Namespace: ns + "-s3://lake", Name: "raw/orders"}, "amount"),
		lineage.DatasetFieldID(lineage.Dataset{Namespace: ns + "-s3://lake", Name: "mart/orders_daily"}, "total"))
	for _, e := range snap.Edges {
		if e.ID == colID && (fmt.Sprint(e.Props[lineage.PropTransformationType]) != "DIRECT/AGGREGATION" ||
			fmt.Sprint(e.Props[lineage.PropTransformationDescription]) != "sum(amount)") {
			t.Errorf("COLUMN_DERIVES amount -> total: %v, want transformationType DIRECT/AGGREGATION, transformationDescription sum(amount)", e.Props)
		}
	}
	for what, id := range map[string]string{
		"OUTPUTS to the failed job's output": lineage.EdgeID(lineage.EdgeOutputs, job("spark", "nightly_app.insert_customers"), ds("s3://lake", "mart/customers")),
		"OUTPUTS to the DROPped table":       lineage.EdgeID(lineage.EdgeOutputs, job("dbt", "jaffle.stg_orders"), ds("postgres://db:5432", "analytics.stg_orders_v1")),
	} {
		if has[id] {
			t.Errorf("ghost: %s", what)
		}
	}
	t.Logf("%d events of openlineage-python 1.54.0, no dead letter; Gremlin equals the reference model: %v", len(data), labels)
}
