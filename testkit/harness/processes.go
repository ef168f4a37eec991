package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// WorkerSpec describes one worker process.
type WorkerSpec struct {
	// ID is the worker id in the lease table; it also names the data dir
	// (<Dir>/<ID>/data), so a restart with the same ID resumes from disk.
	ID string
	// Sink is "file" (default: a new NDJSON file per process start, see
	// [Proc.SinkPath]) or any -sink value ("gremlin:ws://...", "memory").
	Sink string
	// FailoverTime (default 4 s) and ShardSync (default 500 ms).
	FailoverTime, ShardSync time.Duration
	LeaseStealing           bool
	MaxLeases               int
	// StatsEvery is the period of the worker's stats log line (default 1 s),
	// read by [Proc.Stats].
	StatsEvery time.Duration
	// HTTPAddr is the -http-addr of /metrics, /healthz, /readyz (default
	// "127.0.0.1:0": a free port; the address is in the log).
	HTTPAddr string
	// Args are extra flags for `lineageflow run`.
	Args []string
	// Env are extra environment variables (KEY=VALUE).
	Env []string
}

// Proc is one worker process.
type Proc struct {
	Spec     WorkerSpec
	DataDir  string
	LogPath  string // stdout and stderr of the process
	SinkPath string // NDJSON of acknowledged batches ("" unless Sink is "file")
	Started  time.Time

	cmd  *exec.Cmd
	logf *os.File
	done chan struct{}
	err  error // exit status, once done
}

// PID returns the process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited, and its exit error.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Signal sends sig to the process (no-op once it exited).
func (p *Proc) Signal(sig syscall.Signal) error {
	if done, _ := p.Exited(); done {
		return nil
	}
	return p.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL to the process's group and waits for the exit.
func (p *Proc) Kill() error {
	if done, _ := p.Exited(); done {
		return nil
	}
	if err := syscall.Kill(-p.PID(), syscall.SIGKILL); err != nil {
		if err := p.Signal(syscall.SIGKILL); err != nil {
			return err
		}
	}
	<-p.done
	return nil
}

// Stop sends SIGTERM and waits up to timeout for the exit (then SIGKILL).
// It returns the exit error of a process that exited by itself in time
// (nil for a clean exit), or an error saying it had to be killed.
func (p *Proc) Stop(timeout time.Duration) error {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		_ = p.Kill()
		return fmt.Errorf("harness: worker %s (pid %d) did not exit within %v of SIGTERM: killed", p.Spec.ID, p.PID(), timeout)
	}
}

// Log returns the process's log so far.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

// Stats returns the counters of the last stats line the process logged
// (`lineageflow run` logs one every StatsEvery and one at exit), nil if
// none yet.
func (p *Proc) Stats() map[string]int64 {
	log := p.Log()
	i := strings.LastIndex(log, "msg=stats ")
	if i < 0 {
		return nil
	}
	line := log[i:]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	m := map[string]int64{}
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			m[k] = n
		}
	}
	return m
}

