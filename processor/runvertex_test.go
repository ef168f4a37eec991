package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/semantics"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// runRecords runs data (one record each, arrival one second apart)
// through one shard into a memory graph, flushes, and returns the graph
// and the stats.
func runRecords(t *testing.T, data [][]byte, runs semantics.RunRecords) (*refmodel.Graph, *Stats) {
	t.Helper()
	return runRecordsWith(t, data, func(c *PipelineConfig) { c.Semantics.Runs = runs })
}

// runRecordsWith is runRecords with the config set by set.
func runRecordsWith(t *testing.T, data [][]byte, set func(*PipelineConfig)) (*refmodel.Graph, *Stats) {
	t.Helper()
	start := time.Date(2027, 1, 1, 6, 0, 0, 0, time.UTC) // after every eventTime of the records (lineage.Guard)
	clk := &fakeClock{now: start}
	stats := &Stats{}
	cfg := testConfig(t, clk, stats)
	set(&cfg)
	db := openMem(t, vfs.NewMem())
	defer db.Close()
	mem := sink.NewMemory()
	s, err := NewShard("shardId-000000000001", db, mem, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if err := s.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs := make([]Record, len(data))
	for i, d := range data {
		recs[i] = Record{Seq: seqOf(i + 1), Data: d, Arrival: start.Add(time.Duration(i) * time.Second)}
	}
	if err := s.Process(ctx, recs, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return graphOf(mem), stats
}

// TestFailedRunIsARunNotLineage: the day-one story. A job's run FAILs
// with an error message: the graph shows the Run (state FAIL, the
// message, start, end, duration, its job, what it read and wrote), no
// edge of the run, and no INPUT_TO, OUTPUTS or DERIVES edge; a COMPLETE run of another job
// gives lineage as before. The graph is exactly the reference model's.
func TestFailedRunIsARunNotLineage(t *testing.T) {
	recs := [][]byte{
		[]byte(`{"eventType":"START","eventTime":"2026-01-01T02:00:00Z","run":{"runId":"f1","facets":{"nominalTime":{"nominalStartTime":"2026-01-01T02:00:00"}}},"job":{"namespace":"glue","name":"nightly"},"inputs":[{"namespace":"s3://raw","name":"orders"}],"outputs":[]}`),
		[]byte(`{"eventType":"FAIL","eventTime":"2026-01-01T02:05:00Z","run":{"runId":"f1","facets":{"errorMessage":{"message":"AnalysisException: Table not found","programmingLanguage":"python"}}},"job":{"namespace":"glue","name":"nightly"},"outputs":[{"namespace":"s3://mart","name":"orders_daily"}]}`),
		[]byte(`{"eventType":"START","eventTime":"2026-01-01T03:00:00Z","run":{"runId":"c1"},"job":{"namespace":"glue","name":"other"},"inputs":[{"namespace":"s3://raw","name":"orders"}]}`),
		[]byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T03:01:00Z","run":{"runId":"c1"},"job":{"namespace":"glue","name":"other"},"outputs":[{"namespace":"s3://mart","name":"other"}]}`),
	}
	for _, runs := range []semantics.RunRecords{semantics.RunsFailed, semantics.RunsAll} {
		t.Run("runs="+string(runs), func(t *testing.T) { failedRun(t, recs, runs) })
	}
}

func failedRun(t *testing.T, recs [][]byte, runs semantics.RunRecords) {
	got, _ := runRecords(t, recs, runs)
	want := refmodel.Build(recs, refmodel.Options{Runs: string(runs)})
	if d := refmodelCompare(want, got); d != "" {
		t.Fatalf("graph differs from the reference:\n%s", d)
	}
	rv, ok := got.Vertices[lineage.RunVertexID("f1")]
	if !ok {
		t.Fatal("no Run vertex for the failed run")
	}
	str := func(k string) string { p, _ := rv.Props.Get(k); return p.Str }
	num := func(k string) int64 { p, _ := rv.Props.Get(k); return p.Num }
	t0 := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC).UnixMilli()
	if str(lineage.PropState) != "FAIL" || str(lineage.PropErrorMessage) != "AnalysisException: Table not found" ||
		num(lineage.PropStartedAt) != t0 || num(lineage.PropEndedAt) != t0+300_000 || num(lineage.PropDurationMs) != 300_000 ||
		num(lineage.PropNominalStartTime) != t0 || str(lineage.PropJobName) != "nightly" {
		t.Fatalf("failed run vertex %v", rv.Props)
	}
	failedJob := lineage.JobID(lineage.Job{Namespace: "glue", Name: "nightly"})
	mart := lineage.DatasetID(lineage.Dataset{Namespace: "s3://mart", Name: "orders_daily"})
	raw := lineage.DatasetID(lineage.Dataset{Namespace: "s3://raw", Name: "orders"})
	if str(lineage.PropJob) != failedJob || str(lineage.PropInputs) != lineage.RunDatasetList([]string{raw}) ||
		str(lineage.PropOutputs) != lineage.RunDatasetList([]string{mart}) || num(lineage.PropInputCount) != 1 || num(lineage.PropOutputCount) != 1 {
		t.Fatalf("failed run vertex: job, inputs, outputs %v", rv.Props)
	}
	labels := map[string]int{}
	for _, e := range got.Edges {
		labels[e.Label]++
		if refmodel.IsLineage(e.Label) && (e.OutV == failedJob || e.InV == failedJob || e.InV == mart) {
			t.Errorf("ghost lineage from the failed run: %+v", e)
		}
		if strings.HasPrefix(e.OutV, "run:") || strings.HasPrefix(e.InV, "run:") {
			t.Errorf("a run edge %+v", e)
		}
	}
	// f1 and (runs=all only) c1: a Run vertex each, no edge; c1:
	// INPUT_TO, OUTPUTS, DERIVES.
	n, runVs := 1, 0
	if runs == semantics.RunsAll {
		n = 2
	}
	for _, v := range got.Vertices {
		if v.Label == lineage.LabelRun {
			runVs++
		}
	}
	if runVs != n || len(got.Edges) != 3 ||
		labels[lineage.EdgeInputTo] != 1 || labels[lineage.EdgeOutputs] != 1 || labels[lineage.EdgeDerives] != 1 {
		t.Fatalf("%d Run vertices, edges by label %v", runVs, labels)
	}
}

// BenchmarkWriteReduction reports the processor's write reduction on the
// default generated workload (gen defaults: 8 pipelines, 20% duplicates,
// 10% failed runs, 1% malformed), 45,000 records into one shard at 100
// records/s of arrival time (about the per-shard rate of bench-e2e's
// steady run): 1 - emitted upserts / input records, in all and without
// the run records (Run vertices: a run has no edge), and the run
// records per run of the workload. The sink's vertex
// cache is not modelled (it removes more).
//
//	go test ./processor -run '^$' -bench WriteReduction -benchtime 1x
func BenchmarkWriteReduction(b *testing.B) {
	var recs []Record
	arrival := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_ = gen.Stream(gen.Config{Seed: 1, Events: 45000}, func(g gen.Record) error {
		arrival = arrival.Add(time.Second / 750)
		recs = append(recs, Record{Seq: seqOf(len(recs) + 1), Arrival: arrival, Data: g.Data})
		return nil
	})
	runIDs := map[string]bool{} // the runs of the workload (valid RunEvents)
	for _, r := range recs {
		var ev struct {
			Run *struct {
				RunID string `json:"runId"`
			} `json:"run"`
		}
		if json.Unmarshal(r.Data, &ev) == nil && ev.Run != nil && ev.Run.RunID != "" {
			runIDs[ev.Run.RunID] = true
		}
	}
	nRuns := len(runIDs)
	for _, refresh := range []time.Duration{0, 20 * time.Second, 30 * time.Second, time.Minute} {
		suffix := ""
		if refresh > 0 {
			suffix = ",refresh-window=" + refresh.String()
		}
		for _, runs := range []semantics.RunRecords{semantics.RunsAll, semantics.RunsFailed, semantics.RunsNone} {
			b.Run("runs="+string(runs)+suffix, func(b *testing.B) { benchReduction(b, recs, nRuns, runs, false, refresh) })
		}
		for _, runs := range []semantics.RunRecords{semantics.RunsFailed, semantics.RunsNone} {
			b.Run("runs="+string(runs)+",column-lineage=false"+suffix, func(b *testing.B) { benchReduction(b, recs, nRuns, runs, true, refresh) })
		}
	}
}

func benchReduction(b *testing.B, recs []Record, nRuns int, runs semantics.RunRecords, noCols bool, refresh time.Duration) {
	for i := 0; i < b.N; i++ {
		clk := &fakeClock{now: recs[0].Arrival}
		stats := &Stats{}
		cfg := testConfig(b, clk, stats)
		cfg.Semantics.Runs = runs
		cfg.Semantics.NoColumnLineage = noCols
		cfg.Window.Refresh = refresh
		db := openMem(b, vfs.NewMem())
		cw := &cacheWriter{seen: map[string]lineage.Props{}}
		s, err := NewShard("shardId-000000000001", db, cw, cfg)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := s.Start(ctx, ""); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < len(recs); j += 100 {
			batch := recs[j:min(j+100, len(recs))]
			clk.Set(batch[len(batch)-1].Arrival)
			if err := s.Process(ctx, batch, false); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		s.Close()
		_ = db.Close()
		n := float64(len(recs))
		all := float64(stats.EdgesEmitted.Load() + stats.VerticesEmitted.Load())
		runs := float64(stats.RunRecordsEmitted.Load())
		b.ReportMetric(100*(1-all/n), "reduction%")
		b.ReportMetric(100*(1-(all-runs)/n), "reduction_without_runs%")
		b.ReportMetric(runs, "run_records")
		b.ReportMetric(all, "upserts")
		b.ReportMetric(float64(stats.WindowsSealed.Load()), "windows")
		b.ReportMetric(float64(stats.EdgesEmitted.Load()), "edges")
		b.ReportMetric(100*(1-float64(cw.after)/n), "reduction_after_cache%")
		b.ReportMetric(float64(cw.after), "writes_after_cache")
		b.ReportMetric(float64(stats.RefreshLane.Load()), "refresh_lane")
		// Run history per run: the run records (Run vertices) over the
		// workload's runs, before and after the cache; lineage alone
		// after the cache (every write but the Run vertices').
		b.ReportMetric(float64(nRuns), "runs")
		b.ReportMetric(runs/float64(nRuns), "run_writes/run")
		b.ReportMetric(float64(cw.byLabel["V:"+lineage.LabelRun])/float64(nRuns), "run_writes_after_cache/run")
		b.ReportMetric(100*(1-float64(cw.after-cw.byLabel["V:"+lineage.LabelRun])/n), "lineage_reduction_after_cache%")
		// And without the vertex writes that change only run-history
		// properties (a job's health, a dataset's write time).
		b.ReportMetric(100*(1-float64(cw.after-cw.byLabel["V:"+lineage.LabelRun]-cw.history)/n), "lineage_only_reduction_after_cache%")
		b.Logf("writes after the cache by label:%s", cw.breakdown())
	}
}

// cacheWriter counts the records a sink with an unbounded vertex cache
// (sink's vertexCache: a vertex is sent again only when the properties
// acknowledged for it so far do not cover its own, i.e. when the write
// could change the graph) would write: every edge, and each vertex whose
// properties are not all held already with a newer or equal stamp.
type cacheWriter struct {
	seen    map[string]lineage.Props
	after   int
	history int            // vertex writes after the cache that change only run-history properties
	byLabel map[string]int // writes after the cache by label ("V:Run", "V:Job(history only)")
}

// withoutHistory is p without its run-history properties
// (lineage.IsRunHistoryProp).
func withoutHistory(p lineage.Props) lineage.Props {
	var keep []lineage.Prop
	for _, x := range p.List() {
		if !lineage.IsRunHistoryProp(x.Key) {
			keep = append(keep, x)
		}
	}
	return lineage.MakeProps(keep...)
}

func (c *cacheWriter) WriteBatch(_ context.Context, b lineage.Batch) error {
	if c.byLabel == nil {
		c.byLabel = map[string]int{}
	}
	for _, v := range b.Vertices {
		p, ok := c.seen[v.ID]
		if m := p.Merge(v.Props); !ok || m != p {
			c.seen[v.ID] = m
			c.after++
			c.byLabel["V:"+v.Label]++
			if ok && withoutHistory(p) == withoutHistory(m) {
				// Written only for run history (job health, dataset
				// write times): counted apart from lineage as well.
				c.history++
				c.byLabel["V:"+v.Label+"(history only)"]++
			}
		}
	}
	for _, e := range b.Edges {
		c.byLabel["E:"+e.Label]++
	}
	c.after += len(b.Edges)
	return nil
}

// breakdown lists the writes after the cache by label, largest first.
func (c *cacheWriter) breakdown() string {
	labels := make([]string, 0, len(c.byLabel))
	for l := range c.byLabel {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool {
		if c.byLabel[labels[i]] != c.byLabel[labels[j]] {
			return c.byLabel[labels[i]] > c.byLabel[labels[j]]
		}
		return labels[i] < labels[j]
	})
	var sb strings.Builder
	for _, l := range labels {
		fmt.Fprintf(&sb, " %s=%d", l, c.byLabel[l])
	}
	return sb.String()
}

// TestRunEngineAndQueryFacets: the processing_engine and externalQuery
// run facets become Run vertex properties, last writer by eventTime wins
// (the events arrive out of order), a wrong shape is ignored and a value
// over 1 KiB dropped and counted, never a dead letter; the graph is the
// reference model's.
func TestRunEngineAndQueryFacets(t *testing.T) {
	long := strings.Repeat("x", lineage.MaxRunFacetValue+1)
	recs := [][]byte{
		[]byte(`{"eventType":"FAIL","eventTime":"2026-01-01T02:05:00Z","run":{"runId":"e1","facets":{"processing_engine":{"name":"spark","version":"3.5.1","openlineageAdapterVersion":"1.40.0"},"externalQuery":{"externalQueryId":"job_42","source":"bigquery"}}},"job":{"namespace":"n","name":"j"}}`),
		[]byte(`{"eventType":"START","eventTime":"2026-01-01T02:00:00Z","run":{"runId":"e1","facets":{"processing_engine":{"name":"old","version":"3.4"},"externalQuery":{"externalQueryId":"job_41","source":7}}},"job":{"namespace":"n","name":"j"}}`),
		[]byte(`{"eventType":"START","eventTime":"2026-01-01T03:00:00Z","run":{"runId":"e2","facets":{"processing_engine":["spark"],"externalQuery":{"externalQueryId":"` + long + `","source":"snowflake"}}},"job":{"namespace":"n","name":"k"}}`),
	}
	for _, runs := range []semantics.RunRecords{semantics.RunsFailed, semantics.RunsAll} {
		t.Run("runs="+string(runs), func(t *testing.T) {
			got, st := runRecords(t, recs, runs)
			want := refmodel.Build(recs, refmodel.Options{Runs: string(runs)})
			if d := refmodelCompare(want, got); d != "" {
				t.Fatalf("graph differs from the reference:\n%s", d)
			}
			if n := st.InvalidTotal(); n != 0 {
				t.Fatalf("%d dead letters", n)
			}
			if l := st.Lenient(); l["capped_run_facet_value"] != 1 {
				t.Fatalf("lenient counts %v", l)
			}
			props := func(id string) map[string]string {
				rv, ok := got.Vertices[lineage.RunVertexID(id)]
				if !ok {
					return nil
				}
				m := map[string]string{}
				for _, k := range []string{lineage.PropProcessingEngine, lineage.PropProcessingEngineVersion, lineage.PropOpenlineageAdapterVersion,
					lineage.PropExternalQueryID, lineage.PropExternalQuerySource} {
					if p, ok := rv.Props.Get(k); ok {
						m[k] = p.Str
					}
				}
				return m
			}
			if got, want := fmt.Sprint(props("e1")), fmt.Sprint(map[string]string{"processingEngine": "spark", "processingEngineVersion": "3.5.1",
				"openlineageAdapterVersion": "1.40.0", "externalQueryId": "job_42", "externalQuerySource": "bigquery"}); got != want {
				t.Fatalf("run e1: %s, want %s", got, want)
			}
			if runs == semantics.RunsAll {
				if got := fmt.Sprint(props("e2")); got != fmt.Sprint(map[string]string{"externalQuerySource": "snowflake"}) {
					t.Fatalf("run e2: %s", got)
				}
			}
		})
	}
}

// TestLenientCounted: a zone-less eventTime and a JobEvent with an
// eventType are read as Marquez reads them, each counted, and the graph
// is the reference model's.
func TestLenientCounted(t *testing.T) {
	recs := [][]byte{
		[]byte(`{"eventType":"START","eventTime":"2021-11-03T10:53:52.427343","run":{"runId":"r"},"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"n","name":"a"}]}`),
		[]byte(`{"eventType":"COMPLETE","eventTime":"2021-11-03T10:54:00","run":{"runId":"r"},"job":{"namespace":"n","name":"j"},"outputs":[{"namespace":"n","name":"b"}]}`),
		[]byte(`{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","job":{"namespace":"n","name":"k"},"inputs":[{"namespace":"n","name":"b"}],"outputs":[{"namespace":"n","name":"c"}],"schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent"}`),
	}
	got, st := runRecords(t, recs, "")
	want := refmodel.Build(recs, refmodel.Options{})
	if d := refmodelCompare(want, got); d != "" {
		t.Fatalf("graph differs from the reference:\n%s", d)
	}
	if n := st.InvalidTotal(); n != 0 {
		t.Fatalf("%d dead letters", n)
	}
	if l := st.Lenient(); l["zoneless_event_time"] != 2 || l["kind_from_schema_url"] != 1 {
		t.Fatalf("lenient counts %v", l)
	}
	if len(want.Lineage().Edges) != 6 {
		t.Fatalf("reference lineage edges %d, want 6 (3 of the run, 3 of the JobEvent)", len(want.Lineage().Edges))
	}
}

// TestGlueTableByAliasOrPath: Spark on Glue names the S3 path and gives
// the Glue table in the symlinks facet. The Glue table is a DatasetAlias
// with ALIAS_OF to the S3 path's Dataset, so a lookup by the catalog name
// and one by the path land on the same dataset and the same lineage.
func TestGlueTableByAliasOrPath(t *testing.T) {
	out := `{"namespace":"s3://lake","name":"/marts/orders","facets":{"symlinks":{"identifiers":[{"namespace":"arn:aws:glue:eu-west-1:123456789012","name":"table/marts/orders","type":"TABLE"}]}}}`
	recs := [][]byte{
		[]byte(`{"eventType":"START","eventTime":"2026-01-01T02:00:00Z","run":{"runId":"r1"},"job":{"namespace":"glue","name":"build_orders"},"inputs":[{"namespace":"s3://lake","name":"/raw/orders"}],"outputs":[` + out + `]}`),
		[]byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T02:01:00Z","run":{"runId":"r1"},"job":{"namespace":"glue","name":"build_orders"},"outputs":[` + out + `]}`),
	}
	got, _ := runRecords(t, recs, "")
	if d := refmodelCompare(refmodel.Build(recs, refmodel.Options{}), got); d != "" {
		t.Fatalf("graph differs from the reference:\n%s", d)
	}
	byName := func(ns, name string) string {
		if id := lineage.DatasetID(lineage.Dataset{Namespace: ns, Name: name}); got.Vertices[id].Label == lineage.LabelDataset {
			return id
		}
		alias := lineage.AliasID(lineage.Dataset{Namespace: ns, Name: name})
		if _, ok := got.Vertices[alias]; !ok {
			return ""
		}
		for _, e := range got.Edges {
			if e.Label == lineage.EdgeAliasOf && e.OutV == alias {
				return e.InV
			}
		}
		return ""
	}
	path := byName("s3://lake", "/marts/orders")
	table := byName("arn:aws:glue:eu-west-1:123456789012", "table/marts/orders")
	if path == "" || path != table {
		t.Fatalf("by path %q, by Glue table %q: want the same dataset", path, table)
	}
	feeds := 0
	for _, e := range got.Edges {
		if e.Label == lineage.EdgeOutputs && e.InV == table {
			feeds++
		}
	}
	if feeds != 1 {
		t.Fatalf("%d OUTPUTS edges into the Glue table's dataset, want 1", feeds)
	}
}

// TestDropIsNotAWrite: an output with lifecycleStateChange DROP gives no
// OUTPUTS (nor DERIVES) edge; its Dataset is marked dropped
// (lifecycleState DROP, droppedAt) by the COMPLETE event; a TRUNCATE is
// recorded and stays a write.
func TestDropIsNotAWrite(t *testing.T) {
	out := `"outputs":[{"namespace":"hive","name":"db.old","facets":{"lifecycleStateChange":{"lifecycleStateChange":"DROP"}}},{"namespace":"hive","name":"db.t","facets":{"lifecycleStateChange":{"lifecycleStateChange":"TRUNCATE"}}}]`
	recs := [][]byte{
		[]byte(`{"eventType":"START","eventTime":"2026-01-01T02:00:00Z","run":{"runId":"d1"},"job":{"namespace":"spark","name":"drop_old"},"inputs":[{"namespace":"hive","name":"db.src"}],` + out + `}`),
		[]byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T02:00:05Z","run":{"runId":"d1"},"job":{"namespace":"spark","name":"drop_old"},` + out + `}`),
	}
	got, _ := runRecords(t, recs, semantics.RunsAll)
	if d := refmodelCompare(refmodel.Build(recs, refmodel.Options{Runs: "all"}), got); d != "" {
		t.Fatalf("graph differs from the reference:\n%s", d)
	}
	old := lineage.DatasetID(lineage.Dataset{Namespace: "hive", Name: "db.old"})
	trunc := lineage.DatasetID(lineage.Dataset{Namespace: "hive", Name: "db.t"})
	for _, e := range got.Edges {
		if e.InV == old {
			t.Errorf("%s edge into the dropped dataset", e.Label)
		}
	}
	t5 := time.Date(2026, 1, 1, 2, 0, 5, 0, time.UTC).UnixMilli()
	st, _ := got.Vertices[old].Props.Get(lineage.PropLifecycleState)
	at, _ := got.Vertices[old].Props.Get(lineage.PropDroppedAt)
	if st.Str != "DROP" || at.Num != t5 {
		t.Fatalf("dropped dataset %v", got.Vertices[old].Props)
	}
	tr, _ := got.Vertices[trunc].Props.Get(lineage.PropLifecycleState)
	outputs := 0
	for _, e := range got.Edges {
		if e.Label == lineage.EdgeOutputs && e.InV == trunc {
			outputs++
		}
	}
	if tr.Str != "TRUNCATE" || outputs != 1 {
		t.Fatalf("truncated dataset %v, %d OUTPUTS", got.Vertices[trunc].Props, outputs)
	}
}
