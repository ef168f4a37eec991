package explorer

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	lfgraph "github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// The fixture graph, written with the project's own sink (mergeV/mergeE):
//
//	raw -INPUT_TO-> etl -OUTPUTS-> clean -INPUT_TO-> agg -OUTPUTS-> report
//	raw -DERIVES-> clean -DERIVES-> report
//	odd(weird names) -INPUT_TO-> etl ; etl -OUTPUTS-> long (100 KB name)
//
// plus, written directly (the model's labels, not yet written by the
// sink): Run vertices of etl (one COMPLETE, one FAIL that wrote ghost) and
// agg, and a DatasetAlias "clean_v" -ALIAS_OF-> clean.
var (
	fxNS     = "ns1"
	fxRaw    = lineage.Dataset{Namespace: fxNS, Name: "raw"}
	fxClean  = lineage.Dataset{Namespace: fxNS, Name: "clean"}
	fxReport = lineage.Dataset{Namespace: fxNS, Name: "report"}
	fxGhost  = lineage.Dataset{Namespace: fxNS, Name: "ghost"}
	fxOdd    = lineage.Dataset{Namespace: "s3://bucket:x", Name: `a/b:c "q" 'p' é 😀 %2F`}
	fxLong   = lineage.Dataset{Namespace: fxNS, Name: "long-" + strings.Repeat("x", 100<<10)}
	fxETL    = lineage.Job{Namespace: fxNS, Name: "etl"}
	fxAgg    = lineage.Job{Namespace: fxNS, Name: "agg"}
)

func dsNode(d lineage.Dataset) string { return "dataset:" + d.Namespace + ":" + d.Name }
func jobNode(j lineage.Job) string    { return "job:" + j.Namespace + ":" + j.Name }

