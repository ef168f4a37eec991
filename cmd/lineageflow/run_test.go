package main

import (
	"context"
	"strings"
	"testing"
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
		{[]string{"-run-store-table", "runs"}, "needs -run-store dynamodb"},
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
