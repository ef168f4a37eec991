package archive_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/archive/archivetest"
	"github.com/lineageflow/lineageflow/internal/gen"
)

// queryColumns are the columns "the runs of job X on day D" reads
// (deploy/athena/queries/job_runs.sql): its filters and its answer.
var queryColumns = []string{"job_namespace", "job_name", "kind", "run_id", "event_time", "event_type"}

// costFigures are the design's cost case on one workload.
type costFigures struct {
	naiveBytes, uniqueJSONBytes, archiveBytes int64
	naiveScan, partitionScan, prunedScan      int64
	objects, days                             int
	job                                       string
	day                                       string
}

// archiveCost measures what the archive of recs stores and what an engine
// scans for the runs of the busiest job on its busiest day, against the
// naive store (every Kinesis record as JSON lines, duplicates and
// malformed records included, not partitioned: a query scans all of it).
// Scanned bytes are the Parquet column chunks' compressed sizes from the
// footers of that day's objects, plus the footers, which an engine reads
// first.
func archiveCost(tb testing.TB, recs []gen.Record, shards int) costFigures {
	tb.Helper()
	var f costFigures
	for _, r := range recs {
		f.naiveBytes += int64(len(r.Data)) + 1
	}
	f.naiveScan = f.naiveBytes
	for _, r := range archivetest.Unique(recs) {
		f.uniqueJSONBytes += int64(len(r.Data)) + 1
	}
	rows, err := archivetest.Rows(recs, shards)
	if err != nil {
		tb.Fatal(err)
	}
	// The busiest job (most runs) and its busiest day.
	runs := map[string]map[string]bool{}
	perDay := map[string]map[string]int{}
	for _, r := range rows {
		if r.Kind != "RunEvent" {
			continue
		}
		j := r.JobNamespace + "/" + r.JobName
		if runs[j] == nil {
			runs[j], perDay[j] = map[string]bool{}, map[string]int{}
		}
		runs[j][r.RunID] = true
		perDay[j][r.EventTime.UTC().Format(archive.DateLayout)]++
	}
	for j, rs := range runs {
		if len(rs) > len(runs[f.job]) || (len(rs) == len(runs[f.job]) && j < f.job) {
			f.job = j
		}
	}
	for d, n := range perDay[f.job] {
		if n > perDay[f.job][f.day] || (n == perDay[f.job][f.day] && d < f.day) {
			f.day = d
		}
	}
	// One object per (day, shard): what the sink's size/age cut gives when
	// a shard's day fits under the size target.
	objs, err := archivetest.Objects("p/", rows, 0)
	if err != nil {
		tb.Fatal(err)
	}
	f.objects = len(objs)
	days := map[string]bool{}
	want := map[string]bool{}
	for _, c := range queryColumns {
		want[c] = true
	}
	for _, o := range objs {
		f.archiveBytes += int64(len(o.Body))
		d := o.Key[strings.Index(o.Key, "event_date=")+len("event_date=") : strings.Index(o.Key, "event_date=")+len("event_date=2006-01-02")]
		days[d] = true
		if d != f.day {
			continue
		}
		file, err := parquet.OpenFile(bytes.NewReader(o.Body), int64(len(o.Body)))
		if err != nil {
			tb.Fatal(err)
		}
		footer := int64(binary.LittleEndian.Uint32(o.Body[len(o.Body)-8:])) + 8
		f.partitionScan += int64(len(o.Body))
		f.prunedScan += footer
		for _, rg := range file.Metadata().RowGroups {
			for _, cc := range rg.Columns {
				if want[cc.MetaData.PathInSchema[0]] {
					f.prunedScan += cc.MetaData.TotalCompressedSize
				}
			}
		}
	}
	f.days = len(days)
	return f
}

func (f costFigures) report(b *testing.B) {
	b.ReportMetric(float64(f.archiveBytes)/float64(f.naiveBytes), "stored/naive")
	b.ReportMetric(float64(f.uniqueJSONBytes)/float64(f.naiveBytes), "uniqueJSON/naive")
	b.ReportMetric(float64(f.prunedScan)/float64(f.naiveScan), "scanned/naive")
	b.ReportMetric(float64(f.partitionScan)/float64(f.naiveScan), "partition/naive")
	b.ReportMetric(float64(f.naiveBytes), "naive-B")
	b.ReportMetric(float64(f.archiveBytes), "archive-B")
	b.ReportMetric(float64(f.prunedScan), "scanned-B")
	b.Logf("%d days, %d objects; naive %d B (unique events as JSON lines %d B), archive %d B; job %s on %s: naive scans %d B, the archive's partition %d B, its %d columns %d B",
		f.days, f.objects, f.naiveBytes, f.uniqueJSONBytes, f.archiveBytes, f.job, f.day, f.naiveScan, f.partitionScan, len(queryColumns), f.prunedScan)
}

// BenchmarkArchiveCost is the design's cost case (section 03) on the
// default generated workload (20% producer retries, 1% malformed): bytes
// the archive stores against the naive store (every Kinesis record as
// JSON lines), and bytes an engine scans for "the runs of job X on day D"
// (one event_date partition, the query's columns only) against a scan of
// the naive store, as ratios. "week" spreads the same number of events
// over seven days of event time (the default workload spans minutes, so
// one partition), where partition pruning counts too. Each iteration
// encodes the archive of the workload once (ns/op: the Parquet encoding
// cost of the whole workload).
//
//	go test -run '^$' -bench BenchmarkArchiveCost -benchtime 3x ./archive/
func BenchmarkArchiveCost(b *testing.B) {
	const events = 20000
	for _, tc := range []struct {
		name string
		cfg  gen.Config
	}{
		{"default", gen.Config{Seed: 1, Events: events}},
		{"week", gen.Config{Seed: 1, Events: events, EventGap: 7 * 24 * time.Hour / events}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			recs := gen.Generate(tc.cfg)
			var f costFigures
			for i := 0; i < b.N; i++ {
				f = archiveCost(b, recs, 4)
			}
			f.report(b)
		})
	}
}

// TestArchiveCostSmall keeps the benchmark's arithmetic honest on a small
// workload: the archive stores less than the naive store and the pruned
// scan is less than the partition, which is at most the whole archive.
func TestArchiveCostSmall(t *testing.T) {
	f := archiveCost(t, gen.Generate(gen.Config{Seed: 3, Events: 2000, EventGap: 5 * time.Minute}), 4)
	if f.days < 3 || f.archiveBytes >= f.uniqueJSONBytes || f.uniqueJSONBytes >= f.naiveBytes ||
		f.prunedScan >= f.partitionScan || f.partitionScan >= f.archiveBytes || f.prunedScan <= 0 {
		t.Fatalf("figures out of order: %+v", f)
	}
}
