// Package testenv finds the local AWS and Neptune stand-ins for tests.
//
// Endpoints come from the environment (LINEAGEFLOW_KINESIS_ENDPOINT,
// LINEAGEFLOW_DYNAMODB_ENDPOINT, LINEAGEFLOW_GREMLIN_ENDPOINT,
// LINEAGEFLOW_REDIS_ENDPOINT, LINEAGEFLOW_S3_ENDPOINT) or, when those
// are unset, from the env file that scripts/standins-start.sh writes
// ($STANDIN_DIR/env, default <repo>/.standins/env). When a stand-in is not
// found the test is skipped, unless LINEAGEFLOW_REQUIRE_STANDINS=1 (as
// .ci/run sets it), in which case it fails.
package testenv

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Region and static credentials the stand-ins accept.
const (
	Region          = "us-east-1"
	AccessKeyID     = "local"
	SecretAccessKey = "local"
)

// fileEnv is the stand-ins' env file, read on first use.
var fileEnv = sync.OnceValue(load)

// Kinesis returns the kinesalite endpoint (http://127.0.0.1:port).
func Kinesis(t testing.TB) string { return need(t, "LINEAGEFLOW_KINESIS_ENDPOINT", "kinesalite") }

// DynamoDB returns the dynalite endpoint (http://127.0.0.1:port).
func DynamoDB(t testing.TB) string { return need(t, "LINEAGEFLOW_DYNAMODB_ENDPOINT", "dynalite") }

// Gremlin returns the Gremlin Server endpoint (ws://127.0.0.1:port/gremlin).
func Gremlin(t testing.TB) string { return need(t, "LINEAGEFLOW_GREMLIN_ENDPOINT", "Gremlin Server") }

// Redis returns the redis-server endpoint (redis://127.0.0.1:port/0).
func Redis(t testing.TB) string { return need(t, "LINEAGEFLOW_REDIS_ENDPOINT", "Redis") }

// S3 returns the S3 stand-in's endpoint (moto server, http://127.0.0.1:port;
// path-style addressing).
func S3(t testing.TB) string { return need(t, "LINEAGEFLOW_S3_ENDPOINT", "the S3 stand-in (moto)") }

// Lookup returns the value of an endpoint variable from the environment or
// the stand-ins' env file.
func Lookup(key string) (string, bool) {
	if v := os.Getenv(key); v != "" {
		return v, true
	}
	v, ok := fileEnv()[key]
	return v, ok && v != ""
}

func need(t testing.TB, key, what string) string {
	t.Helper()
	if v, ok := Lookup(key); ok {
		return v
	}
	msg := what + " not running: start the stand-ins with scripts/standins-start.sh (or set " + key + ")"
	if os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// EnvFile returns the path of the stand-ins' env file.
func EnvFile() string {
	dir := os.Getenv("STANDIN_DIR")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), ".standins")
	}
	return filepath.Join(dir, "env")
}

// RepoRoot returns the directory holding go.mod, found upwards from the
// working directory.
func RepoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

func load() map[string]string {
	env := map[string]string{}
	f, err := os.Open(EnvFile())
	if err != nil {
		return env
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		env[k] = strings.Trim(v, `"'`)
	}
	return env
}
