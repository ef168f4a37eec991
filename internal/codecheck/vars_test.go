package codecheck

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestNoMutablePackageVars: no package-level mutable state in non-test
// code. Every package-level variable declared in a non-test .go file of
// the module must
//
//  1. never be assigned after its declaration, in any file of the module,
//     tests included: no `V = x`, `V += x`, `V++`, `V[i] = x`, `V.f = x`,
//     `delete(V, k)`, `pkg.V = x` (a test that needs another size or
//     clock sets a per-instance option instead: a private options struct
//     set through the constructor or an unexported field); and
//  2. be one of the read-only kinds of allowedKind below (each with its
//     reason), or be named in allowedVars with its reason.
//
// A variable without an initialiser is never allowed (its zero value would
// be filled in later), except an embed.FS. Mutation through methods (an
// atomic's Add) is not an assignment: the kinds allowed have no such
// mutators, which is why the list is closed.
func TestNoMutablePackageVars(t *testing.T) {
	t.Parallel()
	root, module := moduleRoot(t)
	files := parseModule(t, root, module)
	if len(files) < 50 {
		t.Fatalf("found only %d Go files under %s", len(files), root)
	}
	for _, v := range mutableVars(root, module, files) {
		t.Error(v)
	}
}

// The rule catches what it is for, on a module of its own: a knob (not a
// constant) a test assigns, a table a test writes into, a variable assigned from another
// package, a counter without an initialiser; and lets a sentinel error,
// a table only read and a local shadowing a package name pass.
func TestNoMutablePackageVarsCatches(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for name, src := range map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.24\n",
		"a/a.go": `package a

import (
	"errors"
	"sync/atomic"
)

var knob = 5
var table = []int{1}
var read = map[string]int{"x": 1}
var Exported = []string{"a"}
var ErrX = errors.New("x")
var counter atomic.Int64

func f() int { knob := 2; knob++; return knob + read["x"] }
`,
		"a/a_test.go": `package a

import "testing"

func TestX(t *testing.T) { knob = 3; table[0] = 2 }
`,
		"b/b.go": `package b

import "example.com/m/a"

func g() { a.Exported[0] = "b" }
`,
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := mutableVars(root, "example.com/m", parseModule(t, root, "example.com/m"))
	want := []string{
		"a/a.go:13:5: package-level variable counter",
		"a/a.go:8:5: package-level variable knob",
		"a/a_test.go:5:28: assigns package-level variable knob",
		"a/a_test.go:5:38: assigns package-level variable table",
		"b/b.go:5:12: assigns package-level variable Exported",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d findings, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("finding %d: %q, want it to start with %q", i, got[i], want[i])
		}
	}
}

// mutableVars returns the rule's findings on files, sorted.
func mutableVars(root, module string, files []*file) []string {
	type declared struct {
		pos  token.Position
		spec *ast.ValueSpec
	}
	var out []string
	vars := map[string]map[string]declared{} // import path -> name -> declaration
	for _, f := range files {
		if f.test {
			continue
		}
		for _, d := range f.ast.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					pos := f.fset.Position(n.Pos())
					if reason := allowed(f, g, vs, i); reason == "" {
						out = append(out, fmt.Sprintf("%s: package-level variable %s is not a read-only kind the rule allows (sentinel error, table literal, regexp, sync.Pool, embed, var _ I = ...): make it a constant, a function or a field of an instance", rel(root, pos), n.Name))
					}
					if n.Name == "_" {
						continue
					}
					if vars[f.pkg] == nil {
						vars[f.pkg] = map[string]declared{}
					}
					vars[f.pkg][n.Name] = declared{pos: pos, spec: vs}
				}
			}
		}
	}
	for _, f := range files {
		for _, w := range writes(f, module) {
			if d, ok := vars[w.pkg][w.name]; ok {
				out = append(out, fmt.Sprintf("%s: assigns package-level variable %s (declared at %s): package variables are read-only; use a per-instance option",
					rel(root, f.fset.Position(w.pos)), w.name, rel(root, d.pos)))
			}
		}
	}
	sort.Strings(out)
	return out
}

