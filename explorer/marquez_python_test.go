package explorer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/testkit/testenv"
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
	DatasetVersions, DatasetVersion, Sources, Source, Tags, Events, EventsNs struct {
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
		{"list_tags", n.Tags.Status, n.Tags.Route, "GET /api/v1/tags"},
		{"list_events", n.Events.Status, n.Events.Route, "GET /api/v1/events"},
		{"list_events(namespace)", n.EventsNs.Status, n.EventsNs.Route, "GET /api/v1/events/{namespace}"},
	} {
		if c.status != 501 || c.route != c.want {
			t.Errorf("%s: status %d route %q, want 501 naming %q", c.what, c.status, c.route, c.want)
		}
	}
}
