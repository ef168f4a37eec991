package archive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/archive/archivetest"
	"github.com/lineageflow/lineageflow/archive/reader"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// standinStore returns a Store on a fresh bucket of the S3 stand-in.
func standinStore(t *testing.T, ctx context.Context, prefix string) reader.Store {
	t.Helper()
	c, bucket := archivetest.StandinBucket(ctx, t, "archive")
	return reader.Store{S3: c, Loc: archive.Location{Bucket: bucket, Prefix: prefix}}
}

// olEvent is what the expected answers are computed from: the raw
// OpenLineage JSON read with encoding/json (not the worker's decoder).
type olEvent struct {
	EventTime string `json:"eventTime"`
	EventType string `json:"eventType"`
	Producer  string `json:"producer"`
	Run       *struct {
		RunID string `json:"runId"`
	} `json:"run"`
	Job *struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"job"`
}

type parsed struct {
	ev   olEvent
	at   time.Time // event time, UTC, at millisecond precision (the column's)
	date string
	raw  []byte
	row  archive.Row
}

// TestAthenaQueriesOnDuckDB runs README's three queries
// (deploy/athena/queries/*.sql) with DuckDB over archive objects written
// to the S3 stand-in from a generated workload (20% duplicates, spread
// over three weeks of event time), downloaded into a local tree and read
// with Hive partitioning as Athena reads them, and checks each answer
// against the one computed here from the raw events.
func TestAthenaQueriesOnDuckDB(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st := standinStore(t, ctx, "lineage/")
	py := testenv.PythonVenv(t, "duckdb-venv", "LINEAGEFLOW_DUCKDB_VENV", "archive/testdata/duckdb/requirements.txt", "import duckdb")

	recs := gen.Generate(gen.Config{Seed: 24, Events: 3000, EventGap: 10 * time.Minute})
	rows, err := archivetest.Rows(recs, 4)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := archivetest.Objects(st.Loc.Prefix, rows, 40)
	if err != nil {
		t.Fatal(err)
	}
	if err := archivetest.Write(ctx, st, objs); err != nil {
		t.Fatal(err)
	}

	// Expected answers, from the raw events.
	var evs []parsed
	for _, r := range rows {
		var e olEvent
		if err := json.Unmarshal(r.Event, &e); err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339Nano, e.EventTime)
		if err != nil {
			t.Fatalf("eventTime %q: %v", e.EventTime, err)
		}
		at = at.UTC().Truncate(time.Millisecond)
		evs = append(evs, parsed{ev: e, at: at, date: at.Format(archive.DateLayout), raw: r.Event, row: r})
	}
	first, last := evs[0].at, evs[0].at
	for _, e := range evs {
		first, last = minTime(first, e.at), maxTime(last, e.at)
	}
	days := reader.Days(first, last)
	if len(days) < 14 {
		t.Fatalf("the workload spans %d days, want at least 14", len(days))
	}

	// Download the partitions of the range, keys kept as paths.
	root := t.TempDir()
	var files int
	for _, d := range days {
		listed, err := st.List(ctx, archive.EventsTable, d)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range listed {
			b, err := st.Get(ctx, o.Key)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(o.Key, st.Loc.Prefix)))
			if err := mkWrite(p, b); err != nil {
				t.Fatal(err)
			}
			files++
		}
	}
	if files != len(objs) {
		t.Fatalf("downloaded %d objects, wrote %d", files, len(objs))
	}

	// Query 1: the runs of the job with the most runs, in the week ending
	// at the middle day.
	runsOf := map[[2]string]map[string]bool{}
	for _, e := range evs {
		if e.ev.Run == nil || e.ev.Job == nil {
			continue
		}
		k := [2]string{e.ev.Job.Namespace, e.ev.Job.Name}
		if runsOf[k] == nil {
			runsOf[k] = map[string]bool{}
		}
		runsOf[k][e.ev.Run.RunID] = true
	}
	var job [2]string
	for k, rs := range runsOf {
		if len(rs) > len(runsOf[job]) || (len(rs) == len(runsOf[job]) && k[0]+k[1] < job[0]+job[1]) {
			job = k
		}
	}
	weekTo := days[len(days)/2]
	weekFrom := weekTo.AddDate(0, 0, -6)
	wf, wt := weekFrom.Format(archive.DateLayout), weekTo.Format(archive.DateLayout)
	type runAgg struct {
		started, ended time.Time
		types          map[string]int
		n              int
	}
	agg := map[string]*runAgg{}
	for _, e := range evs {
		if e.ev.Run == nil || e.ev.Job == nil || [2]string{e.ev.Job.Namespace, e.ev.Job.Name} != job || e.date < wf || e.date > wt {
			continue
		}
		a := agg[e.ev.Run.RunID]
		if a == nil {
			a = &runAgg{started: e.at, ended: e.at, types: map[string]int{}}
			agg[e.ev.Run.RunID] = a
		}
		a.started, a.ended = minTime(a.started, e.at), maxTime(a.ended, e.at)
		a.types[e.ev.EventType]++
		a.n++
	}
	var want1 [][]any
	for id, a := range agg {
		state := "RUNNING"
		for _, s := range []string{"COMPLETE", "FAIL", "ABORT"} {
			if a.types[s] > 0 {
				state = s
				break
			}
		}
		want1 = append(want1, []any{id, ts(a.started), ts(a.ended), state, float64(a.n)})
	}
	sort.Slice(want1, func(i, j int) bool {
		if want1[i][1] != want1[j][1] {
			return want1[i][1].(string) < want1[j][1].(string)
		}
		return want1[i][0].(string) < want1[j][0].(string)
	})
	if len(want1) < 3 {
		t.Fatalf("job %v has %d runs in %s..%s: pick a busier workload", job, len(want1), wf, wt)
	}

	// Query 2: every event of the run with the most events.
	perRun := map[string][]parsed{}
	for _, e := range evs {
		if e.ev.Run != nil {
			perRun[e.ev.Run.RunID] = append(perRun[e.ev.Run.RunID], e)
		}
	}
	var run string
	for id, es := range perRun {
		if len(es) > len(perRun[run]) || (len(es) == len(perRun[run]) && id < run) {
			run = id
		}
	}
	res := perRun[run]
	sort.SliceStable(res, func(i, j int) bool {
		a, b := res[i], res[j]
		if !a.at.Equal(b.at) {
			return a.at.Before(b.at)
		}
		if a.row.Shard != b.row.Shard {
			return a.row.Shard < b.row.Shard
		}
		return a.row.Sequence < b.row.Sequence
	})
	rf, rt := res[0].date, res[len(res)-1].date
	var want2 [][]any
	for _, e := range res {
		want2 = append(want2, []any{ts(e.at), e.ev.EventType, e.ev.Job.Namespace, e.ev.Job.Name, e.ev.Producer,
			e.row.Shard, e.row.Sequence, float64(0), e.row.IdempotencyKey, string(e.raw)})
	}

	// Query 3: events per producer per day, over every day.
	count := map[[2]string]int{}
	for _, e := range evs {
		count[[2]string{e.date, e.ev.Producer}]++
	}
	var want3 [][]any
	for k, n := range count {
		want3 = append(want3, []any{k[0], k[1], float64(n)})
	}
	sort.Slice(want3, func(i, j int) bool {
		if want3[i][0] != want3[j][0] {
			return want3[i][0].(string) < want3[j][0].(string)
		}
		return want3[i][1].(string) < want3[j][1].(string)
	})

	qdir := filepath.Join(testenv.RepoRoot(), "deploy", "athena", "queries")
	req := map[string]any{"root": root, "queries": []map[string]any{
		{"file": filepath.Join(qdir, "job_runs.sql"), "params": []any{job[0], job[1], wf, wt}},
		{"file": filepath.Join(qdir, "run_events.sql"), "params": []any{run, rf, rt}},
		{"file": filepath.Join(qdir, "events_per_producer_day.sql"), "params": []any{days[0].Format(archive.DateLayout), days[len(days)-1].Format(archive.DateLayout)}},
	}}
	got := runDuckDB(t, py, req)
	for i, want := range [][][]any{want1, want2, want3} {
		name := []string{"job_runs", "run_events", "events_per_producer_day"}[i]
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("%s: DuckDB answered %d rows, want %d", name, len(got[i]), len(want))
			for j := 0; j < max(len(got[i]), len(want)) && j < 5; j++ {
				var g, w any
				if j < len(got[i]) {
					g = got[i][j]
				}
				if j < len(want) {
					w = want[j]
				}
				if !reflect.DeepEqual(g, w) {
					t.Errorf("%s row %d:\n got %.300v\nwant %.300v", name, j, g, w)
				}
			}
		}
	}
	t.Logf("%d events in %d objects over %d days; job %s/%s: %d runs in %s..%s; run %s: %d events; %d (day, producer) rows",
		len(rows), len(objs), len(days), job[0], job[1], len(want1), wf, wt, run, len(want2), len(want3))
}

func runDuckDB(t *testing.T, py string, req any) [][][]any {
	t.Helper()
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join(testenv.RepoRoot(), "archive", "testdata", "duckdb", "query.py"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("query.py: %v\n%s", err, stderr.String())
	}
	var got [][][]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("query.py output: %v\n%.500s", err, out)
	}
	return got
}

func mkWrite(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
