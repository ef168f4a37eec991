package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// flakyHandoff is a Handoff whose Get fails while failing is set.
type flakyHandoff struct {
	*MemHandoff
	failing atomic.Bool
	calls   atomic.Int64
}

func (h *flakyHandoff) Get(ctx context.Context, shard string) ([]byte, bool, error) {
	h.calls.Add(1)
	if h.failing.Load() {
		return nil, false, errors.New("dial tcp dynamodb.internal.example:443: connection refused")
	}
	return h.MemHandoff.Get(ctx, shard)
}

func testWorker(t *testing.T, ho Handoff) (*Worker, context.CancelFunc) {
	t.Helper()
	w := &Worker{cfg: Config{WorkerID: "w1", Pipeline: processor.PipelineConfig{Stats: &processor.Stats{}}, Stats: &Stats{}},
		log: slog.New(slog.DiscardHandler), ho: ho, opts: workerOptions{handoffRetryMax: 20 * time.Millisecond}}
	w.ctx, w.cancel = context.WithCancelCause(context.Background())
	stop, cancel := context.WithCancel(context.Background())
	w.stop = stop
	t.Cleanup(func() { cancel(); w.cancel(nil) })
	return w, cancel
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A child that cannot read its parent's handoff keeps retrying (well past
// the 2 minutes of old, here many more attempts than the old backoff
// allowed in that time), counts the failures, is reported as waiting (the
// worker is not ready, and the message names the shard and parent but not
// the error's host), and reads the handoff once the store answers again.
func TestHandoffReadFailureWaits(t *testing.T) {
	ho := &flakyHandoff{MemHandoff: NewMemHandoff()}
	if err := ho.Put(context.Background(), "shardId-000000000000", []byte("runs")); err != nil {
		t.Fatal(err)
	}
	ho.failing.Store(true)
	w, _ := testWorker(t, ho)
	p := &recordProcessor{w: w}
	st := w.Stats()
	type result struct {
		ok   bool
		data []byte
	}
	done := make(chan result, 1)
	go func() {
		var data []byte
		ok := p.readHandoff("shardId-000000000001", "shardId-000000000000", func(ctx context.Context) error {
			var err error
			data, _, err = ho.Get(ctx, "shardId-000000000000")
			return err
		})
		done <- result{ok, data}
	}()
	// 40 failures: with the old 2-minute limit and 5 s backoff cap, about
	// 30 attempts were made before going on without the parent.
	waitFor(t, "40 failed reads", func() bool { return st.HandoffReadFails.Load() >= 40 })
	select {
	case r := <-done:
		t.Fatalf("readHandoff returned %+v while the store fails", r)
	default:
	}
	if n := st.HandoffsWaiting.Load(); n != 1 {
		t.Fatalf("HandoffsWaiting = %d, want 1", n)
	}
	err := w.HandoffBlocked()
	if err == nil {
		t.Fatal("HandoffBlocked = nil while a child waits")
	}
	for _, want := range []string{"shardId-000000000001", "shardId-000000000000", "failed read"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("HandoffBlocked %q does not name %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "example") {
		t.Errorf("HandoffBlocked %q echoes the error text (a host)", err)
	}
	ho.failing.Store(false)
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("readHandoff did not return after the store recovered")
	}
	if !r.ok || string(r.data) != "runs" {
		t.Fatalf("readHandoff = %v, %q; want true, the parent's runs", r.ok, r.data)
	}
	if n := st.HandoffsWaiting.Load(); n != 0 {
		t.Fatalf("HandoffsWaiting = %d after the read, want 0", n)
	}
	if err := w.HandoffBlocked(); err != nil {
		t.Fatalf("HandoffBlocked = %v after the read", err)
	}
	if n := st.HandoffsMissing.Load(); n != 0 {
		t.Fatalf("HandoffsMissing = %d: nothing was given up", n)
	}
}

// A graceful stop ends the wait without loading anything (false: the
// shard is not marked as loaded, the next owner retries) and clears the
// waiting state.
func TestHandoffReadFailureStops(t *testing.T) {
	ho := &flakyHandoff{MemHandoff: NewMemHandoff()}
	ho.failing.Store(true)
	w, stop := testWorker(t, ho)
	p := &recordProcessor{w: w}
	done := make(chan bool, 1)
	go func() {
		done <- p.readHandoff("shardId-000000000001", "shardId-000000000000", func(ctx context.Context) error {
			_, _, err := ho.Get(ctx, "shardId-000000000000")
			return err
		})
	}()
	waitFor(t, "the child waiting", func() bool { return w.HandoffBlocked() != nil })
	stop()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("readHandoff = true after a stop with the store failing")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("readHandoff did not return after the stop")
	}
	if err := w.HandoffBlocked(); err != nil || w.Stats().HandoffsWaiting.Load() != 0 {
		t.Fatalf("after the stop: HandoffBlocked %v, waiting %d", err, w.Stats().HandoffsWaiting.Load())
	}
}

// The same on dynalite: the child reads a handoff table that does not
// exist yet (a real DynamoDB error, ResourceNotFound), waits and is
// reported, then reads the handoff once the table is created and the
// parent's runs are put.
func TestHandoffReadFailureWaitsDynamo(t *testing.T) {
	if testing.Short() {
		t.Skip("needs dynalite")
	}
	ep := testenv.DynamoDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := awsconf.Config{Region: testenv.Region, AccessKeyID: testenv.AccessKeyID,
		SecretAccessKey: testenv.SecretAccessKey, DynamoDBEndpoint: ep}
	awsCfg, err := cfg.AWS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = awsconf.Endpoint(ep) })
	ho := &DynamoHandoff{Client: client, Table: fmt.Sprintf("handoff-wait-%d", time.Now().UnixNano()),
		Logger: slog.New(slog.DiscardHandler)}
	w, _ := testWorker(t, ho)
	p := &recordProcessor{w: w}
	// mu keeps reads out while the table is created and the runs put (a
	// read in between would find the table empty: no handoff, go on).
	var mu sync.Mutex
	done := make(chan []byte, 1)
	go func() {
		var data []byte
		if p.readHandoff("shardId-000000000001", "shardId-000000000000", func(ctx context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			var err error
			data, _, err = ho.Get(ctx, "shardId-000000000000")
			return err
		}) {
			done <- data
		}
		close(done)
	}()
	waitFor(t, "3 failed reads", func() bool { return w.Stats().HandoffReadFails.Load() >= 3 })
	if err := w.HandoffBlocked(); err == nil || w.Stats().HandoffsWaiting.Load() != 1 {
		t.Fatalf("while the table is missing: HandoffBlocked %v, waiting %d", err, w.Stats().HandoffsWaiting.Load())
	}
	mu.Lock()
	if err := ho.EnsureTable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ho.Put(ctx, "shardId-000000000000", []byte("parent runs")); err != nil {
		t.Fatal(err)
	}
	mu.Unlock()
	select {
	case data := <-done:
		if string(data) != "parent runs" {
			t.Fatalf("read %q, want the parent's runs", data)
		}
	case <-ctx.Done():
		t.Fatal("the child never read the handoff")
	}
	if err := w.HandoffBlocked(); err != nil || w.Stats().HandoffsWaiting.Load() != 0 {
		t.Fatalf("after the read: HandoffBlocked %v, waiting %d", err, w.Stats().HandoffsWaiting.Load())
	}
}
