// Package harness runs lineageflow end to end, as processes, against the
// local stand-ins (kinesalite, dynalite, Gremlin Server): it builds the
// binary once, creates a stream and replays records into it, starts
// `lineageflow run` worker processes with their logs in files, stops them
// with SIGTERM or SIGKILL (by PID), restarts one on its data dir, reads the
// KCL lease table and the file sinks, and waits for conditions by polling
// with a deadline.
//
// It serves the integration tests and the e2e fault matrix, and works from
// a plain main program: everything takes an io.Writer for its log, nothing
// needs a *testing.T ([ForTest] is the convenience for tests).
//
//	bin, _ := harness.Build(ctx, repoRoot, tmpDir)
//	h, _ := harness.New(harness.Options{Env: env, Bin: bin, Dir: tmpDir, Log: os.Stderr})
//	defer h.Close()
//	h.CreateStream(ctx, 4)
//	h.Replay(ctx, records, 0)
//	w1, _ := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1"})
//	h.WaitFor(ctx, time.Minute, "all edges", func() (bool, error) { ... })
package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// Env says where the stand-ins are.
type Env struct {
	KinesisEndpoint  string // http://127.0.0.1:4567
	DynamoDBEndpoint string // http://127.0.0.1:4568
	GremlinEndpoint  string // ws://127.0.0.1:8182/gremlin ("" if not running)
	Region           string
	AccessKeyID      string
	SecretAccessKey  string
}

// StandinsEnv reads the stand-ins' endpoints from the environment or the
// env file of scripts/standins-start.sh (see package testenv). ok is false
// when Kinesis or DynamoDB is missing.
func StandinsEnv() (env Env, ok bool) {
	env = Env{Region: testenv.Region, AccessKeyID: testenv.AccessKeyID, SecretAccessKey: testenv.SecretAccessKey}
	var k, d bool
	env.KinesisEndpoint, k = testenv.Lookup("LINEAGEFLOW_KINESIS_ENDPOINT")
	env.DynamoDBEndpoint, d = testenv.Lookup("LINEAGEFLOW_DYNAMODB_ENDPOINT")
	env.GremlinEndpoint, _ = testenv.Lookup("LINEAGEFLOW_GREMLIN_ENDPOINT")
	return env, k && d
}

// AWS returns the awsconf of env (static credentials, endpoint overrides).
func (e Env) AWS() awsconf.Config {
	return awsconf.Config{Region: e.Region, KinesisEndpoint: e.KinesisEndpoint, DynamoDBEndpoint: e.DynamoDBEndpoint,
		AccessKeyID: e.AccessKeyID, SecretAccessKey: e.SecretAccessKey}
}

// Build compiles ./cmd/lineageflow of the module at repoRoot into outDir
// and returns the binary's path.
func Build(ctx context.Context, repoRoot, outDir string) (string, error) {
	bin := filepath.Join(outDir, "lineageflow")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/lineageflow")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("harness: go build: %w\n%s", err, out)
	}
	return bin, nil
}

// Options configure a [Harness].
type Options struct {
	Env Env
	// Bin is the lineageflow binary ([Build]).
	Bin string
	// Dir holds the workers' data dirs, logs and sink files (required;
	// a test's t.TempDir()).
	Dir string
	// Log receives the harness's own progress lines (default io.Discard).
	Log io.Writer
	// Name prefixes the stream and application (lease table) names; a
	// random suffix makes them unique. Default "lf".
	Name string
}

// Harness is one end-to-end scenario: one stream, one KCL application,
// any number of worker processes. Safe for concurrent use.
type Harness struct {
	Env    Env
	Bin    string
	Dir    string
	Stream string // Kinesis stream name
	App    string // KCL application name = lease table name

	log io.Writer
	kin *kinesis.Client
	ddb *dynamodb.Client

	mu     sync.Mutex
	procs  []*Proc
	starts map[string]int // worker id -> processes started
}

// New prepares a harness (no I/O but creating the AWS clients).
func New(opts Options) (*Harness, error) {
	if opts.Bin == "" || opts.Dir == "" {
		return nil, errors.New("harness: Bin and Dir are required")
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Name == "" {
		opts.Name = "lf"
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("%s-%d-%s", opts.Name, time.Now().Unix()%100000, hex.EncodeToString(rnd[:]))
	ac := opts.Env.AWS()
	cfg, err := ac.AWS(context.Background())
	if err != nil {
		return nil, err
	}
	h := &Harness{Env: opts.Env, Bin: opts.Bin, Dir: opts.Dir, Stream: name, App: name, log: opts.Log,
		starts: map[string]int{}}
	h.kin = kinesis.NewFromConfig(cfg, func(o *kinesis.Options) { o.BaseEndpoint = awsconf.Endpoint(ac.KinesisEndpoint) })
	h.ddb = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = awsconf.Endpoint(ac.DynamoDBEndpoint) })
	return h, nil
}

