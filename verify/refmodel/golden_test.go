package refmodel_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the generated fixtures and the golden files in testdata/")

const testdata = "../../testdata"

// Generated fixtures: name -> generator config. The .ndjson (one record
// per line) and .records.tsv (partition key, malformed kind, duplicate, one
// line per record) are rewritten from gen with -rewrite; without it the
// test checks that gen still produces them byte for byte.
var generated = []struct {
	name string
	cfg  gen.Config
}{
	{"spark-pipeline", gen.Config{Seed: 14, Events: 275, Pipelines: 4, MalformedShare: 0.03, FailShare: 0.15}},
}

// Fixtures with a golden graph (<name>.expected.json, policy strict).
var golden = []string{"handwritten", "spark-pipeline", "explicit-lineage"}

func TestGoldenGeneratedFixtures(t *testing.T) {
	t.Parallel()
	for _, f := range generated {
		t.Run(f.name, func(t *testing.T) {
			var ndjson, tsv bytes.Buffer
			for _, r := range gen.Generate(f.cfg) {
				ndjson.Write(r.Data)
				ndjson.WriteByte('\n')
				fmt.Fprintf(&tsv, "%s\t%s\t%t\n", r.PartitionKey, r.Malformed, r.Duplicate)
			}
			checkFile(t, f.name+".ndjson", ndjson.Bytes())
			checkFile(t, f.name+".records.tsv", tsv.Bytes())
		})
	}
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, name := range golden {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(testdata, name+".ndjson"))
			if err != nil {
				t.Fatal(err)
			}
			got := refmodel.Build(refmodel.SplitNDJSON(data), refmodel.Options{})
			checkFile(t, name+".expected.json", got.GoldenJSON())
			if *rewrite {
				return
			}
			_, want, err := refmodel.LoadFixture(testdata, name)
			if err != nil {
				t.Fatal(err)
			}
			if d := refmodel.Compare(want, got); !d.Empty() {
				t.Errorf("graph differs from %s.expected.json:\n%s", name, d)
			}
			if want.Events != got.Events || want.Invalid != got.Invalid || want.Duplicates != got.Duplicates {
				t.Errorf("counts differ: want %d/%d/%d, got %d/%d/%d", want.Events, want.Invalid, want.Duplicates,
					got.Events, got.Invalid, got.Duplicates)
			}
		})
	}
}

func checkFile(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(testdata, name)
	if *rewrite {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./verify/refmodel -run Golden -rewrite)", err)
	}
	if !bytes.Equal(want, got) {
		t.Fatalf("%s is out of date (run go test ./verify/refmodel -run Golden -rewrite and review the diff)", path)
	}
}

// The hand-written fixture, checked against counts worked out by hand
// (see docs/testdata.md), not only against its golden file.
func TestHandwrittenByHand(t *testing.T) {
	t.Parallel()
	records, _, err := refmodel.LoadFixture(testdata, "handwritten")
	if err != nil {
		t.Fatal(err)
	}
	g := refmodel.Build(records, refmodel.Options{}).Lineage()
	if g.Events != 26 || g.Invalid != 6 || g.Duplicates != 1 || len(g.Vertices) != 15 || len(g.Edges) != 20 {
		t.Fatalf("events %d invalid %d duplicates %d vertices %d edges %d, want 26 6 1 15 20",
			g.Events, g.Invalid, g.Duplicates, len(g.Vertices), len(g.Edges))
	}
	for _, v := range g.Vertices {
		for _, bad := range []string{"ghost_only", "datalake-tmp", "datalake-quarantine", "売上_集計"} {
			if strings.Contains(v.ID, bad) {
				t.Errorf("vertex %s from a run that did not commit or from an invalid record", v.ID)
			}
		}
	}
	clean := lineage.JobID(lineage.Job{Namespace: "spark://emr-prod", Name: "daily_orders.clean_orders"})
	staged := lineage.DatasetID(lineage.Dataset{Namespace: "glue://catalog", Name: "staging.orders_clean"})
	e := g.Edges[lineage.EdgeID(lineage.EdgeOutputs, clean, staged)]
	if e.FirstSeen != 1767247210000 || e.LastSeen != 1767247212500 || e.LastRunID != "01940000-0000-7000-8000-000000000001" {
		t.Errorf("two COMPLETEs: %+v", e)
	}
	merge := lineage.JobID(lineage.Job{Namespace: "spark://emr-prod", Name: "daily_orders.merge_customers"})
	dim := lineage.DatasetID(lineage.Dataset{Namespace: "glue://catalog", Name: "staging.customers_dim"})
	if e := g.Edges[lineage.EdgeID(lineage.EdgeInputTo, dim, merge)]; e.FirstSeen != 1767247262345 {
		t.Errorf("+02:00 offset, microseconds: %+v", e)
	}
	if _, ok := g.Edges[lineage.EdgeID(lineage.EdgeDerives, dim, dim)]; ok {
		t.Error("DERIVES self-loop")
	}
}

