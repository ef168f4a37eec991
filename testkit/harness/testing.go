package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// buildDir is the temporary directory of BuildOnce's binary, made on
// first use.
var buildDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "lineageflow-harness-") })

// built is the binary BuildOnce returns, built on first use.
var built = sync.OnceValues(func() (string, error) {
	if b := os.Getenv("LINEAGEFLOW_HARNESS_BIN"); b != "" {
		return b, nil
	}
	dir, err := buildDir()
	if err != nil {
		return "", err
	}
	return Build(context.Background(), testenv.RepoRoot(), dir)
})

// BuildOnce builds the binary once per process into a temporary directory
// (removed by CleanupBuild, or left in the OS temp dir). With
// LINEAGEFLOW_HARNESS_BIN set, that binary is used instead.
func BuildOnce() (string, error) { return built() }

// CleanupBuild removes the directory of BuildOnce (call it from TestMain).
func CleanupBuild() {
	if dir, err := buildDir(); err == nil {
		os.RemoveAll(dir)
	}
}

// tWriter writes each line to t.Log.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ForTest returns a harness for t: skipped (or failed with
// LINEAGEFLOW_REQUIRE_STANDINS=1) without kinesalite and dynalite, the
// binary built once, Dir = t.TempDir(), the harness log on t.Log. At the
// end every process still running is killed by PID, and when t failed the
// tail of every worker log is shown (and the logs are copied to
// $LINEAGEFLOW_HARNESS_LOGS/<test name> if that is set).
func ForTest(t testing.TB, name string) *Harness {
	t.Helper()
	testenv.Kinesis(t)
	testenv.DynamoDB(t)
	env, _ := StandinsEnv()
	bin, err := BuildOnce()
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Env: env, Bin: bin, Dir: t.TempDir(), Log: tWriter{t}, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		if t.Failed() {
			var b strings.Builder
			h.DumpLogs(&b, 6000)
			t.Log(b.String())
			if dst := os.Getenv("LINEAGEFLOW_HARNESS_LOGS"); dst != "" {
				d := filepath.Join(dst, strings.ReplaceAll(t.Name(), "/", "_"))
				_ = os.MkdirAll(d, 0o755)
				for _, p := range h.Procs() {
					if b, err := os.ReadFile(p.LogPath); err == nil {
						_ = os.WriteFile(filepath.Join(d, p.Spec.ID+"-"+filepath.Base(p.LogPath)), b, 0o644)
					}
				}
			}
		}
	})
	return h
}

// Since formats the time since t0 for logs.
func Since(t0 time.Time) string { return time.Since(t0).Round(time.Millisecond).String() }
