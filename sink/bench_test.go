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

	"github.com/lineageflow/lineageflow/internal/testenv"
)

// BenchmarkUpsertBatchedVsSingle measures, in one run against the real
// Gremlin Server, upserted edges/s of the partitioned, batched sink
// (default Writers and BatchRecords) and of one upsert per request (one
// writer, BatchRecords 1, no vertex cache: every vertex and every edge is
// its own request, the way per-event ingestion works), and reports the
// ratio.
//
//	go test ./sink -run '^$' -bench BenchmarkUpsertBatchedVsSingle -benchtime 3x
func BenchmarkUpsertBatchedVsSingle(b *testing.B) {
	ep := testenv.Gremlin(b)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var batchedEdges, singleEdges int
	var batchedTime, singleTime time.Duration
	for i := 0; i < b.N; i++ {
		ns := fmt.Sprintf("bench%d-%d/", time.Now().UnixNano(), i)
		// Batched: 10 windows of ~1,500 edges over 1,000 datasets and 40 jobs.
		w := genWorkloadNS(ns+"b/", uint64(i), 10, 500, 1000, 40)
		records, _ := strconv.Atoi(os.Getenv("SINK_BENCH_RECORDS"))
		n, err := New(Config{Endpoint: ep, Logger: quiet, BatchRecords: records})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for _, bt := range w.batches {
			if err := n.WriteBatch(context.Background(), bt); err != nil {
				b.Fatal(err)
			}
		}
		batchedTime += time.Since(start)
		for _, bt := range w.batches {
			batchedEdges += len(bt.Edges) // edge upserts sent
		}
		n.Close(context.Background())

		// One upsert per request.
		ws := genWorkloadNS(ns+"s/", uint64(i), 2, 100, 100, 10)
		s, err := New(Config{Endpoint: ep, Logger: quiet, Writers: 1, BatchRecords: 1, VertexCacheSize: -1})
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
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
	}
	batched := float64(batchedEdges) / batchedTime.Seconds()
	single := float64(singleEdges) / singleTime.Seconds()
	b.ReportMetric(batched, "batched-edges/s")
	b.ReportMetric(single, "single-edges/s")
	b.ReportMetric(batched/single, "speedup")
}
