package httpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/sink"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// state is what the fakes report; the test changes it between probes.
type state struct {
	mu      sync.Mutex
	running bool
	leases  int
	lastErr error
	stats   sink.Stats
	now     time.Time
}

func (s *state) lock() func() { s.mu.Lock(); return s.mu.Unlock }

func TestReadyzFlipsWithState(t *testing.T) {
	t.Parallel()
	s := &state{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), stats: sink.Stats{Retries: map[sink.Code]uint64{}}}
	rd := &Readiness{
		Running:       func() bool { defer s.lock()(); return s.running },
		Leases:        func() int { defer s.lock()(); return s.leases },
		LastSinkError: func() (time.Time, error) { defer s.lock()(); return s.now, s.lastErr },
		SinkStats: func() sink.Stats {
			defer s.lock()()
			st := s.stats
			st.Retries = map[sink.Code]uint64{}
			for k, v := range s.stats.Retries {
				st.Retries[k] = v
			}
			return st
		},
		Window: 15 * time.Second,
		Now:    func() time.Time { defer s.lock()(); return s.now },
	}
	srv := httptest.NewServer(Handler(Config{Ready: rd.Check, Status: rd.Status}))
	defer srv.Close()
	probe := func(want int, wantBody string) {
		t.Helper()
		code, body := get(t, srv.URL+"/readyz")
		if code != want || !strings.Contains(body, wantBody) {
			t.Fatalf("/readyz = %d %q, want %d containing %q", code, body, want, wantBody)
		}
		if code, _ := get(t, srv.URL+"/healthz"); code != 200 {
			t.Fatalf("/healthz = %d while readiness is %d", code, want)
		}
	}
	step := func(f func()) {
		s.mu.Lock()
		f()
		s.now = s.now.Add(10 * time.Second) // the probe period
		s.mu.Unlock()
	}

	probe(503, "worker not running") // starting
	step(func() { s.running = true })
	probe(200, "waiting for leases") // running without leases is ready
	step(func() { s.leases = 2; s.stats.Requests = 10 })
	probe(200, "2 lease(s) held")
	// The graph goes away: the last batch failed to connect.
	step(func() {
		s.lastErr = &sink.Error{Code: sink.CodeConnection, Retriable: true, Err: errors.New("dial tcp 127.0.0.1:8182: connection refused")}
	})
	probe(503, "sink not connected: last write")
	probe(503, "(Connection error")
	if _, body := get(t, srv.URL+"/readyz"); strings.Contains(body, "127.0.0.1") || strings.Contains(body, "8182") {
		t.Errorf("/readyz shows the sink's address: %q", body)
	}
	// A refused request (a bad traversal) is not a connection problem.
	step(func() { s.lastErr = &sink.Error{Code: sink.CodeOther, Err: errors.New("E0502")} })
	probe(200, "ready")
	// Connection retries inside the sink and no ack over the window.
	step(func() { s.lastErr = nil; s.stats.Retries[sink.CodeConnection] = 3 })
	probe(503, "connection retries and no acknowledged request")
	step(func() { s.stats.Retries[sink.CodeTimeout] = 1 })
	probe(503, "sink not connected")
	// Acks again: connected.
	step(func() { s.stats.Requests = 11 })
	probe(200, "ready")
	step(func() {})
	probe(200, "ready")
	// Shutting down.
	step(func() { s.running = false })
	probe(503, "worker not running")
}

func TestIsConnectionError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"closed", sink.ErrClosed, true},
		{"connection", &sink.Error{Code: sink.CodeConnection}, true},
		{"timeout wrapped", errors.Join(errors.New("batch"), &sink.Error{Code: sink.CodeTimeout}), true},
		{"read-only", &sink.Error{Code: sink.CodeReadOnlyViolation}, true},
		{"throttled", &sink.Error{Code: sink.CodeThrottling}, false},
		{"other", errors.New("x"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsConnectionError(tc.err); got != tc.want {
				t.Errorf("IsConnectionError(%v) = %v", tc.err, got)
			}
		})
	}
}

func TestServerStopsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Start(ctx, Config{Addr: "127.0.0.1:0", Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "lineage_x 1\n")
	}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + srv.Addr().String()
	if code, body := get(t, base+"/metrics"); code != 200 || body != "lineage_x 1\n" {
		t.Fatalf("/metrics = %d %q", code, body)
	}
	if code, _ := get(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz without a Ready func = %d", code)
	}
	if code, _ := get(t, base+"/nope"); code != 404 {
		t.Fatalf("/nope = %d", code)
	}
	cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop after its context ended")
	}
	if resp, err := http.Get(base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("server still answers after shutdown")
	}
	// A taken port fails Start, naming the flag.
	ln, err := Start(context.Background(), Config{Addr: "127.0.0.1:-1"})
	if err == nil || !strings.Contains(err.Error(), "-http-addr") {
		t.Fatalf("Start on a bad address: %v, %v", ln, err)
	}
}

// TestReadyzSaysSharedDedupDegraded: Redis down does not make the worker
// unready (ingestion goes on with the local tier) but /readyz says so.
func TestReadyzSaysSharedDedupDegraded(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var dedupErr error
	rd := &Readiness{Running: func() bool { return true }, Leases: func() int { return 1 },
		SharedDedup: func() error { mu.Lock(); defer mu.Unlock(); return dedupErr }}
	srv := httptest.NewServer(Handler(Config{Ready: rd.Check, Status: rd.Status}))
	defer srv.Close()
	if code, body := get(t, srv.URL+"/readyz"); code != 200 || !strings.Contains(body, "shared dedup ok") {
		t.Fatalf("/readyz = %d %q, want 200 with shared dedup ok", code, body)
	}
	mu.Lock()
	dedupErr = fmt.Errorf("dedupredis: ping redis://:***@10.1.2.3:6379/0: %w",
		&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")})
	mu.Unlock()
	if code, body := get(t, srv.URL+"/readyz"); code != 200 || !strings.Contains(body, "shared dedup degraded (local tier only): connection error") ||
		strings.Contains(body, "10.1.2.3") || strings.Contains(body, "redis://") {
		t.Fatalf("/readyz = %d %q, want 200 saying shared dedup degraded, its class only (no host)", code, body)
	}
}

// A shard that cannot start (a child waiting for a handoff it cannot read)
// makes the worker not ready, and /readyz says why; ready again once it
// starts.
func TestReadyzBlockedShard(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	blocked := errors.New("handoff unreadable, retrying: shard shardId-000000000001 waiting for the handoff of parent shardId-000000000000")
	rd := &Readiness{Running: func() bool { return true }, Leases: func() int { return 1 },
		Blocked: func() error { mu.Lock(); defer mu.Unlock(); return blocked }}
	srv := httptest.NewServer(Handler(Config{Ready: rd.Check, Status: rd.Status}))
	defer srv.Close()
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for the handoff of parent") {
		t.Fatalf("/readyz = %d %q, want 503 naming the handoff wait", code, body)
	}
	mu.Lock()
	blocked = nil
	mu.Unlock()
	if code, body := get(t, srv.URL+"/readyz"); code != 200 {
		t.Fatalf("/readyz = %d %q after the shard started, want 200", code, body)
	}
}
