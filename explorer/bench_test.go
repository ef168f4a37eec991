package explorer

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	lfgraph "github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
)

// The benchmark estate: a generated layered lineage graph on its own
// Gremlin Server (EXPLORER_BENCH_GREMLIN, default the test stand-in; the
// graph there is replaced), EXPLORER_BENCH_JOBS jobs (default 30,000), each
// reading 5 datasets (mostly recent ones, sometimes one of 10 hubs) and
// writing 2 new ones, with a DERIVES edge per input x output:
// jobs + jobs/3 + 2*jobs vertices (100k at 30k jobs) and 17*jobs edges
// (510k). A marker vertex records the size, so a second run reuses it.

type estate struct {
	jobs     int
	datasets []lineage.Dataset
	jobList  []lineage.Job
}

func genEstate(jobs int) *estate {
	e := &estate{jobs: jobs}
	for i := 0; i < jobs/3; i++ {
		e.newDataset()
	}
	return e
}

func (e *estate) newDataset() lineage.Dataset {
	i := len(e.datasets)
	d := lineage.Dataset{Namespace: "warehouse" + strconv.Itoa(i%20), Name: fmt.Sprintf("db%d.table_%07d", i%50, i)}
	e.datasets = append(e.datasets, d)
	return d
}

// build yields the estate's batches: the source datasets, then the jobs
// with their outputs and edges (deterministic).
func (e *estate) build(yield func(b lineage.Batch) error) error {
	rng := rand.New(rand.NewSource(2))
	var b lineage.Batch
	flush := func() error {
		if len(b.Edges) == 0 {
			return nil
		}
		err := yield(b)
		b = lineage.Batch{Key: "estate"}
		return err
	}
	for i := range e.datasets {
		b.Vertices = append(b.Vertices, lineage.DatasetVertex(e.datasets[i]))
		if len(b.Vertices) >= 2000 {
			b.Edges = nil
			if err := yield(b); err != nil {
				return err
			}
			b = lineage.Batch{Key: "estate"}
		}
	}
	for j := 0; j < e.jobs; j++ {
		job := lineage.Job{Namespace: "pipelines" + strconv.Itoa(j%10), Name: fmt.Sprintf("dag%d.task_%07d", j%100, j)}
		e.jobList = append(e.jobList, job)
		jid := lineage.JobID(job)
		b.Vertices = append(b.Vertices, lineage.JobVertex(job))
		n := len(e.datasets)
		var ins []string
		seen := map[int]bool{}
		for k := 0; k < 5; k++ {
			var idx int
			if k == 0 && rng.Intn(20) == 0 {
				idx = rng.Intn(10) // a hub
			} else {
				lo := max(0, n-3000)
				idx = lo + rng.Intn(n-lo)
			}
			if seen[idx] {
				continue
			}
			seen[idx] = true
			ins = append(ins, lineage.DatasetID(e.datasets[idx]))
		}
		ts := int64(1_700_000_000_000) + int64(j)*1000
		run := fmt.Sprintf("run-%07d", j)
		var outs []string
		for k := 0; k < 2; k++ {
			nd := e.newDataset()
			b.Vertices = append(b.Vertices, lineage.DatasetVertex(nd))
			outs = append(outs, lineage.DatasetID(nd))
		}
		for _, in := range ins {
			b.Edges = append(b.Edges, lineage.NewEdge(lineage.EdgeInputTo, in, jid, ts, ts, run))
			for _, out := range outs {
				b.Edges = append(b.Edges, lineage.NewEdge(lineage.EdgeDerives, in, out, ts, ts, run))
			}
		}
		for _, out := range outs {
			b.Edges = append(b.Edges, lineage.NewEdge(lineage.EdgeOutputs, jid, out, ts, ts, run))
		}
		if len(b.Edges) >= 4000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

func benchJobs() int {
	if v, err := strconv.Atoi(os.Getenv("EXPLORER_BENCH_JOBS")); err == nil && v > 0 {
		return v
	}
	return 30000
}

func benchEndpoint(b *testing.B) string {
	if v := os.Getenv("EXPLORER_BENCH_GREMLIN"); v != "" {
		return v
	}
	return gremlinEndpoint(b)
}

// loadEstate writes the estate unless the marker says it is there.
func loadEstate(b *testing.B, endpoint string, jobs int) *estate {
	b.Helper()
	e := genEstate(jobs)
	marker := "bench:estate:" + strconv.Itoa(jobs)
	g, closeFn, err := lfgraph.Connect(endpoint)
	if err != nil {
		b.Fatal(err)
	}
	defer closeFn()
	n, err := g.V(marker).Count().Next()
	if err != nil {
		b.Fatal(err)
	}
	if c, _ := n.GetInt64(); c == 1 {
		// Already loaded: regenerate the names only.
		if err := e.build(func(lineage.Batch) error { return nil }); err != nil {
			b.Fatal(err)
		}
		return e
	}
	if err := lfgraph.Drop(endpoint); err != nil {
		b.Fatal(err)
	}
	w, err := sink.New(sink.Config{Endpoint: endpoint, Writers: 4, VertexCacheSize: -1, RequestTimeout: 2 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var edges, vertices int
	err = e.build(func(batch lineage.Batch) error {
		edges += len(batch.Edges)
		vertices += len(batch.Vertices)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		return w.WriteBatch(ctx, batch)
	})
	_ = w.Close(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := g.AddV("BenchMarker").Property(gremlingo.T.Id, marker).ToList(); err != nil {
		b.Fatal(err)
	}
	b.Logf("estate loaded: %d vertices, %d edges in %v", vertices, edges, time.Since(start).Round(time.Second))
	return e
}

func percentile(d []time.Duration, p float64) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func benchServer(b *testing.B) (*Server, *estate) {
	ep := benchEndpoint(b)
	e := loadEstate(b, ep, benchJobs())
	d, err := lfgraph.NewDialer(lfgraph.Config{Endpoint: ep})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Dialer: d, IndexRefresh: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	start := time.Now()
	if err := s.RefreshIndex(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Logf("search index load: %v", time.Since(start).Round(time.Millisecond))
	return s, e
}

// BenchmarkLineageDepth5 measures the server time of a depth-5 lineage
// (up 5, down 5) around random datasets of the estate, per node cap.
func BenchmarkLineageDepth5(b *testing.B) {
	s, e := benchServer(b)
	for _, maxNodes := range []int{300, 2000} {
		b.Run("maxNodes="+strconv.Itoa(maxNodes), func(b *testing.B) {
			rng := rand.New(rand.NewSource(3))
			lat := make([]time.Duration, 0, b.N)
			nodes := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d := e.datasets[rng.Intn(len(e.datasets))]
				t0 := time.Now()
				l, err := s.Lineage(context.Background(), LineageQuery{NodeID: "dataset:" + d.Namespace + ":" + d.Name, Up: 5, Down: 5, MaxNodes: maxNodes})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				nodes += len(l.Nodes)
			}
			b.StopTimer()
			b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(nodes)/float64(b.N), "nodes/op")
		})
	}
}

// BenchmarkSearch measures search server time over the estate's index:
// random 3- to 6-character substrings of real names, limit 20.
func BenchmarkSearch(b *testing.B) {
	s, e := benchServer(b)
	entries, err := s.index.snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewSource(4))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := e.datasets[rng.Intn(len(e.datasets))].Name
		l := 3 + rng.Intn(4)
		at := rng.Intn(len(name) - l)
		t0 := time.Now()
		hits, _ := search(entries, name[at:at+l], 20, "")
		lat = append(lat, time.Since(t0))
		if len(hits) == 0 {
			b.Fatalf("no hit for %q", name[at:at+l])
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(entries.entries)), "indexed")
}

// BenchmarkLineageDepth5Phases splits the depth-5 lineage's server time
// (maxNodes 300) into its requests: resolve (one), the level walk (one per
// level, up to 5) and finish (one: degrees, edges, run states), to show
// where the p99 goes.
func BenchmarkLineageDepth5Phases(b *testing.B) {
	s, e := benchServer(b)
	rng := rand.New(rand.NewSource(3))
	var res, walkT, fin []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := e.datasets[rng.Intn(len(e.datasets))]
		ctx := context.Background()
		t0 := time.Now()
		p, err := parseNodeID("dataset:"+d.Namespace+":"+d.Name, false)
		if err != nil {
			b.Fatal(err)
		}
		center, err := s.resolve(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		w := &walk{s: s, max: 300, nodes: map[string]*nodeState{}}
		cid := center.VertexID()
		w.add(cid)
		if err := w.run(ctx, cid, 5, 5); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := w.finish(ctx, center); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		res, walkT, fin = append(res, t1.Sub(t0)), append(walkT, t2.Sub(t1)), append(fin, t3.Sub(t2))
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"resolve", res}, {"walk", walkT}, {"finish", fin}} {
		b.ReportMetric(float64(percentile(m.d, 0.5).Microseconds())/1000, m.name+"-p50-ms")
		b.ReportMetric(float64(percentile(m.d, 0.99).Microseconds())/1000, m.name+"-p99-ms")
	}
}

// BenchmarkIndexLoad compares the search index's full load (every Dataset,
// Job and DatasetAlias id) with its incremental read (the endpoints of
// edges first seen in the last 5 minutes) on the estate, after 100 new
// datasets were written (firstSeen now, namespace bench-new): the cost of
// one refresh before and after the index became incremental.
func BenchmarkIndexLoad(b *testing.B) {
	s, _ := benchServer(b)
	ep := benchEndpoint(b)
	w, err := sink.New(sink.Config{Endpoint: ep, Writers: 1})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UnixMilli()
	job := lineage.Job{Namespace: "bench-new", Name: "job-" + strconv.FormatInt(now, 10)}
	batch := lineage.Batch{Key: "bench-new", Vertices: []lineage.Vertex{lineage.JobVertex(job)}}
	for i := 0; i < 100; i++ {
		d := lineage.Dataset{Namespace: "bench-new", Name: fmt.Sprintf("new_%d_%03d", now, i)}
		batch.Vertices = append(batch.Vertices, lineage.DatasetVertex(d))
		batch.Edges = append(batch.Edges, lineage.NewEdge(lineage.EdgeOutputs, lineage.JobID(job), lineage.DatasetID(d), now, now, "run-new"))
	}
	ctx := context.Background()
	if err := w.WriteBatch(ctx, batch); err != nil {
		b.Fatal(err)
	}
	_ = w.Close(ctx)
	since := now - (5 * time.Minute).Milliseconds()
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := s.index.load(ctx, s.graph); err != nil {
				b.Fatal(err)
			}
		}
		nm, _ := s.index.snapshot(ctx)
		b.ReportMetric(float64(len(nm.entries)+len(nm.extra)), "entries")
	})
	b.Run("count", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := countVertices(ctx, s.graph); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("incremental", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for i := 0; i < b.N; i++ {
			// A fresh index each time: every new edge's endpoints are added.
			ix := newIndex()
			var err error
			if n, err = ix.loadNew(ctx, s.graph, since); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n), "new-entries")
	})
}