// loadFixture drops the graph at endpoint and writes the fixture.
func loadFixture(t testing.TB, endpoint string) {
	t.Helper()
	if err := lfgraph.Drop(endpoint); err != nil {
		t.Fatal(err)
	}
	n, err := sink.New(sink.Config{Endpoint: endpoint, Writers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	var b lineage.Batch
	b.Key = "fixture"
	for _, d := range []lineage.Dataset{fxRaw, fxClean, fxReport, fxOdd, fxLong} {
		b.Vertices = append(b.Vertices, lineage.DatasetVertex(d))
	}
	for _, j := range []lineage.Job{fxETL, fxAgg} {
		b.Vertices = append(b.Vertices, lineage.JobVertex(j))
	}
	e := func(label, o, i string, ts int64) {
		b.Edges = append(b.Edges, lineage.NewEdge(label, o, i, ts, ts+1000, "run-"+label))
	}
	D, J := lineage.DatasetID, lineage.JobID
	e(lineage.EdgeInputTo, D(fxRaw), J(fxETL), 1000)
	e(lineage.EdgeOutputs, J(fxETL), D(fxClean), 1000)
	e(lineage.EdgeInputTo, D(fxClean), J(fxAgg), 2000)
	e(lineage.EdgeOutputs, J(fxAgg), D(fxReport), 2000)
	e(lineage.EdgeDerives, D(fxRaw), D(fxClean), 1000)
	e(lineage.EdgeDerives, D(fxClean), D(fxReport), 2000)
	e(lineage.EdgeInputTo, D(fxOdd), J(fxETL), 3000)
	e(lineage.EdgeOutputs, J(fxETL), D(fxLong), 3000)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.WriteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	writeModelExtras(t, endpoint)
}

// Fixture run ids.
const (
	fxRunOK   = "0e89b60a-d80d-42ae-a12b-bd79ae1fb576"
	fxRunFail = "1c3a9b7e-5f2d-4e8a-9b1c-2d3e4f5a6b7c"
	fxRunAgg  = "2d4b0c8f-6a3e-4f9b-8c2d-3e4f5a6b7c8d"
)

func writeModelExtras(t testing.TB, endpoint string) {
	t.Helper()
	g, closeFn, err := lfgraph.Connect(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	T := gremlingo.T
	// A Run vertex names its job and the datasets it read and wrote in
	// properties: a run has no edge.
	run := func(id, job, state string, started, ended int64, errMsg string, ins, outs []lineage.Dataset) {
		p := map[any]any{T.Id: vertexID("run:", id, ""), T.Label: "Run"}
		ids := func(ds []lineage.Dataset) []string {
			out := []string{}
			for _, d := range ds {
				out = append(out, lineage.DatasetID(d))
			}
			return out
		}
		tr := g.MergeV(p).Property("runId", id).Property("jobNamespace", fxNS).Property("jobName", job).
			Property("job", lineage.JobID(lineage.Job{Namespace: fxNS, Name: job})).
			Property("state", state).Property("state_ts", ended).Property("startedAt", started).Property("endedAt", ended).
			Property("durationMs", ended-started).Property("updatedAt", ended).Property("errorMessage", errMsg)
		for _, l := range []struct {
			k, n string
			ds   []lineage.Dataset
		}{{lineage.PropInputs, lineage.PropInputCount, ins}, {lineage.PropOutputs, lineage.PropOutputCount, outs}} {
			if len(l.ds) > 0 {
				tr = tr.Property(l.k, lineage.RunDatasetList(ids(l.ds))).Property(l.n, int64(len(l.ds)))
			}
		}
		if id == fxRunFail {
			// The processing_engine and externalQuery run facets.
			tr = tr.Property(lineage.PropProcessingEngine, "spark").Property(lineage.PropProcessingEngineVersion, "3.5.1").
				Property(lineage.PropOpenlineageAdapterVersion, "1.40.0").Property(lineage.PropExternalQueryID, "job_42").
				Property(lineage.PropExternalQuerySource, "bigquery")
		}
		if _, err := tr.ToList(); err != nil {
			t.Fatal(err)
		}
	}
	run(fxRunOK, "etl", "COMPLETE", 1000, 1500, "", []lineage.Dataset{fxRaw}, []lineage.Dataset{fxClean})
	run(fxRunFail, "etl", "FAIL", 4000, 4200, "boom", []lineage.Dataset{fxRaw}, []lineage.Dataset{fxGhost})
	run(fxRunAgg, "agg", "COMPLETE", 2000, 2600, "", nil, nil)
	// The ghost dataset is only in the failed run's outputs (and a vertex
	// of its own, which no lineage edge touches).
	if _, err := g.MergeV(map[any]any{T.Id: lineage.DatasetID(fxGhost), T.Label: "Dataset"}).
		Property("namespace", fxNS).Property("name", "ghost").ToList(); err != nil {
		t.Fatal(err)
	}
	edge := func(label, o, i string) {
		if _, err := g.MergeE(map[any]any{T.Label: label, gremlingo.Direction.Out: o, gremlingo.Direction.In: i}).ToList(); err != nil {
			t.Fatal(err)
		}
	}
	alias := aliasVertexID("warehouse", "clean_v")
	if _, err := g.MergeV(map[any]any{T.Id: alias, T.Label: "DatasetAlias"}).
		Property("namespace", "warehouse").Property("name", "clean_v").Property("type", "VIEW").ToList(); err != nil {
		t.Fatal(err)
	}
	edge("ALIAS_OF", alias, lineage.DatasetID(fxClean))
	// Column lineage as the model writes it: raw.id -> clean.id -> report.total.
	field := func(d lineage.Dataset, f string) string {
		id := "field:" + lineage.DatasetID(d) + "#" + f
		if _, err := g.MergeV(map[any]any{T.Id: id, T.Label: "DatasetField"}).Property("namespace", d.Namespace).
			Property("name", d.Name).Property("field", f).ToList(); err != nil {
			t.Fatal(err)
		}
		edge("FIELD_OF", id, lineage.DatasetID(d))
		return id
	}
	rawID, cleanID, total := field(fxRaw, "id"), field(fxClean, "id"), field(fxReport, "total")
	colEdge := func(o, i, tt, td string) {
		if _, err := g.MergeE(map[any]any{T.Label: "COLUMN_DERIVES", gremlingo.Direction.Out: o, gremlingo.Direction.In: i}).
			Property("transformationType", tt).Property("transformationDescription", td).ToList(); err != nil {
			t.Fatal(err)
		}
	}
	colEdge(rawID, cleanID, "IDENTITY", "copied")
	colEdge(cleanID, total, "AGGREGATION", "count")
	// Facets as the model writes them.
	if _, err := g.V(lineage.DatasetID(fxClean)).Property("description", "cleaned rows").Property("description_ts", int64(5)).
		Property("schema", `[{"name":"id","type":"BIGINT","description":"key"},{"name":"v","type":"STRING"}]`).ToList(); err != nil {
		t.Fatal(err)
	}
}

// newTestServer starts a Server on the stand-in graph (fixture loaded) and
// an httptest server around it.
func newTestServer(t testing.TB, endpoint string, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	d, err := lfgraph.NewDialer(lfgraph.Config{Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dialer = d
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close() })
	return s, hs
}

func gremlinEndpoint(t testing.TB) string { return testenv.Gremlin(t) }

// writeEdge upserts one more edge with the sink.
func writeEdge(t testing.TB, endpoint string, e lineage.Edge) {
	t.Helper()
	n, err := sink.New(sink.Config{Endpoint: endpoint, Writers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.WriteBatch(ctx, lineage.Batch{Key: "extra", Edges: []lineage.Edge{e}}); err != nil {
		t.Fatal(err)
	}
}

// writeVertexAndEdge upserts a vertex and an edge with the sink.
func writeVertexAndEdge(t testing.TB, endpoint string, v lineage.Vertex, e lineage.Edge) {
	t.Helper()
	n, err := sink.New(sink.Config{Endpoint: endpoint, Writers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.WriteBatch(ctx, lineage.Batch{Key: "extra", Vertices: []lineage.Vertex{v}, Edges: []lineage.Edge{e}}); err != nil {
		t.Fatal(err)
	}
}
