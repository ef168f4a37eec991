package explorer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	lfgraph "github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// startServe builds and runs `lineageflow serve` on endpoint (a free
// port) and returns its base URL.
func startServe(t testing.TB, endpoint string, args ...string) (string, int) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lineageflow")
	build := exec.Command("go", "build", "-o", bin, "../cmd/lineageflow")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "-gremlin-endpoint", endpoint, "-http-addr", "127.0.0.1:0", "-log-format", "json"}, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == "explorer listening" {
				if u, ok := rec["url"].(string); ok {
					select {
					case urls <- strings.TrimSuffix(u, "/"):
					default:
					}
				}
			}
		}
	}()
	select {
	case u := <-urls:
		return u, cmd.Process.Pid
	case <-time.After(60 * time.Second):
		t.Fatal("lineageflow serve did not say where it listens within 60s")
	}
	return "", 0
}

// TestMarquezPythonClient drives a running `lineageflow serve` with the
// real marquez-python client (every read call it has that the graph can
// answer) and checks what it read.
func TestMarquezPythonClient(t *testing.T) {
	ep := gremlinEndpoint(t)
	python := testenv.PythonVenv(t, "marquez-venv", "LINEAGEFLOW_MARQUEZ_VENV", "explorer/testdata/marquez-python/requirements.txt", "import marquez_client")
	loadFixture(t, ep)
	base, _ := startServe(t, ep)
	out, err := exec.Command(python, filepath.Join("testdata", "marquez-python", "check.py"),
		base, fxNS, fxClean.Name, fxETL.Name, fxRunFail).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("check.py: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got struct {
		Namespaces []string `json:"namespaces"`
		Namespace  string   `json:"namespace"`
		Datasets   []string `json:"datasets"`
		Jobs       []string `json:"jobs"`
		Dataset    struct {
			Name, Namespace string
			Fields          []string
		} `json:"dataset"`
		Job struct {
			Name           string
			Inputs         []string
			Outputs        []string
			LatestRunState string
		} `json:"job"`
		Runs          [][2]string       `json:"runs"`
		RunByID       map[string]string `json:"runById"`
		Run           string            `json:"run"`
		ColumnLineage []string          `json:"columnLineage"`
		Lineage       []string          `json:"lineage"`
		LineageEdges  []string          `json:"lineageEdges"`
		notImpl
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", what, got, want)
		}
	}
	check("namespaces", got.Namespaces, []string{fxNS, fxOdd.Namespace})
	check("namespace", got.Namespace, fxNS)
	check("datasets", got.Datasets, []string{"clean", "ghost", fxLong.Name, "raw", "report"})
	check("jobs", got.Jobs, []string{"agg", "etl"})
	check("dataset", got.Dataset.Name+"|"+got.Dataset.Namespace+"|"+strings.Join(got.Dataset.Fields, ","), "clean|ns1|id,v")
	check("job inputs", got.Job.Inputs, []string{fxOdd.Name, "raw"})
	check("job outputs", got.Job.Outputs, []string{"clean", fxLong.Name})
	check("job latest run (no health properties: the newest Run vertex)", got.Job.LatestRunState, "FAILED")
	check("runs", got.Runs, [][2]string{{fxRunFail, "FAILED"}, {fxRunOK, "COMPLETED"}})
	check("run", got.Run, "FAILED")
	check("lineage nodes", got.Lineage, []string{dsNode(fxClean), dsNode(fxRaw), dsNode(fxReport),
		dsNode(fxOdd), jobNode(fxAgg), jobNode(fxETL)})
	edges := []string{
		dsNode(fxClean) + " -> " + jobNode(fxAgg), dsNode(fxRaw) + " -> " + jobNode(fxETL),
		dsNode(fxOdd) + " -> " + jobNode(fxETL), jobNode(fxAgg) + " -> " + dsNode(fxReport),
		jobNode(fxETL) + " -> " + dsNode(fxClean),
	}
	sort.Strings(edges)
	check("lineage edges (dataset -> job -> dataset, no DERIVES)", got.LineageEdges, edges)
	check("column lineage", got.ColumnLineage, []string{"datasetField:ns1:clean:id", "datasetField:ns1:raw:id"})
	check("run by id", got.RunByID, map[string]string{fxRunFail: "FAILED", fxRunOK: "COMPLETED"})
	got.notImpl.check(t, fxNS)
}

// notImpl are the read methods the server answers 501: each must name its
// route.
type notImpl struct {
	DatasetVersions, DatasetVersion, Sources, Source, Events, EventsNs struct {
		Status int
		Route  string
	}
}

