package sink

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// BenchmarkUpsertBatchedVsSingle measures, in one run against the real
// Gremlin Server, upserted edges/s of the partitioned, batched sink
// (default Writers and BatchRecords) with each traversal shape, and of one
// upsert per request (one writer, BatchRecords 1, no vertex cache, chained
// shape: every vertex and every edge is its own request, the way
// per-event ingestion works), and reports the ratios. "speedup" is the
// ratio of the default shape. Each iteration runs both shapes (in
// alternating order) on fresh namespaces and drops its graph afterwards
// (untimed), so the server's heap does not fill up over -count runs.
//
//	go test ./sink -run '^$' -bench BenchmarkUpsertBatchedVsSingle -benchtime 5x -count 3
//	# SINK_BENCH_RECORDS=25 overrides BatchRecords of the batched modes
func BenchmarkUpsertBatchedVsSingle(b *testing.B) {
	ep := testenv.Gremlin(b)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	records, _ := strconv.Atoi(os.Getenv("SINK_BENCH_RECORDS"))
	batchedEdges := map[string]int{}
	batchedTime := map[string]time.Duration{}
	var singleEdges int
	var singleTime time.Duration
	for i := 0; i < b.N; i++ {
		ns := fmt.Sprintf("bench%d-%d/", time.Now().UnixNano(), i)
		// Batched: 10 windows of ~1,500 edges over 1,000 datasets and 40 jobs.
		order := shapes
		if i%2 == 1 {
			order = []string{shapes[1], shapes[0]}
		}
		for _, shape := range order {
			w := genWorkloadNS(ns+shape+"/", uint64(i), 10, 500, 1000, 40)
			n, err := New(Config{Endpoint: ep, Logger: quiet, BatchRecords: records, TraversalShape: shape})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			for _, bt := range w.batches {
				if err := n.WriteBatch(context.Background(), bt); err != nil {
					b.Fatal(err)
				}
			}
			batchedTime[shape] += time.Since(start)
			for _, bt := range w.batches {
				batchedEdges[shape] += len(bt.Edges) // edge upserts sent
			}
			n.Close(context.Background())
		}

		// One upsert per request.
		ws := genWorkloadNS(ns+"s/", uint64(i), 2, 100, 100, 10)
		s, err := New(Config{Endpoint: ep, Logger: quiet, Writers: 1, BatchRecords: 1, VertexCacheSize: -1,
			TraversalShape: ShapeChained})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for _, bt := range ws.batches {
			for _, e := range bt.Edges {
				one := Batch{Key: bt.Key, Edges: bt.Edges[:0:0]}
				one.Edges = append(one.Edges, e)
				for _, v := range bt.Vertices {
					if v.ID == e.OutV || v.ID == e.InV {
						one.Vertices = append(one.Vertices, v)
					}
				}
				if err := s.WriteBatch(context.Background(), one); err != nil {
					b.Fatal(err)
				}
				singleEdges++
			}
		}
		singleTime += time.Since(start)
		s.Close(context.Background())
		b.StopTimer()
		dropNS(b, ep, ns)
		b.StartTimer()
	}
	single := float64(singleEdges) / singleTime.Seconds()
	b.ReportMetric(single, "single-edges/s")
	for _, shape := range shapes {
		batched := float64(batchedEdges[shape]) / batchedTime[shape].Seconds()
		b.ReportMetric(batched, shape+"-edges/s")
		b.ReportMetric(batched/single, "speedup-"+shape)
		if shape == DefaultTraversalShape {
			b.ReportMetric(batched/single, "speedup")
		}
	}
}

// dropNS drops every vertex (and so every edge) whose namespace starts
// with ns.
func dropNS(t testing.TB, endpoint, ns string) {
	t.Helper()
	g, closeFn, err := graph.Connect(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if _, err := g.V().Has(lineage.PropNamespace, gremlingo.TextP.StartingWith(ns)).Drop().ToList(); err != nil {
		t.Fatal(err)
	}
}
