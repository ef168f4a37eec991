package testenv_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// freePort returns a port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func portAccepts(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func pidGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// pollUntil polls cond until it holds or the deadline passes.
func pollUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond) // poll interval, not synchronisation
	}
}

func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("env file: %v", err)
	}
	defer f.Close()
	m := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m
}

// TestStandinScriptsStartStopLeaveNothing starts the stand-ins with the
// scripts in a fresh STANDIN_DIR on free ports, checks the env file and the
// health of each, stops them, and checks that every recorded process is gone
// and no port accepts connections any more. Set LINEAGEFLOW_STANDINS_GREMLIN=0
// to leave Gremlin Server out; Redis is left out when redis-server is not
// installed (unless LINEAGEFLOW_REQUIRE_STANDINS=1).
func TestStandinScriptsStartStopLeaveNothing(t *testing.T) {
	root := testenv.RepoRoot()
	if _, err := os.Stat(filepath.Join(root, "standins/node/node_modules/kinesalite")); err != nil &&
		os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") != "1" {
		t.Skip("stand-ins not installed (run scripts/standins-start.sh once, or set LINEAGEFLOW_REQUIRE_STANDINS=1)")
	}
	if testing.Short() {
		t.Skip("starts processes; skipped with -short")
	}

	names := []string{"kinesis", "dynamodb"}
	if os.Getenv("LINEAGEFLOW_STANDINS_GREMLIN") != "0" {
		names = append(names, "gremlin")
	}
	if _, err := exec.LookPath("redis-server"); err == nil || os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") == "1" {
		names = append(names, "redis")
	} else {
		t.Log("redis-server not installed: the redis stand-in is left out")
	}
	if _, err := exec.LookPath("python3"); err == nil || os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") == "1" {
		names = append(names, "s3")
	} else {
		t.Log("python3 not installed: the s3 stand-in (moto) is left out")
	}
	dir := t.TempDir()
	ports := map[string]int{}
	env := append(os.Environ(), "STANDIN_DIR="+dir)
	for _, n := range names {
		ports[n] = freePort(t)
		env = append(env, "STANDIN_"+strings.ToUpper(n)+"_PORT="+strconv.Itoa(ports[n]))
	}
	run := func(script string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "scripts", script), args...)
		cmd.Env = env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("%s %v (%.1fs):\n%s", script, args, time.Since(start).Seconds(), out)
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
	}

	// Whatever happens, do not leave processes behind.
	t.Cleanup(func() {
		cmd := exec.Command(filepath.Join(root, "scripts", "standins-stop.sh"))
		cmd.Env = env
		_ = cmd.Run()
	})

	run("standins-start.sh", names...)

	pids := map[string]int{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, "pids", n+".pid"))
		if err != nil {
			t.Fatalf("pid file of %s: %v", n, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			t.Fatalf("pid file of %s holds %q", n, b)
		}
		pids[n] = pid
		if pidGone(pid) {
			t.Fatalf("%s: recorded pid %d is not running", n, pid)
		}
		if !portAccepts(ports[n]) {
			t.Fatalf("%s: port %d does not accept connections after start", n, ports[n])
		}
	}
	kv := readEnvFile(t, filepath.Join(dir, "env"))
	want := map[string]string{
		"LINEAGEFLOW_KINESIS_ENDPOINT":  "http://127.0.0.1:" + strconv.Itoa(ports["kinesis"]),
		"LINEAGEFLOW_DYNAMODB_ENDPOINT": "http://127.0.0.1:" + strconv.Itoa(ports["dynamodb"]),
		"AWS_REGION":                    testenv.Region,
	}
	if p, ok := ports["gremlin"]; ok {
		want["LINEAGEFLOW_GREMLIN_ENDPOINT"] = "ws://127.0.0.1:" + strconv.Itoa(p) + "/gremlin"
	}
	if p, ok := ports["redis"]; ok {
		want["LINEAGEFLOW_REDIS_ENDPOINT"] = "redis://127.0.0.1:" + strconv.Itoa(p) + "/0"
	}
	if p, ok := ports["s3"]; ok {
		want["LINEAGEFLOW_S3_ENDPOINT"] = "http://127.0.0.1:" + strconv.Itoa(p)
	}
	for k, v := range want {
		if kv[k] != v {
			t.Errorf("env file: %s=%q, want %q", k, kv[k], v)
		}
	}

	// Starting again is harmless: same processes, nothing new.
	run("standins-start.sh", names...)
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(dir, "pids", n+".pid"))
		if got, _ := strconv.Atoi(strings.TrimSpace(string(b))); got != pids[n] {
			t.Fatalf("%s: second start replaced pid %d with %d", n, pids[n], got)
		}
	}

	// Stopping one leaves the others running.
	run("standins-stop.sh", "kinesis")
	if !pollUntil(10*time.Second, func() bool { return pidGone(pids["kinesis"]) }) {
		t.Fatalf("kinesis pid %d still running after stop kinesis", pids["kinesis"])
	}
	if pidGone(pids["dynamodb"]) {
		t.Fatal("stop kinesis also stopped dynamodb")
	}
	if _, ok := readEnvFile(t, filepath.Join(dir, "env"))["LINEAGEFLOW_KINESIS_ENDPOINT"]; ok {
		t.Error("env file still names kinesis after it was stopped")
	}

	run("standins-stop.sh")
	for _, n := range names {
		pid := pids[n]
		if !pollUntil(10*time.Second, func() bool { return pidGone(pid) }) {
			t.Errorf("%s: pid %d still running after stop", n, pid)
		}
		if !pollUntil(10*time.Second, func() bool { return !portAccepts(ports[n]) }) {
			t.Errorf("%s: port %d still accepts connections after stop", n, ports[n])
		}
		if _, err := os.Stat(filepath.Join(dir, "pids", n+".pid")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: pid file left behind (%v)", n, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "env")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("env file left behind after stopping everything (%v)", err)
	}
}
