package source_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/testkit/harness"
)

// TestSIGHUPStopsGracefully: SIGHUP (a closed terminal, a supervisor's
// reload) stops a worker like SIGTERM: shards flushed, lease released, exit
// 0, where Go's default would kill it on the spot.
func TestSIGHUPStopsGracefully(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "hup")
	if err := h.CreateStream(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.WaitFor(ctx, 60*time.Second, "w1 to hold the lease", func() (bool, error) {
		ls, err := h.Leases(ctx) // the lease table appears once the worker made it
		return err == nil && len(ls) == 1 && ls[0].AssignedTo == "w1", nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := h.WaitFor(ctx, 30*time.Second, "w1 to exit after SIGHUP", func() (bool, error) {
		done, _ := w.Exited()
		return done, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exited(); err != nil {
		t.Errorf("exit after SIGHUP: %v, want 0", err)
	}
	if !h.LogContains("w1", "worker stopped cleanly") {
		t.Error("no clean-stop line in the worker log after SIGHUP")
	}
	ls, err := h.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].AssignedTo != "" {
		t.Errorf("leases after SIGHUP: %+v, want the lease released", ls)
	}
}
