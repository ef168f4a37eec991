package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// Bad run store configuration fails at start, saying what to fix, before
// the worker dials anything.
func TestRunStoreBadConfig(t *testing.T) {
	dir := t.TempDir()
	base := []string{"-stream", "s", "-region", "us-east-1", "-data-dir", dir, "-http-addr", "", "-stats-every", "0"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-run-store", "redis"}, `-run-store "redis": use none or dynamodb`},
		{[]string{"-run-store", "none", "-run-store-table", "runs"}, "needs -run-store dynamodb"},
		{[]string{"-run-store-table", "x"}, "a DynamoDB table name is 3 to 255 characters"}, // dynamodb is the default
		{[]string{"-run-timeout", "5s"}, "run timeout 5s with a run store"},
		{[]string{"-run-store", "dynamodb", "-run-store-table", "x"}, "a DynamoDB table name is 3 to 255 characters"},
		{[]string{"-run-store", "dynamodb", "-run-store-table", "bad name!"}, "a DynamoDB table name is 3 to 255 characters"},
		{[]string{"-run-store", "dynamodb", "-run-timeout", "5s"}, "run timeout 5s with a run store"},
		{[]string{"-shard-sync", "0"}, "-shard-sync 0s: must be > 0"},
	} {
		err := runWorker(context.Background(), append(append([]string{}, base...), tt.args...))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run %v: %v, want %q", tt.args, err, tt.want)
		}
	}
}

// Bad stream and application names fail at start naming the flag and the
// rule, before any AWS call: no endpoint answers here (port 1), and the
// error is the name's, not a connection's.
func TestRunBadNames(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-stream", "s", "-app", "ux"}, `-app "ux": it names DynamoDB tables (<app> and <app>-handoff), so it must be 3 to 247 characters`},
		{[]string{"-stream", "s", "-app", "my app"}, `-app "my app"`},
		{[]string{"-stream", "bad/stream"}, `-stream "bad/stream": a Kinesis stream name is 1 to 128 characters`},
		{[]string{"-app", "lineageflow"}, "-stream is required"},
	} {
		args := append([]string{"-region", "us-east-1", "-data-dir", dir, "-http-addr", "", "-stats-every", "0",
			"-kinesis-endpoint", "http://127.0.0.1:1", "-dynamodb-endpoint", "http://127.0.0.1:1", "-sink", "gremlin:ws://127.0.0.1:1/gremlin"}, tt.args...)
		err := runWorker(context.Background(), args)
		if err == nil || !strings.Contains(err.Error(), tt.want) || exitCode(err) != 2 {
			t.Errorf("run %v: %v (exit %d), want exit 2 and %q", tt.args, err, exitCode(err), tt.want)
		}
	}
}

// A Redis that does not answer at start (an outage) logs a warning, and no
// log line holds the password of -dedup's URL, in either log format.
func TestDedupOutageLogsNoPassword(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		l, err := newLoggerTo(&buf, format, "debug")
		if err != nil {
			t.Fatal(err)
		}
		st, err := openDedup(context.Background(), "redis://:hunter2@127.0.0.1:1/0", "app", 50*time.Millisecond, l)
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		out := buf.String()
		if !strings.Contains(out, "redis does not answer") || !strings.Contains(out, "127.0.0.1:1") {
			t.Fatalf("%s: no outage warning naming the host:\n%s", format, out)
		}
		if strings.Contains(out, "hunter2") {
			t.Fatalf("%s: the password is in the log:\n%s", format, out)
		}
	}
}

// TestArchiveFlags: bad -archive configuration fails naming the flag,
// before any remote call.
func TestArchiveFlags(t *testing.T) {
	const redis = "redis://127.0.0.1:6379/0"
	for _, c := range []struct {
		url, ep, kms, dedup string
		min                 int64
		age                 time.Duration
		want                string // "" ok, else a part of the error
	}{
		{"", "", "", "local", 1, time.Minute, ""},
		{"s3://lineage-archive/prod", "http://127.0.0.1:4569", "alias/x", redis, 1, time.Minute, ""},
		{"", "", "alias/x", "local", 1, time.Minute, "-archive-sse-kms-key"},
		{"s3://lineage-archive", "", "", "local", 1, time.Minute, "-dedup redis"},
		{"http://lineage-archive", "", "", redis, 1, time.Minute, "-archive \""},
		{"s3://lineage-archive", "127.0.0.1:4569", "", redis, 1, time.Minute, "-archive-endpoint"},
		{"s3://lineage-archive", "", "", redis, 0, time.Minute, "-archive-min-bytes"},
		{"s3://lineage-archive", "", "", redis, 1, 0, "-archive-max-age"},
	} {
		a, err := archiveFlags(c.url, c.ep, c.kms, c.min, c.age, c.dedup)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want one naming %s", c, err, c.want)
		case c.want == "" && c.url != "" && (a.bucket != "lineage-archive" || a.prefix != "prod/"):
			t.Errorf("%+v: bucket %q prefix %q", c, a.bucket, a.prefix)
		}
	}
}
