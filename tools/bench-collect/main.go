// Command bench-collect measures `lineageflow collect` on the local
// kinesalite stand-in, all figures in one run so they compare on a noisy
// machine:
//
//  1. throughput: generated events (~1 KB each, padded to -event-bytes)
//     sent by -clients concurrent HTTP clients, one event per request, to
//     one collector process, as fast as it acknowledges them; events/s (wall)
//     and events per CPU-second of the collector (/proc/<pid>/stat), and the
//     ratio to `replay`'s raw PutRecords rate (internal/replay, no
//     aggregation, 4 lanes) of the same events on a new stream in the same
//     run;
//  2. latency: p50/p99 acknowledgement time at half the throughput of 1,
//     paced;
//  3. memory: RSS of the collector idle, then with -slow connections each
//     holding a request whose body arrives one byte a second, and how many
//     of those got 429 (the in-flight request budget).
//
// Run it through scripts/standins-start.sh's stand-ins (it reads their env
// file like the tests); it builds the binary into -dir.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

func main() {
	events := flag.Int("events", 20000, "events sent in the throughput run")
	clients := flag.Int("clients", 32, "concurrent HTTP clients")
	eventBytes := flag.Int("event-bytes", 1500, "pad each event to about this many bytes (a facet of filler)")
	latSeconds := flag.Int("latency-seconds", 10, "length of the paced latency run")
	slow := flag.Int("slow", 1000, "slow clients in the memory run")
	linger := flag.Duration("linger", 5*time.Millisecond, "collect -linger")
	dir := flag.String("dir", "", "work directory (default a temp dir)")
	flag.Parse()
	if err := run(*events, *clients, *eventBytes, *latSeconds, *slow, *linger, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "bench-collect:", err)
		os.Exit(1)
	}
}

