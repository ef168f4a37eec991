package testenv

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PrivateGremlin starts a Gremlin Server of the test's own (the stand-in's
// configuration, scripts/standins-start.sh gremlin) in a temporary
// STANDIN_DIR on a free port, and stops it, by its recorded PID, when the
// test ends. For tests that need a whole graph to themselves (comparing
// two graphs), which the shared stand-in cannot give while other packages
// write to it. It takes a JVM start (20-60 s on a busy machine): skipped
// with -short, and skipped (failed under LINEAGEFLOW_REQUIRE_STANDINS=1)
// when Gremlin Server is not installed.
func PrivateGremlin(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Gremlin Server; skipped with -short")
	}
	root := RepoRoot()
	if _, err := os.Stat(filepath.Join(root, "standins/gremlin/lib/.pom.sha256")); err != nil {
		msg := "Gremlin Server not installed (run scripts/standins-start.sh gremlin once)"
		if os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	env := append(os.Environ(), "STANDIN_DIR="+dir, "STANDIN_GREMLIN_PORT="+strconv.Itoa(port), "STANDIN_GREMLIN_HEAP=512m")
	script := func(name string) *exec.Cmd {
		cmd := exec.Command("bash", filepath.Join(root, "scripts", name), "gremlin")
		cmd.Env = env
		return cmd
	}
	t.Cleanup(func() {
		if out, err := script("standins-stop.sh").CombinedOutput(); err != nil {
			t.Logf("stopping the private Gremlin Server: %v\n%s", err, out)
		}
	})
	start := time.Now()
	if out, err := script("standins-start.sh").CombinedOutput(); err != nil {
		t.Fatalf("starting a private Gremlin Server: %v\n%s", err, out)
	}
	f, err := os.Open(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "LINEAGEFLOW_GREMLIN_ENDPOINT="); ok {
			t.Logf("private Gremlin Server on %s (%.1fs to start)", v, time.Since(start).Seconds())
			return v
		}
	}
	t.Fatal("the private Gremlin Server's env file names no endpoint")
	return ""
}