// allowedKind names, by qualified function, the calls whose result may
// initialise a package-level variable, with why the value is read-only.
var allowedKind = map[string]string{
	"errors.New":          "sentinel error: compared with errors.Is, never changed",
	"fmt.Errorf":          "sentinel error wrapping another: never changed",
	"regexp.MustCompile":  "compiled regexp: safe for concurrent use, no mutators",
	"sync.OnceValue":      "a value computed once on first use, read-only afterwards",
	"sync.OnceValues":     "values computed once on first use, read-only afterwards",
	"sync.OnceFunc":       "a function run once",
	"time.FixedZone":      "*time.Location: immutable",
	"prometheus.NewDesc":  "Prometheus descriptor: immutable",
	"ops/metrics.desc":    "Prometheus descriptor (prometheus.NewDesc): immutable",
	"[]byte":              "a byte string constant (a key prefix)",
	"composite:sync.Pool": "sync.Pool: a free list, safe for concurrent use",
}

// allowedVars are variables allowed by name (import path relative to the
// module, then name), with why.
var allowedVars = map[string]string{
	"window.Merger":   "the Pebble merge operator, a struct of functions passed to pebble.Options",
	"lineage.strSafe": "a lookup table computed at init",
	"explorer.epoch":  "a formatted constant time (a string)",
}

// allowed returns why the i-th name of vs may be a package-level variable
// ("": it may not).
func allowed(f *file, g *ast.GenDecl, vs *ast.ValueSpec, i int) string {
	name := vs.Names[i].Name
	if name == "_" {
		return "compile-time interface check"
	}
	if r, ok := allowedVars[f.rel+"."+name]; ok {
		return r
	}
	for _, doc := range []*ast.CommentGroup{vs.Doc, g.Doc} {
		if doc != nil && strings.Contains(doc.Text()+rawComments(doc), "go:embed") {
			return "embedded files: embed.FS is read-only"
		}
	}
	if len(vs.Values) != len(vs.Names) {
		return ""
	}
	switch v := vs.Values[i].(type) {
	case *ast.CompositeLit:
		switch typ := v.Type.(type) {
		case *ast.ArrayType, *ast.MapType:
			return "a table literal, never assigned (rule 1)"
		case *ast.SelectorExpr:
			return allowedKind["composite:"+exprString(typ)]
		}
	case *ast.CallExpr:
		fun := exprString(v.Fun)
		if r, ok := allowedKind[fun]; ok {
			return r
		}
		return allowedKind[f.rel+"."+fun]
	}
	return ""
}

func rawComments(g *ast.CommentGroup) string {
	var b strings.Builder
	for _, c := range g.List {
		b.WriteString(c.Text)
	}
	return b.String()
}

func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	case *ast.ArrayType:
		return "[]" + exprString(x.Elt)
	case *ast.ParenExpr:
		return exprString(x.X)
	}
	return ""
}

// write is an assignment to what may be a package-level variable: pkg's
// name.
type write struct {
	pkg, name string
	pos       token.Pos
}