func run(events, clients, eventBytes, latSeconds, slow int, linger time.Duration, dir string) error {
	ctx := context.Background()
	env, ok := harness.StandinsEnv()
	if !ok {
		return errors.New("stand-ins not found: run scripts/standins-start.sh kinesis dynamodb")
	}
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "bench-collect-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	bin, err := harness.Build(ctx, testenv.RepoRoot(), dir)
	if err != nil {
		return err
	}
	h, err := harness.New(harness.Options{Env: env, Bin: bin, Dir: dir, Name: "bench-collect"})
	if err != nil {
		return err
	}
	defer h.Close()
	if err := h.CreateStream(ctx, 4); err != nil {
		return err
	}
	recs := payload(events, eventBytes)
	size := 0
	for _, r := range recs {
		size += len(r.Data)
	}
	fmt.Printf("events=%d mean_bytes=%d clients=%d linger=%s\n", len(recs), size/len(recs), clients, linger)

	addr, err := freeAddr()
	if err != nil {
		return err
	}
	col, err := startCollect(ctx, h, addr, linger)
	if err != nil {
		return err
	}
	defer func() { _ = col.Process.Kill(); _ = col.Wait() }()
	url := "http://" + addr + "/api/v1/lineage"

	// 1. Throughput.
	cpu0 := cpuSeconds(col.Process.Pid)
	t0 := time.Now()
	if _, err := send(url, recs, clients, 0); err != nil {
		return err
	}
	wall := time.Since(t0).Seconds()
	cpu := cpuSeconds(col.Process.Pid) - cpu0
	rate := float64(len(recs)) / wall
	perCore := float64(len(recs)) / cpu

	// replay's raw PutRecords of the same events, new stream, same run.
	h2, err := harness.New(harness.Options{Env: env, Bin: bin, Dir: dir, Name: "bench-replay"})
	if err != nil {
		return err
	}
	defer h2.Close()
	if err := h2.CreateStream(ctx, 4); err != nil {
		return err
	}
	t1 := time.Now()
	if _, err := replay.Run(ctx, h2.Kinesis(), replay.Config{Stream: h2.Stream, Concurrency: 4}, replay.FromSlice(recs)); err != nil {
		return err
	}
	rawRate := float64(len(recs)) / time.Since(t1).Seconds()
	fmt.Printf("throughput: collect_events_per_s=%.0f collect_cpu_s=%.2f events_per_cpu_s=%.0f replay_raw_events_per_s=%.0f ratio=%.2f\n",
		rate, cpu, perCore, rawRate, rate/rawRate)

	// 2. Latency at half load.
	half := rate / 2
	n := int(half * float64(latSeconds))
	lat, err := send(url, payload(n, eventBytes), clients, half)
	if err != nil {
		return err
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	fmt.Printf("latency: rate_per_s=%.0f requests=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f (target p99 <= linger + 50 ms = %.0f ms)\n",
		half, len(lat), ms(q(0.5)), ms(q(0.99)), ms(lat[len(lat)-1]), ms(linger+50*time.Millisecond))

	// 3. Memory with slow clients.
	idle := rssKB(col.Process.Pid)
	var conns []net.Conn
	var refused atomic.Int64
	for i := 0; i < slow; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return fmt.Errorf("slow client %d: %w", i, err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /api/v1/lineage HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", len(recs[0].Data))
	}
	time.Sleep(2 * time.Second) // let the server read what the slow clients sent (a measurement pause)
	for _, c := range conns {
		_, _ = c.Write([]byte(" "))
	}
	held := rssKB(col.Process.Pid)
	var wg sync.WaitGroup
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		b := make([]byte, 64)
		if n, _ := c.Read(b); n > 0 && bytes.Contains(b[:n], []byte(" 429 ")) {
			refused.Add(1)
		}
		wg.Add(1)
		go func(c net.Conn) { defer wg.Done(); c.Close() }(c)
	}
	wg.Wait()
	fmt.Printf("memory: rss_idle_mb=%.1f rss_with_%d_slow_clients_mb=%.1f slow_clients_answered_429=%d\n",
		float64(idle)/1024, slow, float64(held)/1024, refused.Load())
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// payload returns n valid generated events padded to about size bytes.
func payload(n, size int) []replay.Record {
	var out []replay.Record
	for _, r := range gen.Generate(gen.Config{Events: n, MalformedShare: -1, DuplicateShare: -1, Seed: int64(n)}) {
		d := r.Data
		if pad := size - len(d); pad > 64 {
			i := bytes.LastIndexByte(d, '}')
			d = append(append(append([]byte{}, d[:i]...), []byte(`,"_pad":"`+strings.Repeat("x", pad-12)+`"`)...), d[i:]...)
		}
		out = append(out, replay.Record{PartitionKey: r.PartitionKey, Data: d})
	}
	return out
}

// send posts recs from clients goroutines (a key's events from one), paced
// at rate events/s overall when rate > 0, and returns each request's time.
func send(url string, recs []replay.Record, clients int, rate float64) ([]time.Duration, error) {
	queues := make([][]replay.Record, clients)
	for i, r := range recs {
		queues[i%clients] = append(queues[i%clients], r)
	}
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr atomic.Value
	var wg sync.WaitGroup
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var every time.Duration
	if rate > 0 {
		every = time.Duration(float64(time.Second) * float64(clients) / rate)
	}
	for _, q := range queues {
		wg.Add(1)
		go func(q []replay.Record) {
			defer wg.Done()
			next := time.Now()
			for _, r := range q {
				if every > 0 {
					if d := time.Until(next); d > 0 {
						time.Sleep(d) // pacing
					}
					next = next.Add(every)
				}
				t0 := time.Now()
				resp, err := hc.Post(url, "application/json", bytes.NewReader(r.Data))
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					firstErr.CompareAndSwap(nil, fmt.Errorf("status %d", resp.StatusCode))
					return
				}
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}(q)
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return nil, err
	}
	return lat, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func startCollect(ctx context.Context, h *harness.Harness, addr string, linger time.Duration) (*exec.Cmd, error) {
	logf, err := os.Create(filepath.Join(h.Dir, "collect.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(h.Bin, "collect", "-stream", h.Stream, "-region", h.Env.Region, "-kinesis-endpoint", h.Env.KinesisEndpoint,
		"-access-key-id", h.Env.AccessKeyID, "-http-addr", addr, "-linger", linger.String())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LINEAGEFLOW_SECRET_ACCESS_KEY=" + h.Env.SecretAccessKey}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	err = harness.Poll(ctx, 30*time.Second, 20*time.Millisecond, func() (bool, error) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == 200, nil
	}, "collect ready")
	return cmd, err
}

// cpuSeconds is the process's user + system CPU time.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100 // USER_HZ
}

// rssKB is the process's resident set size.
func rssKB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}