func (n notImpl) check(t *testing.T, ns string) {
	t.Helper()
	for _, c := range []struct {
		what   string
		status int
		route  string
		want   string
	}{
		{"list_dataset_versions", n.DatasetVersions.Status, n.DatasetVersions.Route, "GET /api/v1/namespaces/{namespace}/datasets/{dataset}/versions"},
		{"get_dataset_version", n.DatasetVersion.Status, n.DatasetVersion.Route, "GET /api/v1/namespaces/{namespace}/datasets/{dataset}/versions/{version}"},
		{"list_sources", n.Sources.Status, n.Sources.Route, "GET /api/v1/sources"},
		{"get_source", n.Source.Status, n.Source.Route, "GET /api/v1/sources/{source}"},
		{"list_events", n.Events.Status, n.Events.Route, "GET /api/v1/events"},
		{"list_events(namespace)", n.EventsNs.Status, n.EventsNs.Route, "GET /api/v1/events/{namespace}"},
	} {
		if c.status != 501 || c.route != c.want {
			t.Errorf("%s: status %d route %q, want 501 naming %q", c.what, c.status, c.route, c.want)
		}
	}
}

// loadEvents drops the graph and writes the graph the pipeline writes for
// records (the reference model's, which the processor's tests hold it to,
// -runs all, the default: every run recorded) with the sink.
func loadEvents(t testing.TB, endpoint string, records [][]byte) {
	t.Helper()
	if err := lfgraph.Drop(endpoint); err != nil {
		t.Fatal(err)
	}
	g := refmodel.Build(records, refmodel.Options{})
	if g.Invalid != 0 {
		t.Fatalf("%d invalid records", g.Invalid)
	}
	n, err := sink.New(sink.Config{Endpoint: endpoint, Writers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	b := lineage.Batch{Key: "events"}
	for _, v := range g.Vertices {
		b.Vertices = append(b.Vertices, v)
	}
	for _, e := range g.Edges {
		b.Edges = append(b.Edges, e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.WriteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// recoveredEvents: job build_mart FAILs (run ...0002, "disk full") then
// COMPLETEs (run ...0003); job clean never fails (run ...0004); job flaky
// only FAILs (run ...0005).
func recoveredEvents() [][]byte {
	ev := func(typ, run, ts, job, extra string) []byte {
		return []byte(`{"eventType":"` + typ + `","eventTime":"2026-03-01T` + ts + `Z","run":{"runId":"` + run + `"` + extra +
			`},"job":{"namespace":"spark://emr-prod","name":"daily_orders.` + job + `","facets":{"tags":{"tags":[{"key":"team","value":"orders","source":"CONFIG"}]}}},` +
			`"inputs":[{"namespace":"spark://emr-prod","name":"raw.orders"}],"outputs":[{"namespace":"spark://emr-prod","name":"mart.` + job + `",` +
			`"facets":{"schema":{"fields":[{"name":"id","type":"long"}]},"columnLineage":{"fields":{"id":{"inputFields":[{"namespace":"spark://emr-prod","name":"raw.orders","field":"id"}]}}}}}],` +
			`"producer":"https://example.com/p","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`)
	}
	const r = "0196a000-0000-7000-8000-00000000000"
	fail := `,"facets":{"errorMessage":{"message":"disk full","programmingLanguage":"python"}}`
	return [][]byte{
		ev("START", r+"2", "01:00:00", "build_mart", ""),
		ev("FAIL", r+"2", "01:05:00", "build_mart", fail),
		ev("START", r+"3", "02:00:00", "build_mart", `,"facets":{"parent":{"run":{"runId":"0196a000-0000-7000-8000-0000000000aa"},"job":{"namespace":"spark://emr-prod","name":"daily_orders"}}}`),
		ev("COMPLETE", r+"3", "02:10:00", "build_mart", ""),
		ev("START", r+"4", "01:00:00", "clean", ""),
		ev("COMPLETE", r+"4", "01:02:00", "clean", ""),
		ev("START", r+"5", "03:00:00", "flaky", ""),
		ev("FAIL", r+"5", "03:01:00", "flaky", fail),
	}
}

// TestMarquezPythonClientRecoveredJob: a job that FAILed then COMPLETEd,
// read with the real marquez-python client: latestRun is the COMPLETE
// (by eventTime, not the newest Run vertex), its runs list both runs and
// get_job_run answers each; a job that never failed has its COMPLETE as
// latestRun, and every run id of every job is readable (every run is
// recorded); tags are listed. The
// explorer's own lineage shows the recovered job healthy (last run
// COMPLETE) with its failed run in its history, the failing one FAIL.
func TestMarquezPythonClientRecoveredJob(t *testing.T) {
	ep := gremlinEndpoint(t)
	python := testenv.PythonVenv(t, "marquez-venv", "LINEAGEFLOW_MARQUEZ_VENV", "explorer/testdata/marquez-python/requirements.txt", "import marquez_client")
	loadEvents(t, ep, recoveredEvents())
	base, _ := startServe(t, ep)
	const ns, r = "spark://emr-prod", "0196a000-0000-7000-8000-00000000000"
	read := func(job, dataset, run string) map[string]any {
		out, err := exec.Command(python, filepath.Join("testdata", "marquez-python", "check.py"), base, ns, dataset, job, run).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("check.py: %v\n%s", err, ee.Stderr)
			}
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return got
	}
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", what, got, want)
		}
	}
	got := read("daily_orders.build_mart", "mart.build_mart", r+"3")
	job := got["job"].(map[string]any)
	check("build_mart latestRun", []any{job["latestRunState"], job["latestRunId"]}, []any{"COMPLETED", r + "3"})
	check("build_mart runs", got["runs"], []any{[]any{r + "3", "COMPLETED"}, []any{r + "2", "FAILED"}})
	check("build_mart runs by id", got["runById"], map[string]any{r + "3": "COMPLETED", r + "2": "FAILED"})
	check("build_mart tags", job["tags"], []any{"team"})
	check("list_tags", got["tagNames"], []any{"team"})
	got = read("daily_orders.clean", "mart.clean", r+"4")
	job = got["job"].(map[string]any)
	check("clean latestRun", []any{job["latestRunState"], job["latestRunId"]}, []any{"COMPLETED", r + "4"})
	check("clean run", got["run"], "COMPLETED")
	check("clean runs", got["runs"], []any{[]any{r + "4", "COMPLETED"}})
	check("clean runs by id", got["runById"], map[string]any{r + "4": "COMPLETED"})
	got = read("daily_orders.flaky", "raw.orders", r+"5")
	job = got["job"].(map[string]any)
	check("flaky latestRun", []any{job["latestRunState"], job["latestRunId"]}, []any{"FAILED", r + "5"})
	check("flaky runs by id", got["runById"], map[string]any{r + "5": "FAILED"})
	check("flaky run", got["run"], "FAILED")

	// Marquez routes the client has no method for.
	getJSON := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	var mj MQJob
	getJSON("/api/v1/namespaces/"+url.PathEscape(ns)+"/jobs/daily_orders.build_mart", &mj)
	if mj.ParentJobName == nil || *mj.ParentJobName != "daily_orders" {
		t.Errorf("parentJobName %v, want daily_orders", mj.ParentJobName)
	}
	var md struct {
		Facets struct {
			Schema struct{ Fields []struct{ Name string } }
		}
	}
	getJSON("/api/v1/namespaces/"+url.PathEscape(ns)+"/datasets/mart.build_mart", &md)
	if f := md.Facets.Schema.Fields; len(f) != 1 || f[0].Name != "id" {
		t.Errorf("dataset facets.schema %v", f)
	}
	var sr struct {
		TotalCount int
		Results    []MQSearchResult
	}
	getJSON("/api/v1/search?q=mart.build_mart&namespace="+url.QueryEscape(ns), &sr)
	if sr.TotalCount != 1 || len(sr.Results) != 1 || sr.Results[0].UpdatedAt == nil || *sr.Results[0].UpdatedAt != "2026-03-01T02:10:00.000Z" {
		t.Errorf("search in %s: %+v, want mart.build_mart updated at 02:10", ns, sr)
	}
	var mn MQNamespace
	getJSON("/api/v1/namespaces/"+url.PathEscape(ns), &mn)
	// The namespace's lineage edges come from clean's COMPLETE (01:02) and
	// build_mart's (02:10).
	if mn.CreatedAt != "2026-03-01T01:02:00.000Z" || mn.UpdatedAt != "2026-03-01T02:10:00.000Z" {
		t.Errorf("namespace created %s updated %s, want first and last seen 01:02 and 02:10", mn.CreatedAt, mn.UpdatedAt)
	}
	var aj struct {
		Jobs []struct{ Namespace, Name string }
	}
	getJSON("/api/v1/jobs", &aj)
	var names []string
	for _, j := range aj.Jobs {
		names = append(names, j.Namespace+"/"+j.Name)
	}
	check("all jobs", names, []string{ns + "/daily_orders", ns + "/daily_orders.build_mart", ns + "/daily_orders.clean", ns + "/daily_orders.flaky"})
	getJSON("/api/v1/search?q=build_mart&namespace=elsewhere", &sr)
	if sr.TotalCount != 0 {
		t.Errorf("search in another namespace: %d hits, want 0", sr.TotalCount)
	}

	// The explorer's own API.
	for _, c := range []struct {
		job, state string
		failed     bool
	}{{"build_mart", "COMPLETE", true}, {"clean", "COMPLETE", false}, {"flaky", "FAIL", true}} {
		resp, err := http.Get(base + "/api/lf/v1/lineage?nodeId=" + url.QueryEscape("job:"+ns+":daily_orders."+c.job))
		if err != nil {
			t.Fatal(err)
		}
		var l Lineage
		err = json.NewDecoder(resp.Body).Decode(&l)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range l.Nodes {
			if n.Type == "JOB" && n.Name == "daily_orders."+c.job {
				if n.LastRunState == nil || *n.LastRunState != c.state || n.HasFailedRuns != c.failed {
					t.Errorf("%s: last run %v failed runs %v, want %s %v", c.job, n.LastRunState, n.HasFailedRuns, c.state, c.failed)
				}
			}
		}
	}
}