// Logf writes one progress line to the harness log.
func (h *Harness) Logf(format string, args ...any) {
	fmt.Fprintf(h.log, "%s harness: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// Kinesis returns the harness's Kinesis client.
func (h *Harness) Kinesis() *kinesis.Client { return h.kin }

// DynamoDB returns the harness's DynamoDB client.
func (h *Harness) DynamoDB() *dynamodb.Client { return h.ddb }

// CreateStream creates the stream with n shards and waits until it is ACTIVE.
func (h *Harness) CreateStream(ctx context.Context, shards int) error {
	// replay.Run creates a missing stream; an empty source does just that.
	_, err := replay.Run(ctx, h.kin, replay.Config{Stream: h.Stream, Shards: shards}, replay.FromSlice(nil))
	if err != nil {
		return fmt.Errorf("harness: create stream %s: %w", h.Stream, err)
	}
	h.Logf("stream %s: %d shards", h.Stream, shards)
	return nil
}

// ReplayConfig returns the replay configuration used by [Harness.Replay]
// for h's stream (existing stream; partition keys kept in order).
func (h *Harness) ReplayConfig() replay.Config {
	return replay.Config{Stream: h.Stream, Concurrency: 4}
}

// Replay puts recs on the stream, in order per partition key, at rate
// records/s (0: as fast as the stream takes them).
func (h *Harness) Replay(ctx context.Context, recs []replay.Record, rate float64) (replay.Summary, error) {
	cfg := h.ReplayConfig()
	cfg.Rate = rate
	sum, err := replay.Run(ctx, h.kin, cfg, replay.FromSlice(recs))
	h.Logf("replay: %s", sum)
	return sum, err
}

// ReplayJob is a replay running in the background.
type ReplayJob struct {
	done chan struct{}
	sum  replay.Summary
	err  error
}

// Done is closed when the replay ends.
func (j *ReplayJob) Done() <-chan struct{} { return j.done }

// Wait waits for the replay's end and returns its result.
func (j *ReplayJob) Wait() (replay.Summary, error) { <-j.done; return j.sum, j.err }

// ReplayAsync runs [Harness.Replay] in a goroutine.
func (h *Harness) ReplayAsync(ctx context.Context, recs []replay.Record, rate float64) *ReplayJob {
	j := &ReplayJob{done: make(chan struct{})}
	go func() {
		defer close(j.done)
		j.sum, j.err = h.Replay(ctx, recs, rate)
	}()
	return j
}

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

// Kill sends SIGKILL and waits for the exit.
func (p *Proc) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
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
		"-access-key-id", h.Env.AccessKeyID, "-secret-access-key", h.Env.SecretAccessKey,
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
	// A clean environment: only what the process needs, no AWS_* from the
	// caller that could redirect it.
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, spec.Env...)
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

// Close kills (SIGKILL, by PID) every process still running and waits for
// them. Stream and lease table are left in the stand-ins (their names are
// unique).
func (h *Harness) Close() {
	for _, p := range h.Procs() {
		if done, _ := p.Exited(); !done {
			h.Logf("killing worker %s (pid %d)", p.Spec.ID, p.PID())
			_ = p.Kill()
		}
	}
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

// Lease is one row of the KCL lease table.
type Lease struct {
	ShardID      string
	AssignedTo   string // "" when released
	Checkpoint   string // sequence number, SHARD_END, or ""
	LeaseTimeout time.Time
}

// Leases reads the lease table (a consistent scan), sorted by shard id.
func (h *Harness) Leases(ctx context.Context) ([]Lease, error) {
	out, err := h.ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(h.App), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("harness: scan lease table %s: %w", h.App, err)
	}
	var ls []Lease
	str := func(it map[string]ddbtypes.AttributeValue, k string) string {
		if v, ok := it[k].(*ddbtypes.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	for _, it := range out.Items {
		l := Lease{ShardID: str(it, "ShardID"), AssignedTo: str(it, "AssignedTo"), Checkpoint: str(it, "Checkpoint")}
		l.LeaseTimeout, _ = time.Parse(time.RFC3339Nano, str(it, "LeaseTimeout"))
		ls = append(ls, l)
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].ShardID < ls[j].ShardID })
	return ls, nil
}

// Owners returns worker id -> shards it holds (leases not yet expired).
func Owners(ls []Lease, now time.Time) map[string][]string {
	m := map[string][]string{}
	for _, l := range ls {
		if l.AssignedTo != "" && l.LeaseTimeout.After(now) {
			m[l.AssignedTo] = append(m[l.AssignedTo], l.ShardID)
		}
	}
	return m
}

// ShardIDs lists the stream's shards.
func (h *Harness) ShardIDs(ctx context.Context) ([]string, error) {
	out, err := h.kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(h.Stream)})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range out.Shards {
		ids = append(ids, aws.ToString(s.ShardId))
	}
	return ids, nil
}

// ErrTimeout is wrapped by WaitFor when the deadline passes.
var ErrTimeout = errors.New("harness: timed out")

// WaitFor polls cond every 200 ms until it returns true, an error, ctx
// ends or timeout passes. what names the condition in the error and log.
func (h *Harness) WaitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	return Poll(ctx, timeout, 200*time.Millisecond, func() (bool, error) {
		ok, err := cond()
		if err == nil && !ok {
			return false, nil
		}
		return ok, err
	}, what)
}

// Poll calls cond every interval until it returns true or an error, ctx
// ends, or timeout passes (an error wrapping ErrTimeout naming what).
func Poll(ctx context.Context, timeout, interval time.Duration, cond func() (bool, error), what string) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("harness: waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %v waiting for %s", ErrTimeout, timeout, what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("harness: waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
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
