package check

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// root is the repository root (this module lives in deploy/check).
const root = "../.."

var (
	binOnce sync.Once
	binPath string
	binErr  error
	helpMu  sync.Mutex
	helps   = map[string]map[string]flagInfo{}
)

type flagInfo struct{ name, def string }

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// flagsOf returns the environment variables of `lineageflow <cmd>`'s flags,
// read from the --help of the binary built from this tree.
func flagsOf(t *testing.T, cmd string) map[string]flagInfo {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lineageflow-check")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "lineageflow")
		c := exec.Command("go", "build", "-o", binPath, "./cmd/lineageflow")
		c.Dir = root
		if out, err := c.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/lineageflow: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	helpMu.Lock()
	defer helpMu.Unlock()
	if h, ok := helps[cmd]; ok {
		return h
	}
	out, _ := exec.Command(binPath, cmd, "--help").CombinedOutput() // --help exits 0 or 1
	re := regexp.MustCompile(`^  -(\S+)  \[(LINEAGEFLOW_[A-Z0-9_]+)\](?: \(default (.*)\))?$`)
	h := map[string]flagInfo{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			h[m[2]] = flagInfo{name: m[1], def: m[3]}
		}
	}
	if len(h) == 0 {
		t.Fatalf("lineageflow %s --help printed no flags:\n%s", cmd, out)
	}
	helps[cmd] = h
	return h
}

// checkEnv fails for every LINEAGEFLOW_* variable that is not a flag of cmd
// and for every required variable that is missing.
func checkEnv(t *testing.T, where, cmd string, env map[string]string, required ...string) {
	t.Helper()
	flags := flagsOf(t, cmd)
	for k := range env {
		if strings.HasPrefix(k, "LINEAGEFLOW_") {
			if _, ok := flags[k]; !ok {
				t.Errorf("%s: %s is not a flag of `lineageflow %s` (it would be ignored)", where, k, cmd)
			}
		}
	}
	for _, k := range required {
		if env[k] == "" {
			t.Errorf("%s: required %s is not set", where, k)
		}
	}
}

// parseDuration reads a Go duration flag value.
func parseDuration(t *testing.T, where, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s: %q is not a duration: %v", where, s, err)
	}
	return d
}
