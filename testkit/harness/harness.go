// Package harness runs lineageflow end to end, as processes, against the
// local stand-ins (kinesalite, dynalite, Gremlin Server): it builds the
// binary once, creates a stream and replays records into it, starts
// `lineageflow run` worker processes with their logs in files, stops them
// with SIGTERM or SIGKILL (by PID), restarts one on its data dir, splits a
// shard, reads the KCL lease table and the file sinks, and waits for
// conditions by polling with a deadline.
//
// It serves the integration tests (the KCL worker's in source/), the fault
// matrix (tools/e2e) and the end-to-end bench (tools/bench-e2e), and works
// from a plain main program: everything takes an io.Writer for its log,
// nothing needs a *testing.T ([ForTest] is the convenience for tests).
//
// harness.go holds the stand-ins' endpoints, the build and the [Harness]
// itself; stream.go the stream and the replay into it, split.go the shard
// split, processes.go the worker processes, leases.go the lease table,
// graph.go the file sinks read back as a graph (and the generated records
// it is compared against), wait.go the polling, and testing.go the
// helpers for tests.
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
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/lineageflow/lineageflow/internal/awsconf"
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
