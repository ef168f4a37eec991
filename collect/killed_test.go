package collect_test

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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.CleanupBuild()
	os.Exit(code)
}

// collector is one `lineageflow collect` process.
type collector struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startCollector runs `lineageflow collect` on addr and waits for /readyz.
func startCollector(t *testing.T, h *harness.Harness, addr string, n int, extra ...string) *collector {
	t.Helper()
	c := &collector{log: filepath.Join(h.Dir, fmt.Sprintf("collect-%d.log", n)), done: make(chan struct{})}
	f, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"collect", "-stream", h.Stream, "-region", h.Env.Region, "-kinesis-endpoint", h.Env.KinesisEndpoint,
		"-access-key-id", h.Env.AccessKeyID, "-http-addr", addr, "-shutdown-grace", "20s"}, extra...)
	c.cmd = exec.Command(h.Bin, args...)
	c.cmd.Stdout, c.cmd.Stderr = f, f
	c.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LINEAGEFLOW_SECRET_ACCESS_KEY=" + h.Env.SecretAccessKey}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); f.Close(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	err = harness.Poll(context.Background(), 30*time.Second, 20*time.Millisecond, func() (bool, error) {
		select {
		case <-c.done:
			b, _ := os.ReadFile(c.log)
			return false, fmt.Errorf("collect exited: %w\n%s", c.err, b)
		default:
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == 200, nil
	}, "collect ready")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestCollectKilledMidLoad: producers send a generated workload (~2,000
// events, each run's events in order from one client) to a `lineageflow
// collect` process, retrying the same bytes after any failure or
// non-2xx answer (as the OpenLineage clients do). A third of the way in
// the collector gets SIGTERM: it must exit 0 after answering what it held;
// it is restarted, and two thirds in it gets SIGKILL (events stored but
// never acknowledged: their retries are duplicates in the stream) and is
// restarted again. Every event ends acknowledged; a real worker then reads
// the stream into its file sink, whose graph must equal the reference
// model's of the workload exactly (every event once: a duplicate would
// not change the vertices, but it would the counts and the edge
// properties if the workers' dedup let it through).
func TestCollectKilledMidLoad(t *testing.T) {
	t.Parallel() // own stream, collector and worker: runs beside the other end-to-end tests
	if testing.Short() {
		t.Skip("runs collect and worker processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "collect")
	if err := h.CreateStream(ctx, 2); err != nil {
		t.Fatal(err)
	}
	recs := gen.Generate(gen.Config{Events: 2000, MalformedShare: -1, DuplicateShare: -1})
	var data [][]byte
	for _, r := range recs {
		if r.Malformed == "" && !r.Duplicate {
			data = append(data, r.Data)
		}
	}
	addr := freeAddr(t)
	url := "http://" + addr + "/api/v1/lineage"
	col := startCollector(t, h, addr, 1)

	// Clients: the events of one partition key go to one client, in order.
	const clients = 8
	queues := make([][][]byte, clients)
	for i, r := range recs {
		if r.Malformed != "" || r.Duplicate {
			continue
		}
		f := fnv.New32a()
		f.Write([]byte(recs[i].PartitionKey))
		q := f.Sum32() % clients
		queues[q] = append(queues[q], r.Data)
	}
	var acked, attempts, failures atomic.Int64
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 30 * time.Second}
	for _, q := range queues {
		wg.Add(1)
		go func(q [][]byte) {
			defer wg.Done()
			for _, ev := range q {
				for ctx.Err() == nil {
					attempts.Add(1)
					resp, err := hc.Post(url, "application/json", bytes.NewReader(ev))
					if err == nil {
						resp.Body.Close()
						if resp.StatusCode == http.StatusCreated {
							acked.Add(1)
							break
						}
					}
					failures.Add(1)
					time.Sleep(20 * time.Millisecond) // the client's retry backoff
				}
			}
		}(q)
	}
	waitAcked := func(n int64) {
		t.Helper()
		if err := harness.Poll(ctx, 2*time.Minute, 5*time.Millisecond, func() (bool, error) { return acked.Load() >= n, nil }, fmt.Sprintf("%d events acknowledged", n)); err != nil {
			t.Fatal(err)
		}
	}
	total := int64(len(data))
	waitAcked(total / 3)
	_ = col.cmd.Process.Signal(syscall.SIGTERM)
	<-col.done
	if col.err != nil {
		b, _ := os.ReadFile(col.log)
		t.Fatalf("collect after SIGTERM: %v (want exit status 0)\n%s", col.err, b)
	}
	t.Logf("SIGTERM at %d acknowledged: exit 0", acked.Load())
	col = startCollector(t, h, addr, 2)
	waitAcked(2 * total / 3)
	_ = col.cmd.Process.Kill()
	<-col.done
	t.Logf("SIGKILL at %d acknowledged", acked.Load())
	col = startCollector(t, h, addr, 3)
	wg.Wait()
	if acked.Load() != total {
		t.Fatalf("%d of %d events acknowledged", acked.Load(), total)
	}
	t.Logf("%d events acknowledged after %d requests (%d failed and retried)", total, attempts.Load(), failures.Load())
	// A client whose answer was lost (a timeout) sends the same bytes
	// again: every 40th event, acknowledged a second time.
	resent := int64(0)
	for i := 0; i < len(data); i += 40 {
		resp, err := hc.Post(url, "application/json", bytes.NewReader(data[i]))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("resend: %d", resp.StatusCode)
		}
		resent++
	}

	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	want := refmodel.Build(data, refmodel.Options{})
	err = h.WaitFor(ctx, 2*time.Minute, "the sink's graph to equal the reference model", func() (bool, error) {
		if done, err := w.Exited(); done {
			return false, fmt.Errorf("worker exited: %w", err)
		}
		g, _, err := harness.ReadSinks(h.SinkPaths()...)
		if err != nil {
			return false, err
		}
		missing, extra := harness.Missing(want, g)
		if extra > 0 {
			return false, fmt.Errorf("%d ghost edges", extra)
		}
		return missing == 0 && refmodel.Compare(want, g).Empty() && w.Stats()["records"] >= total+resent, nil
	})
	if err != nil {
		g, _, _ := harness.ReadSinks(h.SinkPaths()...)
		t.Fatalf("%v\n%s", err, refmodel.Compare(want, g))
	}
	st := w.Stats()
	t.Logf("worker: %d records, %d events, %d duplicates dropped, %d dead letters", st["records"], st["events"], st["duplicates"], st["invalid"])
	if st["duplicates"] < resent {
		t.Errorf("%d duplicates dropped, want at least the %d resent events", st["duplicates"], resent)
	}
	if st["events"] != total {
		t.Errorf("the worker took %d events, want each of the %d once", st["events"], total)
	}
	if st["records"] != st["events"]+st["duplicates"] {
		t.Errorf("records %d != events %d + duplicates %d", st["records"], st["events"], st["duplicates"])
	}
	_ = w.Stop(30 * time.Second)
	_ = col
	if b, _ := os.ReadFile(filepath.Join(h.Dir, "collect-1.log")); !strings.Contains(string(b), "finishing the requests in flight") {
		t.Errorf("the SIGTERMed collector did not drain:\n%s", b)
	}
}
