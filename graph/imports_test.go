package graph

import (
	"os/exec"
	"strings"
	"testing"
)

// The package doc's import rule: nothing of this module (in particular not
// sink, explorer or processor), only the standard library, gremlin-go and
// the AWS SDK (and what they import).
func TestImports(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const self = "github.com/lineageflow/lineageflow/graph"
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != self {
		t.Fatalf("go list -deps gave %d packages, not ending with %s", len(deps), self)
	}
	for _, p := range deps {
		if p != self && strings.HasPrefix(p, "github.com/lineageflow/lineageflow/") {
			t.Errorf("graph imports %s: it must not import any package of this module", p)
		}
	}
}
