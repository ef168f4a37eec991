package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// PythonVenv returns the python of a virtual environment holding the
// packages of requirements (a path relative to the repository root), made
// on first use (a few minutes of pip) next to the stand-ins' env file as
// dir, or at $venvVar when that is set. It is reused as long as probe (a
// Python import statement) runs in it. Without python3 the test is
// skipped, or fails under LINEAGEFLOW_REQUIRE_STANDINS=1.
func PythonVenv(t testing.TB, dir, venvVar, requirements, probe string) string {
	t.Helper()
	py3, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") == "1" {
			t.Fatalf("python3 not found: %s needs it", t.Name())
		}
		t.Skip("python3 not found")
	}
	venv := os.Getenv(venvVar)
	if venv == "" {
		venv = filepath.Join(filepath.Dir(EnvFile()), dir)
	}
	python := filepath.Join(venv, "bin", "python")
	req := filepath.Join(RepoRoot(), filepath.FromSlash(requirements))
	if exec.Command(python, "-c", probe).Run() == nil {
		return python
	}
	t.Logf("creating %s with %s", venv, req)
	for _, args := range [][]string{
		{py3, "-m", "venv", venv},
		{filepath.Join(venv, "bin", "pip"), "install", "-q", "--disable-pip-version-check", "-r", req},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return python
}