// writes returns the assignments in f whose target is rooted at an
// identifier not declared locally (a package-level variable of f's
// package) or at a package-qualified name (pkg.V). An identifier counts as
// local when the same name is declared anywhere in the enclosing top-level
// declaration (a parameter, :=, var, range variable): a syntactic check,
// conservative only where a function declares a local of a package
// variable's name.
func writes(f *file, module string) []write {
	imports := map[string]string{} // local name -> import path
	for _, im := range f.ast.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := path.Base(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = p
	}
	var out []write
	var locals map[string]bool
	target := func(e ast.Expr) {
		for {
			switch x := e.(type) {
			case *ast.IndexExpr:
				e = x.X
				continue
			case *ast.IndexListExpr:
				e = x.X
				continue
			case *ast.StarExpr:
				e = x.X
				continue
			case *ast.ParenExpr:
				e = x.X
				continue
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && !locals[id.Name] {
					if p, ok := imports[id.Name]; ok && strings.HasPrefix(p, module) {
						out = append(out, write{pkg: p, name: x.Sel.Name, pos: x.Pos()})
						return
					}
				}
				e = x.X
				continue
			case *ast.Ident:
				if x.Name != "_" && !locals[x.Name] {
					out = append(out, write{pkg: f.pkg, name: x.Name, pos: x.Pos()})
				}
			}
			return
		}
	}
	visit := func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				return true
			}
			for _, l := range s.Lhs {
				target(l)
			}
		case *ast.IncDecStmt:
			target(s.X)
		case *ast.RangeStmt:
			if s.Tok == token.ASSIGN {
				if s.Key != nil {
					target(s.Key)
				}
				if s.Value != nil {
					target(s.Value)
				}
			}
		case *ast.CallExpr:
			if id, ok := s.Fun.(*ast.Ident); ok && id.Name == "delete" && !locals["delete"] && len(s.Args) > 0 {
				target(s.Args[0])
			}
		}
		return true
	}
	for _, d := range f.ast.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			locals = localNames(d)
			ast.Inspect(d, visit)
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				if vs, ok := sp.(*ast.ValueSpec); ok {
					for _, v := range vs.Values {
						locals = localNames(v)
						ast.Inspect(v, visit)
					}
				}
			}
		}
	}
	return out
}

// localNames returns the names declared inside n: parameters, results,
// receivers, := and var declarations, range variables.
func localNames(n ast.Node) map[string]bool {
	names := map[string]bool{}
	ast.Inspect(n, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncType:
			for _, fl := range []*ast.FieldList{x.TypeParams, x.Params, x.Results} {
				if fl == nil {
					continue
				}
				for _, fd := range fl.List {
					for _, id := range fd.Names {
						names[id.Name] = true
					}
				}
			}
		case *ast.FuncDecl:
			if x.Recv != nil {
				for _, fd := range x.Recv.List {
					for _, id := range fd.Names {
						names[id.Name] = true
					}
				}
			}
		case *ast.AssignStmt:
			if x.Tok == token.DEFINE {
				for _, l := range x.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						names[id.Name] = true
					}
				}
			}
		case *ast.RangeStmt:
			if x.Tok == token.DEFINE {
				for _, e := range []ast.Expr{x.Key, x.Value} {
					if id, ok := e.(*ast.Ident); ok {
						names[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range x.Names {
				names[id.Name] = true
			}
		}
		return true
	})
	return names
}

type file struct {
	fset *token.FileSet
	ast  *ast.File
	test bool
	pkg  string // import path of its directory (an external test package: the same)
	rel  string // pkg relative to the module
}

// moduleRoot returns the directory of the module's go.mod and its path.
func moduleRoot(t *testing.T) (root, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			defer f.Close()
			s := bufio.NewScanner(f)
			for s.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatalf("%s/go.mod names no module", dir)
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = filepath.Dir(dir)
	}
}

// parseModule parses every .go file of the module at root: not those of
// nested modules, testdata, node_modules or hidden directories.
func parseModule(t *testing.T, root, module string) []*file {
	t.Helper()
	fset := token.NewFileSet()
	var out []*file
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == root {
				return nil
			}
			n := d.Name()
			if n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		af, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		relDir, _ := filepath.Rel(root, filepath.Dir(p))
		relDir = filepath.ToSlash(relDir)
		pkg := module
		if relDir != "." {
			pkg += "/" + relDir
		}
		out = append(out, &file{fset: fset, ast: af, test: strings.HasSuffix(p, "_test.go"), pkg: pkg, rel: relDir})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].fset.Position(out[i].ast.Pos()).Filename < out[j].fset.Position(out[j].ast.Pos()).Filename
	})
	return out
}

func rel(root string, p token.Position) string {
	if r, err := filepath.Rel(root, p.Filename); err == nil {
		p.Filename = r
	}
	return p.String()
}
