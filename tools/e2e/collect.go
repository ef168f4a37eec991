package main

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/testkit/harness"
)

// collectFeed is the producer side of the collect scenario: HTTP clients
// send the stream's records to a `lineageflow collect` process (one client
// per partition key hash, so a key's events stay in order), at the
// scenario's rate, retrying the same bytes after any failure or non-201
// answer, as the OpenLineage clients do.
type collectFeed struct {
	h    *harness.Harness
	addr string
	n    int // collector processes started

	mu   sync.Mutex
	proc *exec.Cmd
	done chan struct{}

	acked, retries atomic.Int64
	total          int64
	wg             sync.WaitGroup
	err            atomic.Value // error of a client
}

// startCollectFeed starts a collector and the clients.
func startCollectFeed(ctx context.Context, h *harness.Harness, recs []replay.Record, rate float64) (*collectFeed, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &collectFeed{h: h, addr: l.Addr().String(), total: int64(len(recs))}
	l.Close()
	if err := f.startCollector(ctx); err != nil {
		return nil, err
	}
	const clients = 16
	queues := make([][]replay.Record, clients)
	for _, r := range recs {
		hh := fnv.New32a()
		hh.Write([]byte(r.PartitionKey))
		q := hh.Sum32() % clients
		queues[q] = append(queues[q], r)
	}
	url := "http://" + f.addr + "/api/v1/lineage"
	hc := &http.Client{Timeout: 30 * time.Second}
	perClient := time.Duration(float64(time.Second) * clients / rate)
	for _, q := range queues {
		f.wg.Add(1)
		go func(q []replay.Record) {
			defer f.wg.Done()
			next := time.Now()
			for _, r := range q {
				if d := time.Until(next); d > 0 {
					time.Sleep(d) // the producers' pace, not synchronisation
				}
				next = next.Add(perClient)
				for {
					if ctx.Err() != nil {
						f.err.Store(ctx.Err())
						return
					}
					resp, err := hc.Post(url, "application/json", bytes.NewReader(r.Data))
					if err == nil {
						resp.Body.Close()
						if resp.StatusCode == http.StatusCreated {
							f.acked.Add(1)
							break
						}
						if resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusTooManyRequests {
							f.err.Store(fmt.Errorf("collect refused a generated event: %d", resp.StatusCode))
							return
						}
					}
					f.retries.Add(1)
					time.Sleep(50 * time.Millisecond) // the client's retry backoff
				}
			}
		}(q)
	}
	return f, nil
}

// startCollector runs `lineageflow collect` on f.addr and waits for /readyz.
func (f *collectFeed) startCollector(ctx context.Context) error {
	f.n++
	logf, err := os.Create(filepath.Join(f.h.Dir, fmt.Sprintf("collect-%d.log", f.n)))
	if err != nil {
		return err
	}
	cmd := exec.Command(f.h.Bin, "collect", "-stream", f.h.Stream, "-region", f.h.Env.Region,
		"-kinesis-endpoint", f.h.Env.KinesisEndpoint, "-access-key-id", f.h.Env.AccessKeyID, "-http-addr", f.addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LINEAGEFLOW_SECRET_ACCESS_KEY=" + f.h.Env.SecretAccessKey}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	f.mu.Lock()
	f.proc, f.done = cmd, done
	f.mu.Unlock()
	f.h.Logf("collect %d started: pid %d on %s", f.n, cmd.Process.Pid, f.addr)
	return harness.Poll(ctx, 30*time.Second, 20*time.Millisecond, func() (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("collect %d exited at start (log %s)", f.n, logf.Name())
		default:
		}
		resp, err := http.Get("http://" + f.addr + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}, "collect ready")
}

// kill SIGKILLs the collector (by PID) and waits for its exit.
func (f *collectFeed) kill() {
	f.mu.Lock()
	p, done := f.proc, f.done
	f.mu.Unlock()
	_ = p.Process.Kill()
	<-done
}

// wait waits for every record to be acknowledged, then stops the collector.
func (f *collectFeed) wait() error {
	f.wg.Wait()
	f.mu.Lock()
	p, done := f.proc, f.done
	f.mu.Unlock()
	_ = p.Process.Signal(os.Interrupt)
	<-done
	if err, ok := f.err.Load().(error); ok && err != nil {
		return err
	}
	if a := f.acked.Load(); a != f.total {
		return fmt.Errorf("%d of %d records acknowledged", a, f.total)
	}
	return nil
}

// collectFault waits until half the records are acknowledged, SIGKILLs the
// collector mid-stream (requests in flight: some stored, unanswered; their
// retries are duplicates the workers drop) and starts another on the same
// address.
func collectFault(ctx context.Context, s *state) error {
	f := s.feed
	if err := s.h.WaitFor(ctx, 2*time.Minute, "half the records acknowledged by collect", func() (bool, error) {
		return f.acked.Load() >= f.total/2, nil
	}); err != nil {
		return err
	}
	s.h.Logf("SIGKILL collect at %d of %d acknowledged", f.acked.Load(), f.total)
	f.kill()
	if err := f.startCollector(ctx); err != nil {
		return err
	}
	s.note = fmt.Sprintf("collect_killed_at=%d", f.acked.Load())
	return nil
}
