package main

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Bad rebuild flags fail with exit status 2 naming what to fix, before any
// remote call (the endpoints are a closed port: a call would time out or
// be refused, never give these messages).
func TestRebuildBadFlags(t *testing.T) {
	t.Setenv("LINEAGEFLOW_SECRET_ACCESS_KEY", "")
	base := []string{"-region", "us-east-1", "-kinesis-endpoint", "http://127.0.0.1:1", "-archive-endpoint", "http://127.0.0.1:1"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-from", "2026-01-01", "-to", "2026-01-02", "-stream", "s"}, "archive location is empty"},
		{[]string{"-archive", "https://b/p", "-from", "2026-01-01", "-to", "2026-01-02", "-stream", "s"}, "scheme must be s3"},
		{[]string{"-archive", "s3:///p", "-from", "2026-01-01", "-to", "2026-01-02", "-stream", "s"}, "no bucket"},
		{[]string{"-archive", "s3://b/p", "-to", "2026-01-02", "-stream", "s"}, "-from is required"},
		{[]string{"-archive", "s3://b/p", "-from", "yesterday", "-to", "2026-01-02", "-stream", "s"}, `-from "yesterday"`},
		{[]string{"-archive", "s3://b/p", "-from", "2026-01-02", "-to", "2026-01-01T12:00:00Z", "-stream", "s"}, "is not after -from"},
		{[]string{"-archive", "s3://b/p", "-from", "2026-01-01", "-to", "2026-01-02"}, `stream name ""`},
		{[]string{"-archive", "s3://b/p", "-from", "2026-01-01", "-to", "2026-01-02", "-stream", "s", "-archive-endpoint", "ftp://x"}, "archive endpoint"},
		{[]string{"-archive", "s3://b/p", "-from", "2026-01-01", "-to", "2026-01-02", "-stream", "s", "extra"}, "unexpected arguments"},
	} {
		err := runRebuild(context.Background(), append(append([]string{}, base...), tt.args...))
		var ee *exitError
		if err == nil || !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("rebuild %v: %v, want exit 2 saying %q", tt.args, err, tt.want)
		}
	}
	// The live workers' stream from the environment is not taken.
	t.Setenv("LINEAGEFLOW_STREAM", "live")
	err := runRebuild(context.Background(), append(append([]string{}, base...), "-archive", "s3://b/p", "-from", "2026-01-01", "-to", "2026-01-02"))
	if err == nil || !strings.Contains(err.Error(), "-stream must be given on the command line") {
		t.Errorf("rebuild with LINEAGEFLOW_STREAM only: %v", err)
	}
}

// Bad archive flags of serve fail at start with exit status 2, before the
// graph or the bucket is dialled.
func TestServeArchiveBadFlags(t *testing.T) {
	base := []string{"-http-addr", "127.0.0.1:0", "-gremlin-endpoint", "ws://127.0.0.1:1/gremlin"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-archive", "https://b/p", "-region", "us-east-1"}, "scheme must be s3"},
		{[]string{"-archive-endpoint", "http://127.0.0.1:1"}, "-archive-endpoint without -archive"},
		{[]string{"-archive", "s3://b/p"}, "region is empty"},
		{[]string{"-archive", "s3://b/p", "-region", "us-east-1", "-archive-max-days", "0"}, "-archive-max-days"},
		{[]string{"-archive", "s3://b/p", "-region", "us-east-1", "-archive-endpoint", "127.0.0.1:4569"}, "archive endpoint"},
	} {
		err := runServe(context.Background(), append(append([]string{}, base...), tt.args...))
		var ee *exitError
		if err == nil || !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("serve %v: %v, want exit 2 saying %q", tt.args, err, tt.want)
		}
	}
}
