package check

import (
	"bufio"
	"flag"
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

var rewrite = flag.Bool("rewrite", false, "regenerate the README configuration table")

var (
	binOnce sync.Once
	binPath string
	binErr  error
	helpMu  sync.Mutex
	helps   = map[string][]Flag{}
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// binary builds cmd/lineageflow once, exactly as the Dockerfile does
// (buildCmd: CGO_ENABLED=0, -trimpath, -ldflags "-s -w"), for the host; every
// test that needs the binary (ELF check, --help) shares this one build.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lineageflow-check")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "lineageflow")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binPath, "./cmd/lineageflow")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("%s: %w\n%s", cmd, err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// Flag is one flag as `lineageflow <command> --help` prints it.
type Flag struct {
	Name, Env, Default, Usage string
}

var flagLine = regexp.MustCompile(`^  -(\S+)  \[(LINEAGEFLOW_[A-Z0-9_]+)\](?: \(default (.*)\))?$`)

// parseHelp reads the flags of a --help output (internal/cli.Usage's
// format: "  -name  [ENV] (default D)" then the usage on the next lines).
// It is the one --help parser of this module.
func parseHelp(out string) ([]Flag, error) {
	var flags []Flag
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := flagLine.FindStringSubmatch(line); m != nil {
			flags = append(flags, Flag{Name: m[1], Env: m[2], Default: m[3]})
			continue
		}
		if strings.HasPrefix(line, "      ") && len(flags) > 0 {
			f := &flags[len(flags)-1]
			f.Usage = strings.TrimSpace(f.Usage + " " + strings.TrimSpace(line))
		}
	}
	if len(flags) == 0 {
		return nil, fmt.Errorf("no flags found in help output:\n%s", out)
	}
	return flags, nil
}

// helpOf returns the flags of `lineageflow <cmd>`, in --help order, read
// from the binary built from this tree.
func helpOf(t *testing.T, cmd string) []Flag {
	t.Helper()
	bin := binary(t)
	helpMu.Lock()
	defer helpMu.Unlock()
	if h, ok := helps[cmd]; ok {
		return h
	}
	out, _ := exec.Command(bin, cmd, "--help").CombinedOutput() // --help exits 0 or 1
	h, err := parseHelp(string(out))
	if err != nil {
		t.Fatalf("lineageflow %s --help: %v", cmd, err)
	}
	helps[cmd] = h
	return h
}

// flagsOf returns the flags of `lineageflow <cmd>` by environment variable.
func flagsOf(t *testing.T, cmd string) map[string]Flag {
	t.Helper()
	byEnv := map[string]Flag{}
	for _, f := range helpOf(t, cmd) {
		byEnv[f.Env] = f
	}
	return byEnv
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
