package explorer

import (
	"context"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
)

// BenchmarkImpactHub measures the server time of an impact list depth 10
// downstream of each of the estate's 10 hubs, capped at 10,000 results
// (Server.Impact), and of the same list streamed as CSV through the
// handler (JSON encoding and CSV writing included), with the heap the CSV
// request allocates.
func BenchmarkImpactHub(b *testing.B) {
	s, e := benchServer(b)
	hub := func(i int) string { d := e.datasets[i%10]; return "dataset:" + d.Namespace + ":" + d.Name }
	b.Run("list", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		results, truncated := 0, 0
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			im, err := s.Impact(context.Background(), ImpactQuery{NodeID: hub(i), Down: true, Depth: 10, Limit: 10_000})
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
			results += im.Count
			if im.Truncated {
				truncated++
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(results)/float64(b.N), "results/op")
		b.ReportMetric(float64(truncated)/float64(b.N), "truncated/op")
	})
	b.Run("csv", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		var bytes int
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			req := httptest.NewRequest("GET", "/api/lf/v1/impact?direction=down&depth=10&format=csv&nodeId="+hub(i), nil)
			w := httptest.NewRecorder()
			t0 := time.Now()
			s.Handler().ServeHTTP(w, req)
			lat = append(lat, time.Since(t0))
			if w.Code != 200 {
				b.Fatalf("%d %s", w.Code, w.Body.String())
			}
			bytes += w.Body.Len()
		}
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(bytes)/float64(b.N), "csv-bytes/op")
		b.ReportMetric(float64(ms.TotalAlloc-before)/float64(b.N)/1e6, "alloc-MB/op")
	})
	// csvStream is csv written to a writer that keeps nothing (the
	// recorder above keeps the whole body, and its growth is in its
	// alloc-MB/op): what the server itself allocates per CSV request, the
	// gremlin-go reads included.
	b.Run("csvStream", func(b *testing.B) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		var bytes int64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			req := httptest.NewRequest("GET", "/api/lf/v1/impact?direction=down&depth=10&format=csv&nodeId="+hub(i), nil)
			w := &countingWriter{h: http.Header{}}
			s.Handler().ServeHTTP(w, req)
			if w.code != 200 {
				b.Fatalf("status %d", w.code)
			}
			bytes += w.n
		}
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(bytes)/float64(b.N), "csv-bytes/op")
		b.ReportMetric(float64(ms.TotalAlloc-before)/float64(b.N)/1e6, "alloc-MB/op")
	})
}

// countingWriter is an http.ResponseWriter that counts the body's bytes
// and keeps none of them.
type countingWriter struct {
	h    http.Header
	code int
	n    int64
}

func (w *countingWriter) Header() http.Header { return w.h }
func (w *countingWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *countingWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += int64(len(p))
	return len(p), nil
}

// BenchmarkLineageDepth5Time measures a depth-5 lineage (up 5, down 5,
// maxNodes 300) around random datasets with a time filter: asOf in the
// middle of the estate's event times, without and with the stale rule (an
// hour: about 3,600 jobs' edges before the instant).
func BenchmarkLineageDepth5Time(b *testing.B) {
	s, e := benchServer(b)
	asOf := int64(1_700_000_000_000) + int64(e.jobs/2)*1000
	for _, c := range []struct {
		name string
		tf   TimeFilter
	}{
		{"asOf", TimeFilter{MaxFirst: asOf}},
		// A filter that keeps every edge: the cost of filtering itself.
		{"asOfEnd", TimeFilter{MaxFirst: int64(1_700_000_000_000) + int64(e.jobs+1)*1000}},
		{"asOf+stale1h", TimeFilter{MaxFirst: asOf, MinLast: asOf - 3_600_000, StaleBefore: asOf - 3_600_000}},
		{"window", TimeFilter{MaxFirst: asOf, MinLast: asOf - 7_200_000}},
	} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewSource(3))
			lat := make([]time.Duration, 0, b.N)
			nodes, hidden := 0, int64(0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d := e.datasets[rng.Intn(len(e.datasets))]
				t0 := time.Now()
				l, err := s.Lineage(context.Background(), LineageQuery{NodeID: "dataset:" + d.Namespace + ":" + d.Name, Up: 5, Down: 5, MaxNodes: 300, Time: c.tf})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				nodes += len(l.Nodes)
				hidden += l.HiddenEdges
			}
			b.StopTimer()
			b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(nodes)/float64(b.N), "nodes/op")
			b.ReportMetric(float64(hidden)/float64(b.N), "hidden/op")
		})
	}
}

// BenchmarkLanding measures the landing page's background read (recently
// failed jobs, recently changed nodes: scans with an order) and its
// answer from the cache (namespace counts over the index).
func BenchmarkLanding(b *testing.B) {
	s, _ := benchServer(b)
	b.Run("refresh", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if err := s.refreshLanding(context.Background()); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	})
	b.Run("answer", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			w := httptest.NewRecorder()
			t0 := time.Now()
			s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/api/lf/v1/landing", nil))
			lat = append(lat, time.Since(t0))
			if w.Code != 200 {
				b.Fatalf("%d %s", w.Code, w.Body.String())
			}
		}
		b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	})
}
