package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.CleanupBuild()
	os.Exit(code)
}

// `lineageflow deadletters` reads a running worker's dead letters through
// its ops server (-worker-addr): its data dir is locked while it runs, and
// -data-dir says so and points at -worker-addr.
func TestDeadLettersWhileRunning(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "dlrunning")
	if err := h.CreateStream(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Sink: "memory"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Kinesis().PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(h.Stream),
		PartitionKey: aws.String("k"), Data: []byte(`{"eventType":"COMPLETE","this is": not json`)}); err != nil {
		t.Fatal(err)
	}
	listen := regexp.MustCompile(`msg="http server listening" addr=(\S+)`)
	var addr string
	err = h.WaitFor(ctx, 60*time.Second, "the worker to dead-letter the malformed record", func() (bool, error) {
		if done, err := w.Exited(); done {
			return false, err
		}
		if addr == "" {
			m := listen.FindStringSubmatch(w.Log())
			if m == nil {
				return false, nil
			}
			addr = m[1]
		}
		resp, err := http.Get("http://" + addr + "/deadletters")
		if err != nil {
			return false, nil
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200 && strings.Contains(string(b), `"deadLetter"`) && strings.Contains(string(b), `"end":true`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := captureStdout(t, func() {
		if err := deadLetters(ctx, []string{"-worker-addr", addr}); err != nil {
			t.Fatalf("deadletters -worker-addr on a running worker: %v", err)
		}
	})
	if !strings.Contains(out, "SHARD") || !strings.Contains(out, "shardId-000000000000") || !strings.Contains(out, "not_json") {
		t.Fatalf("deadletters -worker-addr printed:\n%s", out)
	}
	captureStdout(t, func() {
		if err := deadLetters(ctx, []string{"-worker-addr", addr, "-parked"}); err != nil {
			t.Fatalf("deadletters -worker-addr -parked: %v", err)
		}
	})
	err = deadLetters(ctx, []string{"-data-dir", w.DataDir})
	if err == nil || !strings.Contains(err.Error(), "-worker-addr") {
		t.Fatalf("deadletters -data-dir on a running worker: %v, want the hint to use -worker-addr", err)
	}
	if err := deadLetters(ctx, []string{"-worker-addr", addr, "-raw"}); err == nil || exitCode(err) != 2 {
		t.Fatalf("-worker-addr with -raw: %v, want exit 2", err)
	}
}

// captureStdout returns what f printed on os.Stdout.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, wp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = wp
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	defer func() { os.Stdout = old }()
	f()
	wp.Close()
	os.Stdout = old
	return <-done
}

// TestReplayParkedWritesAndDeletes: a parked item (a vertex set apart from
// its batch) is listed by -parked, written by -replay-parked to the
// Gremlin Server stand-in, then gone from the list.
func TestReplayParkedWritesAndDeletes(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the Gremlin Server stand-in")
	}
	ep := testenv.Gremlin(t)
	dir := t.TempDir()
	db, err := processor.OpenDB(dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := lineage.Dataset{Namespace: fmt.Sprintf("replay-%d", time.Now().UnixNano()), Name: "parked"}
	v := lineage.DatasetVertex(d)
	p := checkpoint.Parked{Shard: "shardId-000000000001", OutboxSeq: 7, At: time.Now().UTC(), Attempts: 1, Reason: "refused", Vertices: 1,
		Item: v.ID, Entry: processor.AppendOutbox(nil, &processor.OutboxEntry{Batch: lineage.Batch{Vertices: []lineage.Vertex{v}}})}
	if err := db.Set(checkpoint.ParkedItemKey(p.Shard, 7, 0), checkpoint.MarshalParked(&p), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := deadLetters(ctx, []string{"-data-dir", dir, "-replay-parked"}); err == nil {
		t.Error("-replay-parked without -sink accepted")
	}
	if err := deadLetters(ctx, []string{"-data-dir", dir, "-replay-parked", "-sink", "gremlin:" + ep}); err != nil {
		t.Fatal(err)
	}
	snap, err := graph.Dump(ep, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, gv := range snap.Vertices {
		found = found || gv.ID == v.ID
	}
	if !found {
		t.Error("the replayed vertex is not in the graph")
	}
	db, err = processor.OpenDB(dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	if err := checkpoint.ListParked(db, func(checkpoint.Parked) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d parked item(s) left after the replay, want 0", n)
	}
}
