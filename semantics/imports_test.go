package semantics

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports: the rules stay pure. No package under semantics/ may
// depend on Pebble, the checkpoint or window packages, or the processor
// (directly or through another package).
func TestImports(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-test", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/cockroachdb/pebble",
		"github.com/lineageflow/lineageflow/checkpoint",
		"github.com/lineageflow/lineageflow/window",
		"github.com/lineageflow/lineageflow/processor",
	}
	n := 0
	for _, dep := range strings.Fields(string(out)) {
		n++
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("semantics depends on %s", dep)
			}
		}
	}
	if n == 0 {
		t.Fatal("go list gave no dependency")
	}
}
