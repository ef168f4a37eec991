package cli

import (
	"flag"
	"strings"
	"testing"
)

func TestParseEnvFallback(t *testing.T) {
	// Not parallel: t.Setenv changes the process's environment.
	t.Setenv("LINEAGEFLOW_SHARD_COUNT", "7")
	t.Setenv("LINEAGEFLOW_STREAM", "from-env")
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	shards := fs.Int("shard-count", 1, "")
	stream := fs.String("stream", "lineage", "")
	if err := Parse(fs, []string{"-stream", "from-flag"}); err != nil {
		t.Fatal(err)
	}
	if *shards != 7 || *stream != "from-flag" {
		t.Fatalf("shards=%d stream=%q", *shards, *stream)
	}
}

func TestParseBadEnvNamesVariable(t *testing.T) {
	// Not parallel: t.Setenv changes the process's environment.
	t.Setenv("LINEAGEFLOW_SHARD_COUNT", "many")
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Int("shard-count", 1, "")
	err := Parse(fs, nil)
	if err == nil || !strings.Contains(err.Error(), "LINEAGEFLOW_SHARD_COUNT") {
		t.Fatalf("err = %v", err)
	}
}
