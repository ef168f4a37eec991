package archive_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// hiveType is the Athena (Hive DDL) type of a Parquet column as
// parquet-go writes it for the archive's rows.
func hiveType(t *testing.T, f parquet.Field) string {
	t.Helper()
	lt := ""
	if l := f.Type().LogicalType(); l != nil {
		lt = l.String()
	}
	if !f.Leaf() {
		if lt == "LIST" && len(f.Fields()) == 1 && len(f.Fields()[0].Fields()) == 1 {
			return "array<" + hiveType(t, f.Fields()[0].Fields()[0]) + ">"
		}
		t.Fatalf("column %s: group %q has no Athena type here", f.Name(), lt)
	}
	switch {
	case strings.HasPrefix(lt, "TIMESTAMP("):
		return "timestamp"
	case lt == "STRING":
		return "string"
	case lt == "INT(64,true)", lt == "" && f.Type().Kind() == parquet.Int64:
		return "bigint"
	case lt == "INT(32,true)", lt == "" && f.Type().Kind() == parquet.Int32:
		return "int"
	case lt == "" && f.Type().Kind() == parquet.ByteArray:
		return "binary"
	case lt == "" && f.Type().Kind() == parquet.Boolean:
		return "boolean"
	case lt == "" && f.Type().Kind() == parquet.Double:
		return "double"
	}
	t.Fatalf("column %s: Parquet type %v %q has no Athena type here", f.Name(), f.Type().Kind(), lt)
	return ""
}

var (
	createRE  = regexp.MustCompile(`(?s)CREATE EXTERNAL TABLE IF NOT EXISTS lineageflow_archive\.(\w+) \((.*?)\n\)\nPARTITIONED BY \(event_date string\)\nSTORED AS PARQUET\nLOCATION '([^']*)'\nTBLPROPERTIES \((.*?)\n\);`)
	columnRE  = regexp.MustCompile(`^\s*(\w+) ([a-z<>]+),?$`)
	tblPropRE = regexp.MustCompile(`'([^']+)' = '([^']*)'`)
)

// TestAthenaDDLMatchesRow checks deploy/athena's table definitions against
// the archive's Parquet schema: every column of archive.Row (events) and
// archive.DeadLetterRow (dead_letters), by name, in order, with the Athena
// type of its Parquet type; the partition column and projection giving the
// keys archive.ObjectKey writes.
func TestAthenaDDLMatchesRow(t *testing.T) {
	for _, tc := range []struct {
		file, table string
		schema      *parquet.Schema
	}{
		{"events.sql", archive.EventsTable, parquet.SchemaOf(archive.Row{})},
		{"dead_letters.sql", archive.DeadLettersTable, parquet.SchemaOf(archive.DeadLetterRow{})},
	} {
		b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "athena", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		m := createRE.FindStringSubmatch(string(b))
		if m == nil {
			t.Fatalf("%s: no CREATE EXTERNAL TABLE ... PARTITIONED BY (event_date string) STORED AS PARQUET LOCATION ... TBLPROPERTIES (...) found", tc.file)
		}
		if m[1] != tc.table {
			t.Errorf("%s: table %s, want %s", tc.file, m[1], tc.table)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(m[2]), "\n") {
			c := columnRE.FindStringSubmatch(line)
			if c == nil {
				t.Fatalf("%s: column line %q not understood", tc.file, line)
			}
			got = append(got, c[1]+" "+c[2])
		}
		var want []string
		for _, f := range tc.schema.Fields() {
			want = append(want, f.Name()+" "+hiveType(t, f))
		}
		if strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("%s: columns\n %s\nwant (the Parquet schema of the rows)\n %s", tc.file, strings.Join(got, ", "), strings.Join(want, ", "))
		}

		// The projection's template and the location name the keys
		// ObjectKey writes.
		loc := "s3://ARCHIVE_BUCKET/ARCHIVE_PREFIX/" + tc.table + "/"
		if m[3] != loc {
			t.Errorf("%s: LOCATION %s, want %s", tc.file, m[3], loc)
		}
		props := map[string]string{}
		for _, p := range tblPropRE.FindAllStringSubmatch(m[4], -1) {
			props[p[1]] = p[2]
		}
		for k, v := range map[string]string{"projection.enabled": "true", "projection.event_date.type": "date",
			"projection.event_date.format": "yyyy-MM-dd", "projection.event_date.interval.unit": "DAYS",
			"projection.event_date.interval": "1", "parquet.compression": "ZSTD"} {
			if props[k] != v {
				t.Errorf("%s: %s = %q, want %q", tc.file, k, props[k], v)
			}
		}
		day := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
		key := archive.ObjectKey("ARCHIVE_PREFIX/", tc.table, day, "shardId-000000000000", "1")
		dir := "s3://ARCHIVE_BUCKET/" + key[:strings.LastIndex(key, "/")+1]
		if tmpl := strings.ReplaceAll(props["storage.location.template"], "${event_date}", day.Format(archive.DateLayout)); tmpl != dir {
			t.Errorf("%s: storage.location.template gives %s for %s, the objects are under %s", tc.file, tmpl, day.Format(archive.DateLayout), dir)
		}
	}
}

