package collect_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// TestAirflowDagsTest: Apache Airflow 3 with
// apache-airflow-providers-openlineage (testdata/producers/airflow)
// runs the DAG testdata/producers/airflow/dags/lineageflow_orders.py with
// `airflow dags test`, its OpenLineage listener sending through a
// collector (OPENLINEAGE_URL, OPENLINEAGE_API_KEY, as an Airflow
// deployment sets them), Kinesis and a worker: the graph holds the DAG's
// job and both task jobs CHILD_OF it (the provider gives a
// PythonOperator's Assets no datasets: see the DAG's docstring). Airflow takes
// minutes to install and ~a minute to initialise its database, so this
// test runs only with LINEAGEFLOW_AIRFLOW_TEST=1 (`make test-airflow`),
// outside CI.
func TestAirflowDagsTest(t *testing.T) {
	if os.Getenv("LINEAGEFLOW_AIRFLOW_TEST") != "1" {
		t.Skip("Airflow: set LINEAGEFLOW_AIRFLOW_TEST=1 (make test-airflow)")
	}
	python := testenv.PythonVenv(t, "airflow-venv", "LINEAGEFLOW_AIRFLOW_VENV", "testdata/producers/airflow/requirements.txt", "import airflow.providers.openlineage")
	bin := filepath.Dir(python)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "colair")
	if err := h.CreateStream(ctx, 2); err != nil {
		t.Fatal(err)
	}
	key := "airflow-key-0123456789abcdef"
	url, _ := collectorOn(t, h, key)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	ns := "colair-" + hex.EncodeToString(rnd[:])
	home := t.TempDir()
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"AIRFLOW_HOME="+home, "AIRFLOW__CORE__LOAD_EXAMPLES=False",
		"AIRFLOW__CORE__DAGS_FOLDER="+filepath.Join(testenv.RepoRoot(), "testdata", "producers", "airflow", "dags"),
		"AIRFLOW__OPENLINEAGE__NAMESPACE="+ns, "OPENLINEAGE_URL="+url, "OPENLINEAGE_API_KEY="+key)
	for _, args := range [][]string{{"airflow", "db", "migrate"}, {"airflow", "dags", "test", "lineageflow_orders", "2026-01-02"}} {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, args[0]), args[1:]...)
		cmd.Dir, cmd.Env = home, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, tailString(string(out), 4000))
		}
	}
	got, _ := readStream(t, h.Kinesis(), h.Stream)
	var events [][]byte
	for _, g := range got {
		events = append(events, g.Data)
		ev, err := lineage.Decode(g.Data)
		if err != nil {
			t.Fatalf("an Airflow event the worker would refuse: %v", err)
		}
		t.Logf("%s %s/%s in=%d out=%d parent=%v", ev.Type, ev.Job.Namespace, ev.Job.Name, len(ev.Inputs), len(ev.Outputs), ev.Parent != nil)
	}
	if len(events) < 4 {
		t.Fatalf("%d events from Airflow, want the DAG run's and both tasks'", len(events))
	}
	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(30 * time.Second) }()
	dag := lineage.JobID(lineage.Job{Namespace: ns, Name: "lineageflow_orders"})
	var last string
	err = h.WaitFor(ctx, 2*time.Minute, "DAG and tasks linked in the graph", func() (bool, error) {
		g, _, err := harness.ReadSinks(h.SinkPaths()...)
		if err != nil {
			return false, err
		}
		children := map[string]bool{}
		for _, e := range g.Edges {
			if e.Label == lineage.EdgeChildOf && e.InV == dag {
				children[e.OutV] = true
			}
		}
		last = fmt.Sprint(children)
		return children[lineage.JobID(lineage.Job{Namespace: ns, Name: "lineageflow_orders.extract"})] &&
			children[lineage.JobID(lineage.Job{Namespace: ns, Name: "lineageflow_orders.load"})], nil
	})
	if err != nil {
		t.Fatalf("%v (children of %s: %s)", err, dag, last)
	}
}
