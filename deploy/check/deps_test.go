package check

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const modulePath = "github.com/lineageflow/lineageflow"

// goList runs `go list args...` in the service's module.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.Bytes())
	}
	return string(out)
}

// under reports whether import path p is prefix or a package below it.
func under(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// TestBinaryLinksNoTestOnlyPackage: the binary does not link the test-only
// packages (testkit/) nor the tools (tools/: fault matrix, end-to-end bench).
func TestBinaryLinksNoTestOnlyPackage(t *testing.T) {
	deps := strings.Fields(goList(t, "-deps", "./cmd/lineageflow"))
	if len(deps) == 0 {
		t.Fatal("go list -deps ./cmd/lineageflow listed nothing")
	}
	for _, p := range deps {
		for _, bad := range []string{modulePath + "/testkit", modulePath + "/tools"} {
			if under(p, bad) {
				t.Errorf("cmd/lineageflow depends on %s (under %s/)", p, strings.TrimPrefix(bad, modulePath+"/"))
			}
		}
	}
}

// TestProcessorHasNoAWSOrKCL: the processor is independent of where records
// come from: no package under processor/ depends on the AWS SDK or the KCL
// (the Kinesis source lives in source/).
func TestProcessorHasNoAWSOrKCL(t *testing.T) {
	if _, err := os.Stat(filepath.Join(root, "processor", "worker.go")); err == nil {
		t.Skip("processor/worker.go still exists (the KCL worker, moving to source/): this check becomes active once it is gone")
	}
	out := goList(t, "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./processor/...")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatal("go list ./processor/... listed nothing")
	}
	for _, l := range lines {
		f := strings.Fields(l)
		for _, bad := range []string{"github.com/aws/aws-sdk-go-v2", "github.com/vmware/vmware-go-kcl-v2"} {
			var hits []string
			for _, d := range f[1:] {
				if under(d, bad) {
					hits = append(hits, d)
				}
			}
			if len(hits) > 0 {
				t.Errorf("%s depends on %d packages of %s (%s)", f[0], len(hits), bad, strings.Join(hits, " "))
			}
		}
	}
}
