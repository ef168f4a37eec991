package oljava_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.CleanupBuild()
	os.Exit(code)
}

// skipOrFail skips the test, or fails it under LINEAGEFLOW_REQUIRE_STANDINS=1
// (CI installs Java 17 and Maven for Gremlin Server, so the producer can
// run there too).
func skipOrFail(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// TestJavaClientKinesisTransport is issue 13's "real Java client with its
// Kinesis transport against kinesalite": the real-event corpus
// (testdata/real) goes through the OpenLineage Java client 1.23.0
// (parsing, its KinesisTransport's partition keys and serialisation) and
// the real KPL 0.15.12 (native kinesis_producer, aggregation on) into
// kinesalite; a real `lineageflow run` worker reads the stream into a
// Gremlin Server of the test's own. Checked: the Java client refuses only
// events it cannot parse (zone-less eventTime), every accepted event
// arrives once, keyed as the transport keys it, and KPL-aggregated (fewer
// Kinesis records than events, aggregates of several events); the worker
// de-aggregates all of them (its records counter), dead-letters none, and
// the graph is exactly the reference model's of what arrived. The KPL
// talks only to the test's TLS proxy (Kinesis) and STS stand-in.
func TestJavaClientKinesisTransport(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("the KPL jar carries kinesis_producer for linux-x86_64 and linux-aarch64 only, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if testing.Short() {
		t.Skip("starts two JVMs and the KPL; skipped with -short")
	}
	java, errJ := exec.LookPath("java")
	mvn, errM := exec.LookPath("mvn")
	if errJ != nil || errM != nil {
		skipOrFail(t, "java and mvn (Java 17+, Maven 3) are needed to run the OpenLineage Java client: not found in PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "oljava")
	gremlin := testenv.PrivateGremlin(t) // the whole graph is compared: no other test's vertices
	dir := t.TempDir()

	cp := classpath(ctx, t, mvn, dir)
	lines, input := corpus(t, dir)

	kin := newKinesisProxy(t, h.Env.KinesisEndpoint)
	sts := newSTS(t)
	if err := h.CreateStream(ctx, 2); err != nil {
		t.Fatal(err)
	}
	props := filepath.Join(dir, "kpl.properties")
	kinPort, stsPort := port(t, kin.srv.URL), port(t, sts.srv.URL)
	// KPL settings (the transport's `properties`, see
	// https://github.com/awslabs/amazon-kinesis-producer/blob/master/java/amazon-kinesis-producer-sample/default_config.properties):
	// every endpoint on 127.0.0.1, the proxies' self-signed certificates
	// accepted, no CloudWatch metrics. TempDirectory is where the KPL
	// extracts its 80 MB native binary (reused across runs by its hash).
	err := os.WriteFile(props, []byte(strings.Join([]string{
		"KinesisEndpoint=127.0.0.1", "KinesisPort=" + kinPort,
		"StsEndpoint=127.0.0.1", "StsPort=" + stsPort,
		"CloudwatchEndpoint=127.0.0.1", "CloudwatchPort=" + stsPort,
		"VerifyCertificate=false", "MetricsLevel=none",
		"AggregationEnabled=true", "LogLevel=warning",
		"TempDirectory=" + filepath.Join(os.TempDir(), "lineageflow-kpl-native"),
	}, "\n")+"\n"), 0o644)
	if err != nil {
		t.Fatal(err)
	}

	// The Java client sends the corpus.
	t0 := time.Now()
	out := runProducer(ctx, t, java, cp, input, props, h.Stream)
	t.Logf("Java client + KPL: %d emitted, %d refused, in %s; Kinesis calls %v; STS calls %d",
		len(out.emitted), len(out.refused), harness.Since(t0), kin.calls(), sts.getCallerIdentity())
	for n, why := range out.refused {
		// The Java client parses eventTime as a ZonedDateTime: an event
		// without a zone (older Python client, Marquez samples; lineageflow
		// reads it as UTC) cannot be sent with it. Nothing else may fail.
		if !zoneless.Match(lines[n-1]) || !strings.Contains(why, "ZonedDateTime") {
			t.Errorf("line %d refused by the Java client: %s", n, why)
		}
	}
	if len(out.emitted) < 40 {
		t.Fatalf("only %d events emitted by the Java client, want 40+", len(out.emitted))
	}
	if u := sts.unexpected(); len(u) > 0 {
		t.Errorf("the KPL called the STS/CloudWatch stand-in for more than GetCallerIdentity: %v", u)
	}
	if sts.getCallerIdentity() == 0 {
		t.Error("the KPL never asked STS GetCallerIdentity (0.15.12 does, for the stream ARN): is this the KPL?")
	}
	if kin.calls()["Kinesis_20131202.PutRecords"] == 0 {
		t.Fatal("the KPL made no PutRecords call through the proxy")
	}

	// What arrived: every accepted event once, keyed by the transport,
	// KPL-aggregated.
	got := readStream(ctx, t, h)
	t.Logf("stream: %d Kinesis records (%d KPL aggregates, largest %d events) hold %d events",
		got.kinesisRecords, got.aggregates, got.largest, len(got.events))
	if len(got.events) != len(out.emitted) {
		t.Fatalf("%d events in the stream, %d emitted", len(got.events), len(out.emitted))
	}
	if got.aggregates == 0 || got.largest < 2 || got.kinesisRecords >= len(got.events) {
		t.Errorf("not KPL-aggregated: %d Kinesis records, %d aggregates (largest %d events) for %d events",
			got.kinesisRecords, got.aggregates, got.largest, len(got.events))
	}
	for i, ev := range got.events {
		if want := transportKey(t, ev.Data); ev.PartitionKey != want {
			t.Errorf("event %d: partition key %q, the transport's rule gives %q", i, ev.PartitionKey, want)
		}
	}
	t.Logf("%d child-run events on another shard than their parent job's own events (1.23.0 keys a run by its own job)", crossShardChildren(got))
	// The Java client parses and re-serialises each event: what arrived
	// must give the graph the corpus lines it accepted give.
	var accepted, received [][]byte
	for _, n := range out.emitted {
		accepted = append(accepted, lines[n-1])
	}
	for _, ev := range got.events {
		received = append(received, ev.Data)
	}
	want := refmodel.Build(received, refmodel.Options{})
	if d := refmodel.Compare(refmodel.Build(accepted, refmodel.Options{}), want); !d.Empty() {
		t.Errorf("the Java client's round trip changed the graph:\n%s", d)
	}

	// A real worker reads the stream into Gremlin.
	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Sink: "gremlin:" + gremlin})
	if err != nil {
		t.Fatal(err)
	}
	expected := verify.Expected{Vertices: want.Vertices, Edges: want.Edges}
	var rep *verify.Report
	err = h.WaitFor(ctx, 3*time.Minute, "the reference graph in Gremlin", func() (bool, error) {
		if done, err := w.Exited(); done {
			return false, fmt.Errorf("worker exited: %w", err)
		}
		snap, err := graph.Dump(gremlin, 30*time.Second)
		if err != nil {
			return false, nil
		}
		rep = verify.Compare(expected, snap)
		return rep.OK() && w.Stats()["records"] >= int64(len(got.events)), nil
	})
	if err != nil {
		if rep != nil {
			t.Log(rep.String())
		}
		t.Fatalf("%v (worker stats %v)", err, w.Stats())
	}
	if err := w.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	st := w.Stats()
	if st["records"] != int64(len(got.events)) || st["invalid"] != 0 {
		t.Errorf("worker: %d records (want %d: every event of every aggregate), %d invalid (want 0); stats %v",
			st["records"], len(got.events), st["invalid"], st)
	}
	db, err := processor.OpenDB(w.DataDir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var dls []checkpoint.DeadLetter
	if err := checkpoint.ListDeadLetters(db, func(d checkpoint.DeadLetter) error { dls = append(dls, d); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(dls) != 0 {
		t.Errorf("%d dead letters, want none: %+v", len(dls), dls)
	}
	t.Logf("graph in Gremlin = reference: %d vertices, %d edges; worker stats: records %d events %d duplicates %d edges_emitted %d",
		rep.ExpectedVertices, rep.ExpectedEdges, st["records"], st["events"], st["duplicates"], st["edges_emitted"])
}

// zoneless matches an eventTime without a zone offset.
var zoneless = regexp.MustCompile(`"eventTime"\s*:\s*"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?"`)

// classpath resolves pom.xml's dependencies (Maven Central, cached in
// ~/.m2) and returns the classpath.
func classpath(ctx context.Context, t *testing.T, mvn, dir string) string {
	t.Helper()
	outFile := filepath.Join(dir, "classpath.txt")
	cmd := exec.CommandContext(ctx, mvn, "-B", "-q", "-f", "pom.xml", "dependency:build-classpath", "-Dmdep.outputFile="+outFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		skipOrFail(t, fmt.Sprintf("resolving the OpenLineage Java client and the KPL with Maven failed (pre-fetch with `mvn -f testkit/oljava/pom.xml dependency:go-offline`): %v\n%s", err, tail(out, 3000)))
	}
	b, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	cp := strings.TrimSpace(string(b))
	if !strings.Contains(cp, "amazon-kinesis-producer-0.15.12.jar") || !strings.Contains(cp, "openlineage-java-1.23.0.jar") {
		t.Fatalf("classpath lacks the KPL or the client: %s", cp)
	}
	return cp
}

// corpus writes the file the producer reads and returns its lines (index
// n-1 is line n of testdata/real/events.ndjson): the lines the reference
// model accepts (the rest are the Flink expected-event templates that no
// reading accepts; TestRealEvents covers them). The dbt expected-event
// files give every runId as the matcher "{{ any(result) }}", which the
// Java client cannot parse (runId is a UUID): such a runId becomes a
// name-based UUID of the source file and the run's job (the parent facet's
// run: its job), i.e. one run per job per dbt invocation, as dbt gives
// them; those lines are re-encoded, every other line is sent verbatim. A
// refused line is left empty (the producer skips it), so the numbering
// stays the corpus'.
func corpus(t *testing.T, dir string) ([][]byte, string) {
	t.Helper()
	root := testenv.RepoRoot()
	data, err := os.ReadFile(filepath.Join(root, "testdata/real/events.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	sources := readSources(t, filepath.Join(root, "testdata/real/SOURCES"))
	lines := refmodel.SplitNDJSON(data)
	var b bytes.Buffer
	for i, l := range lines {
		if refmodel.Valid(l) == nil {
			if l, err = uuidRunIDs(l, sources[i+1]); err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
		} else {
			l = nil
		}
		lines[i] = l
		b.Write(l)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, "events.ndjson")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return lines, path
}

// readSources maps line numbers to source files (testdata/real/SOURCES:
// "<n>\t<repo>@<commit>:<path>[<i>]"; the array index is dropped).
func readSources(t *testing.T, path string) map[int]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]string{}
	for _, l := range strings.Split(string(b), "\n") {
		n, src, ok := strings.Cut(l, "\t")
		if i, err := strconv.Atoi(n); ok && err == nil {
			if j := strings.LastIndexByte(src, '['); j > 0 && strings.HasSuffix(src, "]") {
				src = src[:j]
			}
			m[i] = src
		}
	}
	return m
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// uuidRunIDs gives the run, and the parent facet's run and root run, a
// name-based UUID of (source, their job) where their runId is not a UUID.
// A line with only UUID runIds is returned as it is.
func uuidRunIDs(line []byte, source string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil {
		return nil, err
	}
	changed := false
	fix := func(run, job any) {
		r, ok := run.(map[string]any)
		if !ok {
			return
		}
		if id, _ := r["runId"].(string); id == "" || uuidRE.MatchString(id) {
			return
		}
		j, _ := job.(map[string]any)
		r["runId"] = nameUUID(fmt.Sprintf("%s|%v|%v", source, j["namespace"], j["name"]))
		changed = true
	}
	fix(ev["run"], ev["job"])
	if run, ok := ev["run"].(map[string]any); ok {
		facets, _ := run["facets"].(map[string]any)
		if parent, ok := facets["parent"].(map[string]any); ok {
			fix(parent["run"], parent["job"])
			if root, ok := parent["root"].(map[string]any); ok {
				fix(root["run"], root["job"])
			}
		}
	}
	if !changed {
		return line, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// nameUUID is a version-5-shaped UUID from the SHA-1 of s.
func nameUUID(s string) string {
	h := sha1.Sum([]byte("lineageflow-oljava:" + s))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// producerOutput is what Producer.java reported.
type producerOutput struct {
	emitted []int          // line numbers
	refused map[int]string // line number -> why
}

// runProducer runs Producer.java (Java's source launcher) in its own
// process group, with only the environment it needs: the stand-ins' static
// credentials for the AWS default chain, no instance metadata lookups.
func runProducer(ctx context.Context, t *testing.T, java, cp, input, props, stream string) producerOutput {
	t.Helper()
	// -Dfile.encoding=UTF-8: the transport sends eventAsJson.getBytes(),
	// the platform charset, which on Java 17 follows the locale: with none
	// (C/POSIX, as here) every non-ASCII character of an event arrives as
	// '?' (seen: the corpus' "myjob.buggy_task🕷" became a different job,
	// "myjob.buggy_task?"). Java 18+ defaults to UTF-8.
	cmd := exec.CommandContext(ctx, java, "-Dfile.encoding=UTF-8", "-cp", cp, "Producer.java", input, props, stream, testenv.Region)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"AWS_ACCESS_KEY_ID=" + testenv.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + testenv.SecretAccessKey,
		"AWS_REGION=" + testenv.Region, "AWS_EC2_METADATA_DISABLED=true"}
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		cmd.Env = append(cmd.Env, "JAVA_HOME="+jh)
	}
	// The KPL's native kinesis_producer is a child of the JVM: on a
	// timeout the whole group (ours) is killed, by its id.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // nothing of the group outlives the test
	}
	if err != nil {
		t.Fatalf("Producer.java: %v\nstdout:\n%s\nstderr:\n%s", err, tail(stdout.Bytes(), 3000), tail(stderr.Bytes(), 6000))
	}
	out := producerOutput{refused: map[int]string{}}
	done := false
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		switch {
		case f[0] == "done":
			done = true
			if !strings.Contains(sc.Text(), " outstanding=0") {
				t.Fatalf("Producer.java: %s", sc.Text())
			}
		case len(f) == 3 && (f[0] == "emitted" || f[0] == "refused"):
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("Producer.java: bad line %q", sc.Text())
			}
			if f[0] == "emitted" {
				out.emitted = append(out.emitted, n)
			} else {
				out.refused[n] = f[2]
			}
		default:
			t.Fatalf("Producer.java: unexpected output %q", sc.Text())
		}
	}
	if !done {
		t.Fatalf("Producer.java: no done line\n%s\nstderr:\n%s", stdout.String(), tail(stderr.Bytes(), 6000))
	}
	if strings.Contains(stderr.String(), "Failed to send to Kinesis") {
		t.Errorf("the transport logged a failed send:\n%s", tail(stderr.Bytes(), 6000))
	}
	return out
}

// streamContent is what the stream holds, read back with GetRecords.
type streamContent struct {
	kinesisRecords int
	aggregates     int // Kinesis records that are KPL aggregates
	largest        int // events in the largest aggregate
	events         []kpl.Record
	shards         []string // shards[i]: the shard of events[i]
}

// readStream reads every shard from TRIM_HORIZON to its end and
// de-aggregates with internal/kpl.
func readStream(ctx context.Context, t *testing.T, h *harness.Harness) streamContent {
	t.Helper()
	shards, err := h.ShardIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var c streamContent
	for _, sh := range shards {
		it, err := h.Kinesis().GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(h.Stream),
			ShardId: aws.String(sh), ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for iter != nil {
			out, err := h.Kinesis().GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Records) == 0 {
				break // kinesalite: everything put so far was read
			}
			for _, r := range out.Records {
				c.kinesisRecords++
				users, err := kpl.Deaggregate(r.Data)
				switch {
				case err == nil:
					c.aggregates++
					c.largest = max(c.largest, len(users))
					c.events = append(c.events, users...)
					for range users {
						c.shards = append(c.shards, sh)
					}
				case errors.Is(err, kpl.ErrNotAggregated):
					c.events = append(c.events, kpl.Record{PartitionKey: aws.ToString(r.PartitionKey), Data: r.Data})
					c.shards = append(c.shards, sh)
				default:
					t.Fatalf("shard %s seq %s: %v", sh, aws.ToString(r.SequenceNumber), err)
				}
			}
			iter = out.NextShardIterator
		}
	}
	return c
}

// crossShardChildren counts the events with a parent facet whose parent
// job has events of its own in the stream on another shard.
func crossShardChildren(c streamContent) int {
	type ev struct {
		Job struct{ Namespace, Name string }
		Run struct {
			Facets struct {
				Parent *struct {
					Job struct{ Namespace, Name string }
				}
			}
		}
	}
	parsed := make([]ev, len(c.events))
	jobShards := map[string]map[string]bool{}
	for i, e := range c.events {
		_ = json.Unmarshal(e.Data, &parsed[i])
		j := parsed[i].Job.Namespace + "/" + parsed[i].Job.Name
		if jobShards[j] == nil {
			jobShards[j] = map[string]bool{}
		}
		jobShards[j][c.shards[i]] = true
	}
	n := 0
	for i, e := range parsed {
		if p := e.Run.Facets.Parent; p != nil {
			for sh := range jobShards[p.Job.Namespace+"/"+p.Job.Name] {
				if sh != c.shards[i] {
					n++
					break
				}
			}
		}
	}
	return n
}

// transportKey is the partition key openlineage-java 1.23.0's
// KinesisTransport gives an event: "run:" + the job's namespace/name for a
// RunEvent, "dataset:" + the dataset's for a DatasetEvent, "job:" + the
// job's for a JobEvent. (The later io.openlineage:transports-kinesis keys a
// RunEvent by its parent facet's root job first, then its parent job.)
func transportKey(t *testing.T, data []byte) string {
	t.Helper()
	type ref struct{ Namespace, Name string }
	var ev struct {
		Run     *json.RawMessage
		Job     *ref
		Dataset *ref
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatalf("an event in the stream is not JSON: %v: %.200s", err, data)
	}
	switch {
	case ev.Run != nil && ev.Job != nil:
		return "run:" + ev.Job.Namespace + "/" + ev.Job.Name
	case ev.Dataset != nil:
		return "dataset:" + ev.Dataset.Namespace + "/" + ev.Dataset.Name
	case ev.Job != nil:
		return "job:" + ev.Job.Namespace + "/" + ev.Job.Name
	}
	t.Fatalf("an event in the stream is neither a run, dataset nor job event: %.200s", data)
	return ""
}

// kinesisProxy is a TLS front for kinesalite (which the KPL cannot reach:
// it speaks HTTPS only), counting the calls by X-Amz-Target.
type kinesisProxy struct {
	srv *httptest.Server
	mu  sync.Mutex
	n   map[string]int
}

func newKinesisProxy(t *testing.T, endpoint string) *kinesisProxy {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("kinesalite endpoint %q: want http://127.0.0.1:port (%v)", endpoint, err)
	}
	p := &kinesisProxy{n: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.n[r.Header.Get("X-Amz-Target")]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *kinesisProxy) calls() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.n))
	for k, v := range p.n {
		out[k] = v
	}
	return out
}

