package deploycheck

import (
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "regenerate the README configuration table")

const root = "../.."

// dockerfile is the parsed Dockerfile: its stages and instructions.
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

// buildFlags are the exact flags the Dockerfile must build with.
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

// The build context keeps every package the binary needs.
func TestDockerignoreKeepsTheBuild(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "!") {
			kept[strings.TrimSuffix(strings.TrimPrefix(l, "!"), "/")] = true
		}
	}
	for _, f := range []string{"go.mod", "go.sum", "cmd"} {
		if !kept[f] {
			t.Errorf(".dockerignore does not keep %s", f)
		}
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "../../cmd/lineageflow").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, "github.com/lineageflow/lineageflow/")
		if !ok {
			continue
		}
		top, _, _ := strings.Cut(rel, "/")
		if !kept[top] {
			t.Errorf("package %s is excluded from the Docker build context by .dockerignore", p)
		}
	}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary builds cmd/lineageflow exactly as the Dockerfile does.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lineageflow-deploycheck")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "lineageflow")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binPath, "./cmd/lineageflow")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("%s: %w\n%s", cmd, err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
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

// help returns the flags of every command, from the built binary.
func help(t *testing.T) map[string][]Flag {
	t.Helper()
	bin := binary(t)
	byCmd := map[string][]Flag{}
	for _, c := range Commands {
		out, _ := exec.Command(bin, c, "--help").CombinedOutput() // exits 0 or 1 on --help
		fs, err := ParseHelp(string(out))
		if err != nil {
			t.Fatalf("%s --help: %v", c, err)
		}
		byCmd[c] = fs
	}
	return byCmd
}

const (
	tableBegin = "<!-- flags:begin (generated by internal/deploycheck: go test ./internal/deploycheck -run TestReadmeConfiguration -rewrite) -->"
	tableEnd   = "<!-- flags:end -->"
)

// TestReadmeConfiguration: the README's table of flags, environment
// variables and defaults is what the binary says.
func TestReadmeConfiguration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	byCmd := help(t)
	for _, c := range Commands {
		for _, f := range byCmd[c] {
			if want := "LINEAGEFLOW_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_")); f.Env != want {
				t.Errorf("%s -%s: env %s, want %s", c, f.Name, f.Env, want)
			}
		}
	}
	table := Table(byCmd)
	path := filepath.Join(root, "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, tableBegin), strings.Index(readme, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q ... %q block", tableBegin, tableEnd)
	}
	cur := readme[i+len(tableBegin) : j]
	want := "\n" + table
	if cur == want {
		return
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(readme[:i+len(tableBegin)]+want+readme[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("README.md configuration table rewritten")
		return
	}
	t.Errorf("README.md configuration table is stale; regenerate with\n  go test ./internal/deploycheck -run TestReadmeConfiguration -rewrite\nwant:\n%s", want)
}