// TestArchiveIAMAndLifecycle checks deploy/athena's IAM policy (objects of
// the prefix only, listing restricted to the prefix, KMS only through S3)
// and lifecycle rules (one per table prefix).
func TestArchiveIAMAndLifecycle(t *testing.T) {
	var pol struct {
		Statement []struct {
			Sid       string
			Effect    string
			Action    any
			Resource  any
			Condition map[string]map[string]any
		}
	}
	readJSON(t, "iam-policy.json", &pol)
	seen := map[string]bool{}
	for _, s := range pol.Statement {
		if s.Effect != "Allow" {
			t.Errorf("%s: effect %s", s.Sid, s.Effect)
		}
		res := fmt.Sprint(s.Resource)
		for _, a := range strings.Fields(strings.Trim(fmt.Sprint(s.Action), "[]")) {
			seen[a] = true
			switch a {
			case "s3:PutObject", "s3:GetObject":
				if res != "arn:aws:s3:::ARCHIVE_BUCKET/ARCHIVE_PREFIX/*" {
					t.Errorf("%s on %s: want the prefix's objects only", a, res)
				}
			case "s3:ListBucket":
				if res != "arn:aws:s3:::ARCHIVE_BUCKET" || fmt.Sprint(s.Condition["StringLike"]["s3:prefix"]) != "[ARCHIVE_PREFIX/*]" {
					t.Errorf("%s on %s with %v: want the bucket with an s3:prefix condition on the prefix", a, res, s.Condition)
				}
			case "kms:GenerateDataKey", "kms:Decrypt":
				if !strings.HasPrefix(res, "arn:aws:kms:") || strings.Contains(res, "*") || s.Condition["StringEquals"]["kms:ViaService"] == nil {
					t.Errorf("%s on %s: want one key, through S3 only (kms:ViaService)", a, res)
				}
			default:
				t.Errorf("%s: action %s is more than the archive needs", s.Sid, a)
			}
		}
	}
	for _, a := range []string{"s3:PutObject", "s3:GetObject", "s3:ListBucket", "kms:GenerateDataKey"} {
		if !seen[a] {
			t.Errorf("the policy does not grant %s", a)
		}
	}

	var lc struct {
		Rules []struct {
			ID     string
			Status string
			Filter struct{ Prefix string }
		}
	}
	readJSON(t, "lifecycle.json", &lc)
	prefixes := map[string]bool{}
	for _, r := range lc.Rules {
		if r.Status != "Enabled" {
			t.Errorf("rule %s: status %s", r.ID, r.Status)
		}
		prefixes[r.Filter.Prefix] = true
	}
	for _, tbl := range []string{archive.EventsTable, archive.DeadLettersTable} {
		if !prefixes["ARCHIVE_PREFIX/"+tbl+"/"] {
			t.Errorf("no lifecycle rule for the %s table's prefix", tbl)
		}
	}
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "athena", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
