package check

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// stage is one stage of the parsed Dockerfile: its base and instructions.
type stage struct {
	from, name string
	instrs     [][2]string // instruction (upper case), arguments
}

func parseDockerfile(t *testing.T) []stage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// Join continuation lines, drop comments.
	text := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(b), " ")
	var stages []stage
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, args, _ := strings.Cut(line, " ")
		instr = strings.ToUpper(instr)
		args = strings.TrimSpace(args)
		if instr == "FROM" {
			f := strings.Fields(args)
			st := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile: %s before FROM", instr)
		}
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, [2]string{instr, args})
	}
	return stages
}

func (s stage) all(instr string) []string {
	var out []string
	for _, in := range s.instrs {
		if in[0] == instr {
			out = append(out, in[1])
		}
	}
	return out
}

// buildCmd is the exact build the Dockerfile must run (binary builds the
// same way).
const buildCmd = `CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/lineageflow ./cmd/lineageflow`

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t)
	if len(stages) != 2 {
		t.Fatalf("want a two-stage build (builder, final), got %d stages", len(stages))
	}
	build, final := stages[0], stages[1]
	// Builder: golang >= the go directive of go.mod.
	m := regexp.MustCompile(`^golang:1\.(\d+)`).FindStringSubmatch(build.from)
	if m == nil || build.name == "" {
		t.Fatalf("builder stage is %q AS %q: want golang:1.N AS <name>", build.from, build.name)
	}
	gomod, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	gm := regexp.MustCompile(`(?m)^go 1\.(\d+)`).FindSubmatch(gomod)
	if gm == nil {
		t.Fatal("go.mod has no go directive")
	}
	if a, _ := strconv.Atoi(m[1]); a < atoi(string(gm[1])) || a < 24 {
		t.Errorf("builder Go 1.%s is older than go.mod's 1.%s (or 1.24)", m[1], gm[1])
	}
	found := false
	for _, run := range build.all("RUN") {
		if strings.Contains(run, buildCmd) {
			found = true
		}
	}
	if !found {
		t.Errorf("no RUN in the builder runs exactly %q", buildCmd)
	}
	// Final: static base, the binary only, non-root.
	if !strings.HasPrefix(final.from, "gcr.io/distroless/static") && final.from != "scratch" {
		t.Errorf("final stage FROM %s: want gcr.io/distroless/static* or scratch", final.from)
	}
	copied := false
	for _, c := range final.all("COPY") {
		if strings.Contains(c, "--from="+build.name) && strings.Contains(c, "/out/lineageflow ") {
			copied = true
		}
	}
	if !copied {
		t.Errorf("final stage does not COPY --from=%s /out/lineageflow", build.name)
	}
	users := final.all("USER")
	if len(users) == 0 {
		t.Fatal("final stage has no USER: it would run as root")
	}
	user, _, _ := strings.Cut(users[len(users)-1], ":")
	if uid, err := strconv.Atoi(user); (err == nil && uid == 0) || user == "root" || user == "" {
		t.Errorf("final USER %q is root", users[len(users)-1])
	}
	ep := final.all("ENTRYPOINT")
	if len(ep) != 1 || !strings.Contains(ep[0], `"/usr/local/bin/lineageflow"`) {
		t.Errorf("ENTRYPOINT = %v, want the binary in exec form", ep)
	}
	for _, e := range final.all("EXPOSE") {
		if e != "9090" {
			t.Errorf("EXPOSE %s: the HTTP server's default is :9090", e)
		}
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// listedPackage is what TestDockerignoreKeepsTheBuild reads of `go list -json`.
type listedPackage struct {
	ImportPath string
	Dir        string
	Module     *struct{ Main bool }
	GoFiles, CgoFiles, CFiles, CXXFiles, HFiles, SFiles, SysoFiles,
	EmbedFiles []string
}

// TestDockerignoreKeepsTheBuild: the Docker build context keeps every file
// `go build ./cmd/lineageflow` reads. The list is derived from
// `go list -deps` (for the image's platform, linux without cgo), so it keeps
// holding when packages or top-level folders are added; .dockerignore is
// read and matched by Docker's own implementation (moby/patternmatcher).
// node_modules stays out of the context wherever it is.
func TestDockerignoreKeepsTheBuild(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	patterns, err := ignorefile.ReadAll(bytes.NewReader(b))
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	excluded := func(rel string) bool {
		ex, err := pm.MatchesOrParentMatches(rel)
		if err != nil {
			t.Fatalf(".dockerignore on %s: %v", rel, err)
		}
		return ex
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if excluded(f) {
			t.Errorf(".dockerignore excludes %s (the Dockerfile copies it)", f)
		}
	}

	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps",
		"-json=ImportPath,Dir,Module,GoFiles,CgoFiles,CFiles,CXXFiles,HFiles,SFiles,SysoFiles,EmbedFiles",
		"./cmd/lineageflow")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	tops := map[string]bool{}
	nfiles := 0
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || !p.Module.Main {
			continue // standard library, or a module `go mod download` fetches
		}
		var out []string
		for _, files := range [][]string{p.GoFiles, p.CgoFiles, p.CFiles, p.CXXFiles, p.HFiles, p.SFiles, p.SysoFiles, p.EmbedFiles} {
			for _, f := range files {
				rel, err := filepath.Rel(absRoot, filepath.Join(p.Dir, f))
				if err != nil || strings.HasPrefix(rel, "..") {
					t.Fatalf("package %s: file %s is outside the repository", p.ImportPath, f)
				}
				rel = filepath.ToSlash(rel)
				top, _, _ := strings.Cut(rel, "/")
				tops[top] = true
				nfiles++
				if excluded(rel) {
					out = append(out, rel)
				}
			}
		}
		if len(out) > 0 {
			top, _, _ := strings.Cut(out[0], "/")
			t.Errorf("package %s: .dockerignore excludes %d of its files from the Docker build context (%s); keep them, e.g. !%s/", p.ImportPath, len(out), strings.Join(out, " "), top)
		}
	}
	if !tops["cmd"] || nfiles == 0 {
		t.Fatalf("go list -deps ./cmd/lineageflow listed no file of cmd/ (%d files)", nfiles)
	}

	// node_modules: every one in the tree, and where one would appear.
	var nm []string
	for top := range tops {
		nm = append(nm, top+"/node_modules", top+"/web/node_modules")
	}
	nm = append(nm, "node_modules", "explorer/web/node_modules", "source/node_modules")
	err = filepath.WalkDir(absRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Name() == "node_modules" {
			rel, _ := filepath.Rel(absRoot, p)
			nm = append(nm, filepath.ToSlash(rel))
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(nm)
	for _, d := range nm {
		for _, f := range []string{d, path.Join(d, "pkg/package.json"), path.Join(d, "pkg/dist/index.js")} {
			if !excluded(f) {
				t.Errorf("%s is in the Docker build context: .dockerignore must exclude every node_modules", f)
				break
			}
		}
	}
}

// TestStaticBinary: the Dockerfile's flags give a binary that runs on
// distroless/static: no dynamic loader, no shared libraries, stripped.
func TestStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("ELF check")
	}
	bin := binary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("binary has a %v program header: it is not static", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("binary needs shared libraries %v", libs)
	}
	if s := f.Section(".symtab"); s != nil {
		t.Error("binary has a symbol table: -s did not strip it")
	}
	st, _ := os.Stat(bin)
	t.Logf("static binary: %.1f MiB", float64(st.Size())/(1<<20))
	// -trimpath: no build-machine paths.
	data, _ := os.ReadFile(bin)
	if wd, _ := filepath.Abs(root); bytes.Contains(data, []byte(wd+"/processor")) {
		t.Errorf("binary contains the build path %s: -trimpath missing", wd)
	}
}