// stsStandin answers STS GetCallerIdentity (the KPL 0.15 asks it for the
// account of the stream ARN before its first PutRecords, and its native
// process dies when the call fails: "Failed to get StreamARN using STS
// GetCallerIdentity") with kinesalite's account, 000000000000. Anything
// else (CloudWatch shares its port) is recorded and refused.
type stsStandin struct {
	srv   *httptest.Server
	mu    sync.Mutex
	gci   int
	other []string
}

func newSTS(t *testing.T) *stsStandin {
	t.Helper()
	s := &stsStandin{}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.Method == http.MethodPost && r.Form.Get("Action") == "GetCallerIdentity" {
			s.gci++
			w.Header().Set("Content-Type", "text/xml")
			_, _ = w.Write([]byte(`<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>` +
				`<Arn>arn:aws:iam::000000000000:user/local</Arn><UserId>AIDALOCAL</UserId><Account>000000000000</Account>` +
				`</GetCallerIdentityResult><ResponseMetadata><RequestId>00000000-0000-0000-0000-000000000000</RequestId></ResponseMetadata></GetCallerIdentityResponse>`))
			return
		}
		s.other = append(s.other, fmt.Sprintf("%s %s target=%q action=%q", r.Method, r.URL.Path, r.Header.Get("X-Amz-Target"), r.Form.Get("Action")))
		http.Error(w, "not an STS stand-in call", http.StatusBadRequest)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *stsStandin) getCallerIdentity() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gci
}

func (s *stsStandin) unexpected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]string(nil), s.other...)
	sort.Strings(out)
	return out
}

// port returns the port of an httptest URL.
func port(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// tail returns the last n bytes of b.
func tail(b []byte, n int) string {
	if len(b) > n {
		return "..." + string(b[len(b)-n:])
	}
	return string(b)
}
