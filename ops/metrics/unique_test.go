package metrics_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/ops/metrics"
	"github.com/lineageflow/lineageflow/sink"
)

// TestUniqueWrites: lineage_sink_unique_writes_total counts each vertex
// and edge id once per window, whatever the number of batches that carry
// it (a resend, another shard sealing the same window), again in another
// window, and not for failed batches.
func TestUniqueWrites(t *testing.T) {
	mx := metrics.New(metrics.Config{})
	mem := sink.NewMemory()
	fail := false
	mem.Fail = func(sink.Batch) error {
		if fail {
			return context.DeadlineExceeded
		}
		return nil
	}
	w := mx.WrapSink(mem)
	a := lineage.Vertex{ID: "a", Label: lineage.LabelDataset, Namespace: "n", Name: "a"}
	j := lineage.Vertex{ID: "j", Label: lineage.LabelJob, Namespace: "n", Name: "j"}
	e := lineage.Edge{ID: "a-j", Label: lineage.EdgeInputTo, OutV: "a", InV: "j", FirstSeen: 1, LastSeen: 1}
	batch := func(key string) sink.Batch {
		return sink.Batch{Key: key, Vertices: []lineage.Vertex{a, j}, Edges: []lineage.Edge{e}}
	}
	send := func(b sink.Batch) {
		_ = w.WriteBatch(context.Background(), b)
	}
	srv := httptest.NewServer(mx.Handler())
	defer srv.Close()
	check := func(wantV, wantE float64, what string) {
		t.Helper()
		mfs := scrape(t, srv.URL)
		v, _ := value(mfs, "lineage_sink_unique_writes_total", "kind", "vertex")
		ed, _ := value(mfs, "lineage_sink_unique_writes_total", "kind", "edge")
		if v != wantV || ed != wantE {
			t.Fatalf("%s: unique writes vertex=%v edge=%v, want %v and %v", what, v, ed, wantV, wantE)
		}
	}
	send(batch("shardId-000000000000/1000/1"))
	check(2, 1, "first batch")
	send(batch("shardId-000000000000/1000/1"))
	send(batch("shardId-000000000001/1000/7"))
	check(2, 1, "the same ids in the same window again")
	send(batch("shardId-000000000000/2000/2"))
	check(4, 2, "the same ids in the next window")
	fail = true
	send(batch("shardId-000000000000/3000/3"))
	check(4, 2, "a failed batch")
	// Far later windows: the old ones are forgotten (bounded memory), so
	// a very late resend of window 1000 counts again.
	fail = false
	send(batch("shardId-000000000000/" + itoa(1000+metrics.UniqueRetentionMs+10000) + "/4"))
	check(6, 3, "a window past the retention")
	send(batch("shardId-000000000000/1000/1"))
	check(8, 4, "a resend of a forgotten window")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