// The records sidecar agrees with what the model refuses and dedups.
func TestSparkPipelineFixture(t *testing.T) {
	t.Parallel()
	records, want, err := refmodel.LoadFixture(testdata, "spark-pipeline")
	if err != nil {
		t.Fatal(err)
	}
	tsv, err := os.ReadFile(filepath.Join(testdata, "spark-pipeline.records.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(tsv), "\n"), "\n")
	if len(lines) != len(records) {
		t.Fatalf("%d records, %d sidecar lines", len(records), len(lines))
	}
	kinds := map[string]int{}
	dups := 0
	for i, l := range lines {
		f := strings.Split(l, "\t")
		malformed, dup := f[1], f[2] == "true"
		if dup {
			dups++
		}
		if malformed != "" {
			kinds[malformed]++
		}
		if err := refmodel.Valid(records[i]); (err == nil) != (malformed == "") {
			t.Errorf("line %d (%q): Valid = %v", i+1, malformed, err)
		}
	}
	for _, k := range gen.MalformedKinds {
		if kinds[k] == 0 {
			t.Errorf("no %s record in the fixture", k)
		}
	}
	invalid := 0
	for _, n := range kinds {
		invalid += n
	}
	if want.Invalid != invalid || want.Duplicates != dups {
		t.Errorf("expected.json counts invalid %d duplicates %d, sidecar %d %d", want.Invalid, want.Duplicates, invalid, dups)
	}
	for id := range want.Vertices {
		if strings.Contains(id, "datalake-quarantine") {
			t.Errorf("vertex %s from a malformed record", id)
		}
	}
	t.Logf("%d records, %d duplicates, invalid %v, %d vertices, %d edges", len(records), dups, kinds, len(want.Vertices), len(want.Edges))
}

// Producer retries never change the graph: dropping every Duplicate record
// of a generated stream gives the same graph, under both policies.
func TestDuplicatesDoNotMatter(t *testing.T) {
	t.Parallel()
	seeds := []int64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		recs := gen.Generate(gen.Config{Seed: seed, Events: 3000, DuplicateShare: 0.3})
		var all, unique [][]byte
		dups := 0
		for _, r := range recs {
			all = append(all, r.Data)
			if r.Duplicate {
				dups++
			} else {
				unique = append(unique, r.Data)
			}
		}
		for _, policy := range []string{"strict", "any"} {
			a := refmodel.Build(all, refmodel.Options{Policy: policy})
			u := refmodel.Build(unique, refmodel.Options{Policy: policy})
			if d := refmodel.Compare(u, a); !d.Empty() {
				t.Fatalf("seed %d %s: duplicates change the graph:\n%s", seed, policy, d)
			}
			if a.Duplicates != dups || u.Duplicates != 0 || a.Invalid != u.Invalid {
				t.Fatalf("seed %d: duplicates %d (want %d), without them %d; invalid %d vs %d", seed, a.Duplicates, dups, u.Duplicates, a.Invalid, u.Invalid)
			}
		}
	}
}

// Every malformed kind is produced and refused.
func TestMalformedRefused(t *testing.T) {
	t.Parallel()
	recs := gen.Generate(gen.Config{Seed: 5, Events: 2000, MalformedShare: 0.05})
	kinds := map[string]int{}
	var data [][]byte
	for _, r := range recs {
		data = append(data, r.Data)
		if r.Malformed == "" {
			continue
		}
		kinds[r.Malformed]++
		if err := refmodel.Valid(r.Data); err == nil {
			t.Errorf("%s record accepted: %.200s", r.Malformed, r.Data)
		}
	}
	for _, k := range gen.MalformedKinds {
		if kinds[k] == 0 {
			t.Errorf("no %s record", k)
		}
	}
	n := 0
	for _, c := range kinds {
		n += c
	}
	if g := refmodel.Build(data, refmodel.Options{}); g.Invalid != n {
		t.Errorf("Invalid = %d, want %d", g.Invalid, n)
	}
}
