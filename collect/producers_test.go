package collect_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/collect"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// collectorOn serves a collector with one API key on h's stream, on a
// loopback port, for the test's duration.
func collectorOn(t *testing.T, h *harness.Harness, key string) (url string, srv *collect.Server) {
	t.Helper()
	keys, err := collect.ParseKeys(key, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err = collect.New(context.Background(), collect.Config{Stream: h.Stream, Keys: keys, Aggregate: true}, h.Kinesis())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, 10*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("collector: %v", err)
		}
	})
	return "http://" + ln.Addr().String(), srv
}

// waitGraph starts a worker (file sink) and waits until its graph equals
// the reference model's of want, with every record read and none
// dead-lettered.
func waitGraph(ctx context.Context, t *testing.T, h *harness.Harness, want [][]byte) {
	t.Helper()
	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	model := refmodel.Build(want, refmodel.Options{})
	err = h.WaitFor(ctx, 2*time.Minute, "the sink's graph to equal the reference model", func() (bool, error) {
		if done, err := w.Exited(); done {
			return false, fmt.Errorf("worker exited: %w", err)
		}
		g, _, err := harness.ReadSinks(h.SinkPaths()...)
		if err != nil {
			return false, err
		}
		return refmodel.Compare(model, g).Empty() && w.Stats()["events"] >= int64(len(want)), nil
	})
	if err != nil {
		g, _, _ := harness.ReadSinks(h.SinkPaths()...)
		t.Fatalf("%v\n%s", err, refmodel.Compare(model, g))
	}
	if st := w.Stats(); st["invalid"] != 0 {
		t.Errorf("worker dead-lettered %d records", st["invalid"])
	}
	_ = w.Stop(30 * time.Second)
}

// TestOpenLineagePythonClientHTTP: the real openlineage-python client
// (1.54.0, testdata/openlineage-python/requirements.txt) sends the events
// of testdata/openlineage-python/emit.py (a Spark application with a
// completed and a failed SQL job, a Flink stream, a dbt model, a JobEvent,
// a DatasetEvent) with its HTTP transport, api_key auth and gzip
// compression (testdata/producers/python/emit_http.py) to a collector.
// What the stream holds is byte for byte what the client's file transport
// writes for the same program, keyed as the Kinesis transport keys it; a
// worker reads it and its graph equals the reference model's.
func TestOpenLineagePythonClientHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Python client and a worker process; skipped with -short")
	}
	python := testenv.PythonVenv(t, "openlineage-venv", "LINEAGEFLOW_OPENLINEAGE_VENV", "testdata/openlineage-python/requirements.txt", "import openlineage.client.transport.http") // first use: a few minutes of pip
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "colpy")
	if err := h.CreateStream(ctx, 2); err != nil {
		t.Fatal(err)
	}
	key := "python-client-key-0123456789"
	url, _ := collectorOn(t, h, key)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	salt := hex.EncodeToString(rnd[:])
	ns := "colpy-" + salt
	root := testenv.RepoRoot()

	// What the client's file transport writes for the same program.
	ref := filepath.Join(t.TempDir(), "events.ndjson")
	if b, err := exec.Command(python, filepath.Join(root, "testdata", "openlineage-python", "emit.py"), ref, ns, salt).CombinedOutput(); err != nil {
		t.Fatalf("emit.py: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	want := refmodel.SplitNDJSON(raw)

	// A wrong key: the client fails (the transport raises on 401).
	cmd := exec.Command(python, filepath.Join(root, "testdata", "producers", "python", "emit_http.py"), ns, salt)
	cmd.Env = append(os.Environ(), "OPENLINEAGE_URL="+url, "OPENLINEAGE_API_KEY=not-the-key-0123456789")
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "401") {
		t.Fatalf("with a wrong key the client did not fail on 401: %v\n%s", err, b)
	}
	cmd = exec.Command(python, filepath.Join(root, "testdata", "producers", "python", "emit_http.py"), ns, salt)
	cmd.Env = append(os.Environ(), "OPENLINEAGE_URL="+url, "OPENLINEAGE_API_KEY="+key)
	t0 := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("emit_http.py: %v\n%s", err, b)
	}
	t.Logf("the Python client sent %d events over HTTP in %s", len(want), harness.Since(t0))

	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), fmt.Sprintf(`lineageflow_collect_request_encodings_total{encoding="gzip"} %d`, len(want))) {
		t.Errorf("the client's requests were not all gzip:\n%s", m)
	}
	if !strings.Contains(string(m), fmt.Sprintf(`lineageflow_collect_key_requests_total{code="201",key=%q} %d`, collect.NewKey(key).ID, len(want))) {
		t.Errorf("/metrics does not count %d acknowledged requests of the key:\n%s", len(want), m)
	}

	got, kr := readStream(t, h.Kinesis(), h.Stream)
	if len(got) != len(want) {
		t.Fatalf("%d events in the stream, the client emitted %d", len(got), len(want))
	}
	wantSet := map[string]int{}
	for _, w := range want {
		wantSet[string(w)]++
	}
	for _, g := range got {
		if wantSet[string(g.Data)] == 0 {
			t.Errorf("the stream holds an event the file transport did not write:\n%s", g.Data)
		}
		wantSet[string(g.Data)]--
		if pk := replay.PartitionKey(g.Data); g.PartitionKey != pk {
			t.Errorf("partition key %q, the Kinesis transport's is %q", g.PartitionKey, pk)
		}
	}
	t.Logf("stream: %d events in %d Kinesis records", len(got), kr)
	if bytes.Contains(raw, []byte("\r")) {
		t.Fatal("unexpected CR in the client's output")
	}
	waitGraph(ctx, t, h, want)
}

