package web_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/harness"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.CleanupBuild()
	os.Exit(code)
}

// streamWindow is the worker's -window in the stream tests: the edge of a
// run reaches the graph about one window (+ 0.5 s lateness) after its
// record arrives; the default 10 s would only make the test slower.
const streamWindow = time.Second

// streamWorker is a real `lineageflow run` process (built once by the
// harness) reading a new stream on kinesalite, leases on dynalite, writing
// to the Gremlin Server stand-in at endpoint with the project's sink.
type streamWorker struct {
	h        *harness.Harness
	endpoint string
}

// startStreamWorker creates a one-shard stream and starts one worker on it
// with -window streamWindow; it returns once the worker holds the shard's
// lease, so a record put afterwards is read by a running shard consumer.
func startStreamWorker(t testing.TB, endpoint string) *streamWorker {
	t.Helper()
	h := harness.ForTest(t, "explorer")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := h.CreateStream(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Sink: "gremlin:" + endpoint,
		Args: []string{"-window", streamWindow.String(), "-log-level", "warn"}}); err != nil {
		t.Fatal(err)
	}
	err := h.WaitFor(ctx, time.Minute, "the worker to lease the shard", func() (bool, error) {
		ls, err := h.Leases(ctx)
		if err != nil {
			return false, nil // the lease table appears with the worker
		}
		return len(harness.Owners(ls, time.Now())["w1"]) == 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &streamWorker{h: h, endpoint: endpoint}
}

// newRunID returns a random UUID (v4 layout), as producers send.
func newRunID() string {
	var id [16]byte
	_, _ = rand.Read(id[:])
	h := hex.EncodeToString(id[:])
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

// completeEvent is an OpenLineage RunEvent COMPLETE of job reading inputs.
func completeEvent(job lineage.Job, inputs ...lineage.Dataset) []byte {
	in := ""
	for i, d := range inputs {
		if i > 0 {
			in += ","
		}
		in += fmt.Sprintf(`{"namespace":%q,"name":%q}`, d.Namespace, d.Name)
	}
	return []byte(fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":%q,"run":{"runId":%q},"job":{"namespace":%q,"name":%q},"inputs":[%s],"outputs":[],`+
		`"producer":"https://github.com/lineageflow/lineageflow/explorer/web","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`,
		time.Now().UTC().Format(time.RFC3339Nano), newRunID(), job.Namespace, job.Name, in))
}

// put puts one record on the stream (PutRecords, as producers batch) and
// returns the time (Unix ms) Kinesis acknowledged it.
func (w *streamWorker) put(t testing.TB, key string, data []byte) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := w.h.Kinesis().PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(w.h.Stream),
		Records: []types.PutRecordsRequestEntry{{PartitionKey: aws.String(key), Data: data}}})
	if err != nil {
		t.Fatalf("PutRecords: %v", err)
	}
	if n := aws.ToInt32(out.FailedRecordCount); n != 0 {
		t.Fatalf("PutRecords: %d failed: %s", n, aws.ToString(out.Records[0].ErrorMessage))
	}
	return time.Now().UnixMilli()
}

// edgeWatch polls the graph for one edge id (every 5 ms, each poll one
// round trip of well under that) and reports when it first saw it: the
// graph write's acknowledgement as a reader sees it.
type edgeWatch struct {
	seen chan int64
	err  chan error
}

func (w *streamWorker) watchEdge(t testing.TB, id string, timeout time.Duration) *edgeWatch {
	t.Helper()
	g, closeFn, err := graph.Connect(w.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ew := &edgeWatch{seen: make(chan int64, 1), err: make(chan error, 1)}
	go func() {
		defer closeFn()
		deadline := time.Now().Add(timeout)
		for time.Now().Before(deadline) {
			n, err := g.E(id).Count().Next()
			if err == nil {
				if c, ok := graph.AsInt64(n.GetInterface()); ok && c > 0 {
					ew.seen <- time.Now().UnixMilli()
					return
				}
			}
			time.Sleep(5 * time.Millisecond) // poll interval, not synchronisation
		}
		ew.err <- fmt.Errorf("edge %s not in the graph after %s", id, timeout)
	}()
	return ew
}

// wait returns when the edge was first seen in the graph.
func (ew *edgeWatch) wait(t testing.TB) int64 {
	t.Helper()
	select {
	case at := <-ew.seen:
		return at
	case err := <-ew.err:
		t.Fatal(err)
	}
	return 0
}

// warmUp puts a run on the stream and waits for its edge in the graph: the
// worker's shard consumer, windows and sink connection are then running.
// in is a dataset of its own, so the page's view does not change.
func (w *streamWorker) warmUp(t testing.TB, ns string) {
	t.Helper()
	sfx := newRunID()
	in := lineage.Dataset{Namespace: ns, Name: "warmup_src_" + sfx}
	j := lineage.Job{Namespace: ns, Name: "warmup_" + sfx}
	ew := w.watchEdge(t, lineage.EdgeID(lineage.EdgeInputTo, lineage.DatasetID(in), lineage.JobID(j)), 2*time.Minute)
	w.put(t, j.Name, completeEvent(j, in))
	ew.wait(t)
}
