package codecheck

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestOnlyPackage: the lineageflow binary links no package
// meant for tests only:
//
//   - of this module: nothing under testkit/ or tools/ (test and bench
//     tooling), and no package with "test", "fake" or "mock" in a path
//     element (testenv, gremlintest, ...);
//   - of the standard library: not testing, testing/..., net/http/httptest
//     (a non-test file importing one of them). The runtime's own
//     internal/testlog and internal/synctest are linked by os and time
//     whatever the program does, and are not counted.
//
// Third-party packages are not checked: a dependency's internal packages
// are its own business (Pebble links its internal/testkeys, for one).
func TestBinaryLinksNoTestOnlyPackage(t *testing.T) {
	t.Parallel()
	root, module := moduleRoot(t)
	cmd := exec.Command("go", "list", "-deps", "./cmd/lineageflow")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.Bytes())
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !contains(deps, module+"/processor") {
		t.Fatalf("go list -deps ./cmd/lineageflow: %d packages, processor not among them", len(deps))
	}
	for _, p := range deps {
		if why := testOnly(p, module); why != "" {
			t.Errorf("cmd/lineageflow links %s: %s", p, why)
		}
	}
}

// testOnly says why package p is meant for tests only ("": it is not).
func testOnly(p, module string) string {
	switch {
	case p == "testing" || strings.HasPrefix(p, "testing/") || p == "net/http/httptest":
		return "a standard library package for tests"
	case p == module || !strings.HasPrefix(p, module+"/"):
		return ""
	}
	rel := strings.TrimPrefix(p, module+"/")
	for _, dir := range []string{"testkit", "tools"} {
		if rel == dir || strings.HasPrefix(rel, dir+"/") {
			return "under " + dir + "/ (test and bench tooling)"
		}
	}
	for _, el := range strings.Split(rel, "/") {
		for _, word := range []string{"test", "fake", "mock"} {
			if strings.Contains(el, word) {
				return "its path says " + word
			}
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestTestOnly(t *testing.T) {
	t.Parallel()
	const m = "example.com/m"
	for p, want := range map[string]bool{
		"testing": true, "testing/fstest": true, "net/http/httptest": true, "internal/testlog": false,
		m + "/testkit/testenv": true, m + "/tools/e2e": true, m + "/internal/gremlintest": true,
		m + "/sink/fakesink": true, m + "/processor": false, m + "/internal/replay": false, m: false,
		"github.com/cockroachdb/pebble/v2/internal/testkeys": false, m + "/toolsx": false,
	} {
		if got := testOnly(p, m) != ""; got != want {
			t.Errorf("testOnly(%q) = %v, want %v", p, got, want)
		}
	}
}
