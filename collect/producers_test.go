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
	neturl "net/url"
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
	t.Parallel() // own stream, collector and worker: runs beside the other end-to-end tests
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
	t.Parallel() // own stream, collector and worker: runs beside the other end-to-end tests
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

// TestDbtOL: a real dbt project (testdata/producers/dbt/project: two seeds,
// two staging models and a mart joining them) built into DuckDB by
// `dbt-ol run` (dbt-core 1.10 + dbt-duckdb + openlineage-dbt 1.54.0,
// testdata/producers/dbt/requirements.txt), its events sent through a
// collector (OPENLINEAGE_URL, OPENLINEAGE_API_KEY, as dbt-ol reads them),
// Kinesis and a worker writing to Gremlin Server; then `lineageflow serve`
// (the explorer) must show the mart's lineage: its job reading both
// staging models, and the column lineage dbt-ol gives (total <- amount).
func TestDbtOL(t *testing.T) {
	t.Parallel() // own stream, collector and worker: runs beside the other end-to-end tests
	if testing.Short() {
		t.Skip("runs dbt, a worker and the explorer; skipped with -short")
	}
	gremlin := testenv.Gremlin(t)
	python := testenv.PythonVenv(t, "dbt-venv", "LINEAGEFLOW_DBT_VENV", "testdata/producers/dbt/requirements.txt", "import dbt.adapters.duckdb, openlineage.common.provider.dbt") // first use: a few minutes of pip
	venvBin := filepath.Dir(python)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "coldbt")
	if err := h.CreateStream(ctx, 2); err != nil {
		t.Fatal(err)
	}
	key := "dbt-ol-key-0123456789abcdef"
	url, _ := collectorOn(t, h, key)

	// The project in a directory of the test's own (dbt writes target/, logs/).
	dir := t.TempDir()
	src := filepath.Join(testenv.RepoRoot(), "testdata", "producers", "dbt", "project")
	if out, err := exec.Command("cp", "-r", src+"/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	db := filepath.Join(dir, "shop.duckdb")
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	ns := "coldbt-" + hex.EncodeToString(rnd[:])
	env := append(os.Environ(), "PATH="+venvBin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"DBT_PROFILES_DIR="+dir, "DBT_DUCKDB_PATH="+db, "DBT_SEND_ANONYMOUS_USAGE_STATS=false",
		"OPENLINEAGE_URL="+url, "OPENLINEAGE_API_KEY="+key, "OPENLINEAGE_NAMESPACE="+ns)
	for _, args := range [][]string{{"dbt", "seed"}, {"dbt-ol", "run"}} {
		cmd := exec.CommandContext(ctx, filepath.Join(venvBin, args[0]), args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, tailString(string(out), 3000))
		}
		if args[0] == "dbt-ol" && !strings.Contains(string(out), "Emitted 8 OpenLineage events") {
			t.Fatalf("dbt-ol did not emit the 8 events (a START and COMPLETE per model and for the run):\n%s", tailString(string(out), 3000))
		}
	}
	got, _ := readStream(t, h.Kinesis(), h.Stream)
	var events [][]byte
	for _, g := range got {
		events = append(events, g.Data)
	}
	if len(events) != 8 {
		t.Fatalf("%d events in the stream, dbt-ol emitted 8", len(events))
	}

	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Sink: "gremlin:" + gremlin})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(30 * time.Second) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	explorer := ln.Addr().String()
	ln.Close()
	serve := exec.Command(h.Bin, "serve", "-gremlin-endpoint", gremlin, "-http-addr", explorer)
	var serveLog bytes.Buffer
	serve.Stdout, serve.Stderr = &serveLog, &serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = serve.Process.Signal(os.Interrupt); _ = serve.Wait() }()

	dsNS := "duckdb://" + db
	mart := "dataset:" + dsNS + ":shop.main.customer_orders"
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + explorer + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var body string
	err = h.WaitFor(ctx, 2*time.Minute, "the mart's lineage in the explorer", func() (bool, error) {
		if done, err := w.Exited(); done {
			return false, fmt.Errorf("worker exited: %w", err)
		}
		var code int
		code, body = get("/api/lf/v1/lineage?nodeId=" + urlQuery(mart) + "&up=2&down=0")
		return code == 200 && strings.Contains(body, "shop.main.stg_customers") && strings.Contains(body, "shop.main.stg_orders") &&
			strings.Contains(body, "shop.main.lineageflow_shop.customer_orders"), nil
	})
	if err != nil {
		t.Fatalf("%v\nlast answer: %s\nexplorer log: %s", err, tailString(body, 2000), tailString(serveLog.String(), 2000))
	}
	code, cols := get("/api/lf/v1/column-lineage?nodeId=" + urlQuery("datasetField:"+dsNS+":shop.main.customer_orders:total"))
	if code != 200 || !strings.Contains(cols, "amount") {
		t.Errorf("column lineage of customer_orders.total: %d %s", code, tailString(cols, 2000))
	}
	if st := w.Stats(); st["invalid"] != 0 {
		t.Errorf("the worker dead-lettered %d of dbt-ol's events", st["invalid"])
	}
}

func urlQuery(s string) string { return neturl.QueryEscape(s) }