// StartWorker starts `lineageflow run` for spec on h's stream.
func (h *Harness) StartWorker(ctx context.Context, spec WorkerSpec) (*Proc, error) {
	if spec.ID == "" {
		return nil, errors.New("harness: worker id is empty")
	}
	if spec.Sink == "" {
		spec.Sink = "file"
	}
	if spec.FailoverTime == 0 {
		spec.FailoverTime = 4 * time.Second
	}
	if spec.ShardSync == 0 {
		spec.ShardSync = 500 * time.Millisecond
	}
	if spec.StatsEvery == 0 {
		spec.StatsEvery = time.Second
	}
	if spec.HTTPAddr == "" {
		spec.HTTPAddr = "127.0.0.1:0"
	}
	h.mu.Lock()
	h.starts[spec.ID]++
	n := h.starts[spec.ID]
	h.mu.Unlock()
	dir := filepath.Join(h.Dir, spec.ID)
	p := &Proc{Spec: spec, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, fmt.Sprintf("run-%d.log", n)), done: make(chan struct{})}
	if err := os.MkdirAll(p.DataDir, 0o755); err != nil {
		return nil, err
	}
	sink := spec.Sink
	if sink == "file" {
		p.SinkPath = filepath.Join(dir, fmt.Sprintf("sink-%d.ndjson", n))
		sink = "file:" + p.SinkPath
	}
	args := []string{"run",
		"-stream", h.Stream, "-app", h.App, "-worker-id", spec.ID,
		"-region", h.Env.Region, "-kinesis-endpoint", h.Env.KinesisEndpoint, "-dynamodb-endpoint", h.Env.DynamoDBEndpoint,
		"-access-key-id", h.Env.AccessKeyID,
		"-data-dir", p.DataDir, "-sink", sink,
		"-failover-time", spec.FailoverTime.String(), "-shard-sync", spec.ShardSync.String(),
		"-stats-every", spec.StatsEvery.String(), "-http-addr", spec.HTTPAddr,
	}
	if spec.LeaseStealing {
		args = append(args, "-lease-stealing")
	}
	if spec.MaxLeases > 0 {
		args = append(args, "-max-leases", fmt.Sprint(spec.MaxLeases))
	}
	args = append(args, spec.Args...)
	logf, err := os.Create(p.LogPath)
	if err != nil {
		return nil, err
	}
	p.logf = logf
	// Not CommandContext: the process must outlive nothing but the harness,
	// and is stopped only by Stop, Kill or Close (by PID).
	p.cmd = exec.Command(h.Bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = procAttr()
	// A clean environment: only what the process needs, no AWS_* from the
	// caller that could redirect it.
	// The secret through the environment, never the command line.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"LINEAGEFLOW_SECRET_ACCESS_KEY=" + h.Env.SecretAccessKey}
	// The GetRecords wire format of the test run, if it chose one (run the
	// same tests over cbor and json); spec.Env still overrides it.
	if v, ok := os.LookupEnv("LINEAGEFLOW_KINESIS_PROTOCOL"); ok {
		env = append(env, "LINEAGEFLOW_KINESIS_PROTOCOL="+v)
	}
	p.cmd.Env = append(env, spec.Env...)
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("harness: start worker %s: %w", spec.ID, err)
	}
	p.Started = time.Now()
	go func() {
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	h.Logf("worker %s started: pid %d, log %s", spec.ID, p.PID(), p.LogPath)
	return p, nil
}

// Restart starts a new process with p's spec (same id, same data dir,
// a new log and sink file). p must have exited.
func (h *Harness) Restart(ctx context.Context, p *Proc) (*Proc, error) {
	if done, _ := p.Exited(); !done {
		return nil, fmt.Errorf("harness: restart %s: pid %d still running", p.Spec.ID, p.PID())
	}
	return h.StartWorker(ctx, p.Spec)
}

// Procs returns every process started, in start order.
func (h *Harness) Procs() []*Proc {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Proc(nil), h.procs...)
}

// SinkPaths returns the sink files of every process started.
func (h *Harness) SinkPaths() []string {
	var out []string
	for _, p := range h.Procs() {
		if p.SinkPath != "" {
			out = append(out, p.SinkPath)
		}
	}
	return out
}

// DumpLogs writes the last maxBytes of every process's log to w.
func (h *Harness) DumpLogs(w io.Writer, maxBytes int) {
	for _, p := range h.Procs() {
		l := p.Log()
		if len(l) > maxBytes {
			l = "..." + l[len(l)-maxBytes:]
		}
		done, err := p.Exited()
		fmt.Fprintf(w, "==== worker %s pid %d (exited %v %v) %s\n%s\n", p.Spec.ID, p.PID(), done, err, p.LogPath, l)
	}
}

// LogContains reports whether any process log of worker id contains s.
func (h *Harness) LogContains(id, s string) bool {
	for _, p := range h.Procs() {
		if p.Spec.ID == id && strings.Contains(p.Log(), s) {
			return true
		}
	}
	return false
}
