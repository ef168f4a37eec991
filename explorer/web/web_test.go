package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func TestHandlerServesIndexAssetsAndDeepLinks(t *testing.T) {
	h := Handler()
	index, err := fs.ReadFile(Dist(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/", "/index.html", "/lineage/dataset:ns:a", "/?node=dataset%3Ans%3Aa&up=2&down=1&sel=x"} {
		rec := get(t, h, p)
		if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), index) {
			t.Errorf("GET %s: %d, index.html served: %v", p, rec.Code, bytes.Equal(rec.Body.Bytes(), index))
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("GET %s: Content-Type %q", p, ct)
		}
	}
	js := get(t, h, "/assets/app.js")
	if js.Code != http.StatusOK || !strings.Contains(js.Header().Get("Content-Type"), "javascript") || js.Body.Len() < 1000 {
		t.Fatalf("GET /assets/app.js: %d %q %d bytes", js.Code, js.Header().Get("Content-Type"), js.Body.Len())
	}
	if css := get(t, h, "/assets/app.css"); css.Code != http.StatusOK || !strings.HasPrefix(css.Header().Get("Content-Type"), "text/css") {
		t.Fatalf("GET /assets/app.css: %d %q", css.Code, css.Header().Get("Content-Type"))
	}
	// A missing asset is a 404, not index.html (a broken build must show).
	if rec := get(t, h, "/assets/nope.js"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /assets/nope.js: %d, want 404", rec.Code)
	}
	// /api/ is never the app: JSON 404 like the API's errors.
	rec := get(t, h, "/api/lf/v1/nope")
	var body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if rec.Code != http.StatusNotFound || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Code != 404 {
		t.Errorf("GET /api/lf/v1/nope: %d %s", rec.Code, rec.Body.String())
	}
	// Conditional GET with the ETag: 304.
	req := httptest.NewRequest(http.MethodGet, "/assets/app.js", nil)
	req.Header.Set("If-None-Match", js.Header().Get("ETag"))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("conditional GET: %d, want 304", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", rec.Code)
	}
}

// inputFiles lists the inputs of the build as build.mjs hashes them.
func inputFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"build.mjs", "package.json", "package-lock.json"}
	ents, err := os.ReadDir("src")
	if err != nil {
		t.Fatal(err)
	}
	var src []string
	for _, e := range ents {
		if !e.IsDir() {
			src = append(src, "src/"+e.Name())
		}
	}
	sort.Strings(src)
	return append(files, src...)
}

// TestDistMatchesSources fails when a source of the UI changed and dist/ was
// not rebuilt: dist/build-info.json holds the SHA-256 of every input of the
// build that made it. Needs no npm, so it runs everywhere.
func TestDistMatchesSources(t *testing.T) {
	b, err := fs.ReadFile(Dist(), "build-info.json")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Inputs map[string]string `json:"inputs"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	files := inputFiles(t)
	if len(files) != len(info.Inputs) {
		t.Errorf("dist was built from %d inputs, the sources have %d: run `npm ci && npm run build` in explorer/web", len(info.Inputs), len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); info.Inputs[f] != got {
			t.Errorf("%s changed since dist/ was built: run `npm ci && npm run build` in explorer/web and commit dist/", f)
		}
	}
}

// TestDistReproducible rebuilds the UI from the lockfile (npm ci in a copy of
// the sources, then build.mjs into a temporary directory) and fails if any
// file differs from the committed dist/. Skipped without npm unless
// LINEAGEFLOW_REQUIRE_STANDINS=1 (CI), and in -short mode.
func TestDistReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no npm ci")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		if os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") == "1" {
			t.Fatal("npm not found (LINEAGEFLOW_REQUIRE_STANDINS=1): install Node 20 and npm")
		}
		t.Skip("npm not found")
	}
	work := t.TempDir()
	for _, f := range inputFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(work, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile("tsconfig.json"); err == nil {
		_ = os.WriteFile(filepath.Join(work, "tsconfig.json"), b, 0o644)
	}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "npm_config_audit=false", "npm_config_fund=false", "npm_config_update_notifier=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run(npm, "ci")
	run(npm, "run", "typecheck")
	out := filepath.Join(work, "out")
	run("node", "build.mjs", out)

	want := map[string][]byte{}
	_ = fs.WalkDir(Dist(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			want[p], _ = fs.ReadFile(Dist(), p)
		}
		return err
	})
	got := map[string][]byte{}
	_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(out, p)
			got[filepath.ToSlash(rel)], _ = os.ReadFile(p)
		}
		return err
	})
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			t.Errorf("dist/%s is committed but the build does not make it", p)
		case !bytes.Equal(g, w):
			t.Errorf("dist/%s differs from a fresh build from the lockfile (%d vs %d bytes): rebuild and commit dist/", p, len(w), len(g))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("the build makes %s, which dist/ does not have", p)
		}
	}
}

// maxSourceLines bounds every file under src/: a file that grows past it
// holds more than one concern and is split (graph, panels, sources, app).
const maxSourceLines = 400

func TestSourceFilesStaySmall(t *testing.T) {
	n := 0
	err := filepath.WalkDir("src", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		if lines := bytes.Count(b, []byte("\n")); lines > maxSourceLines {
			t.Errorf("%s has %d lines, more than %d: split it by concern", p, lines, maxSourceLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no files under src/")
	}
}
