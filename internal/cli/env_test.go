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

// The secret warning is for a value that really came from the command
// line: the same secret from the environment gives none.
func TestSecretWarningOnlyFromArgs(t *testing.T) {
	// Not parallel: t.Setenv changes the process's environment.
	t.Setenv("LINEAGEFLOW_SECRET_ACCESS_KEY", "from-env")
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	secret := fs.String("secret-access-key", "", "")
	if err := Parse(fs, nil); err != nil {
		t.Fatal(err)
	}
	if *secret != "from-env" {
		t.Fatalf("secret = %q, want the environment's", *secret)
	}
	if w := SecretFlagWarning(fs, "secret-access-key"); w != "" {
		t.Fatalf("warning for a secret from the environment: %s", w)
	}
	fs2 := flag.NewFlagSet("y", flag.ContinueOnError)
	fs2.String("secret-access-key", "", "")
	if err := Parse(fs2, []string{"-secret-access-key", "on-argv"}); err != nil {
		t.Fatal(err)
	}
	if w := SecretFlagWarning(fs2, "secret-access-key"); !strings.Contains(w, "LINEAGEFLOW_SECRET_ACCESS_KEY") {
		t.Fatalf("no warning for a secret on the command line: %q", w)
	}
}