// TestOpenLineageJavaClientHTTP: the real OpenLineage Java client
// (openlineage-java 1.23.0, testdata/producers/java/pom.xml) made by
// Clients.newClient from an openlineage.yml (transport http, api_key,
// gzip: the README's configuration) parses ~300 generated events and sends
// them with its HttpTransport to a collector
// (testdata/producers/java/HttpProducer.java). Every event is
// acknowledged; the stream holds exactly what was sent, keyed as the
// Kinesis transport keys it; the client's round trip leaves the graph
// unchanged; a worker reads the stream and its graph equals the reference
// model's.
func TestOpenLineageJavaClientHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a JVM and a worker process; skipped with -short")
	}
	java, errJ := exec.LookPath("java")
	mvn, errM := exec.LookPath("mvn")
	if errJ != nil || errM != nil {
		if os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") == "1" {
			t.Fatal("java and mvn (Java 17+, Maven 3) are needed: not found in PATH")
		}
		t.Skip("java and mvn not found")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root := testenv.RepoRoot()
	dir := t.TempDir()
	cpFile := filepath.Join(dir, "classpath.txt")
	mv := exec.CommandContext(ctx, mvn, "-B", "-q", "-f", filepath.Join(root, "testdata", "producers", "java", "pom.xml"), "dependency:build-classpath", "-Dmdep.outputFile="+cpFile)
	if out, err := mv.CombinedOutput(); err != nil {
		t.Fatalf("resolving the OpenLineage Java client with Maven: %v\n%s", err, out)
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil || !strings.Contains(string(cp), "openlineage-java-1.23.0.jar") {
		t.Fatalf("classpath %s: %v", cp, err)
	}

	h := harness.ForTest(t, "coljava")
	if err := h.CreateStream(ctx, 2); err != nil {
		t.Fatal(err)
	}
	key := "java-client-key-0123456789"
	url, _ := collectorOn(t, h, key)
	var input [][]byte
	var nd bytes.Buffer
	for _, r := range gen.Generate(gen.Config{Events: 300, MalformedShare: -1, DuplicateShare: -1, Pipelines: 3}) {
		input = append(input, r.Data)
		nd.Write(r.Data)
		nd.WriteByte('\n')
	}
	events := filepath.Join(dir, "events.ndjson")
	yml := filepath.Join(dir, "openlineage.yml")
	if err := os.WriteFile(events, nd.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "transport:\n  type: http\n  url: " + url + "\n  endpoint: /api/v1/lineage\n  compression: gzip\n  auth:\n    type: api_key\n    apiKey: " + key + "\n"
	if err := os.WriteFile(yml, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, java, "-Dfile.encoding=UTF-8", "-cp", strings.TrimSpace(string(cp)),
		filepath.Join(root, "testdata", "producers", "java", "HttpProducer.java"), events, yml)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("done emitted=%d refused=0 failed=0", len(input))) {
		t.Fatalf("HttpProducer: %v\n%s", err, tailString(string(out), 3000))
	}
	t.Logf("the Java client sent %d events over HTTP in %s", len(input), harness.Since(t0))

	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), fmt.Sprintf(`lineageflow_collect_request_encodings_total{encoding="gzip"} %d`, len(input))) {
		t.Errorf("the client's requests were not all gzip:\n%s", m)
	}
	got, kr := readStream(t, h.Kinesis(), h.Stream)
	if len(got) != len(input) {
		t.Fatalf("%d events in the stream, the client emitted %d", len(got), len(input))
	}
	var received [][]byte
	for _, g := range got {
		received = append(received, g.Data)
		if pk := replay.PartitionKey(g.Data); g.PartitionKey != pk {
			t.Errorf("partition key %q, the Kinesis transport's is %q", g.PartitionKey, pk)
		}
	}
	t.Logf("stream: %d events in %d Kinesis records", len(got), kr)
	if d := refmodel.Compare(refmodel.Build(input, refmodel.Options{}), refmodel.Build(received, refmodel.Options{})); !d.Empty() {
		t.Errorf("the Java client's round trip changed the graph:\n%s", d)
	}
	waitGraph(ctx, t, h, received)
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
