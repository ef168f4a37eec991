package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// documents returns the files checked, relative to the root.
func documents(files map[string]bool) []string {
	var docs []string
	for f := range files {
		switch {
		case f == "DESIGN.md", f == "README.md":
		case strings.HasPrefix(f, "docs/") && strings.HasSuffix(f, ".md") && !strings.Contains(f[len("docs/"):], "/"):
		case path.Base(f) == "doc.go":
		default:
			continue
		}
		docs = append(docs, f)
	}
	sort.Strings(docs)
	return docs
}

// repo is what the checks need to know of the repository.
type repo struct {
	root  string
	files map[string]bool // git ls-files
	dirs  map[string]bool // every folder holding a file of files
	top   map[string]bool // first path elements
	pkgs  map[string][]*pkgDecls
	goDir map[string]bool // folders with a non-test .go file of the module
}

// pkgDecls are the exported top-level names of one package and the members
// (methods, fields, interface methods) of its types.
type pkgDecls struct {
	dir     string
	names   map[string]bool
	members map[string]map[string]bool
}

func (p *pkgDecls) member(typ, m string) map[string]bool {
	if p.members[typ] == nil {
		p.members[typ] = map[string]bool{}
	}
	return p.members[typ]
}

func loadRepo(t *testing.T) *repo {
	t.Helper()
	root := findRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout?)", err)
	}
	r := &repo{root: root, files: map[string]bool{}, dirs: map[string]bool{}, top: map[string]bool{},
		pkgs: map[string][]*pkgDecls{}, goDir: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := sc.Text()
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			continue // deleted in the work tree
		}
		r.files[f] = true
		r.top[strings.SplitN(f, "/", 2)[0]] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			r.dirs[d] = true
		}
	}
	byDir := map[string][]string{}
	for f := range r.files {
		if strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") && !strings.Contains(f, "/testdata/") {
			byDir[path.Dir(f)] = append(byDir[path.Dir(f)], f)
		}
	}
	fset := token.NewFileSet()
	for dir, fs := range byDir {
		if !inModule(r, dir) {
			continue
		}
		r.goDir[dir] = true
		var name string
		p := &pkgDecls{dir: dir, names: map[string]bool{}, members: map[string]map[string]bool{}}
		sort.Strings(fs)
		for _, f := range fs {
			af, err := parser.ParseFile(fset, filepath.Join(root, f), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parse %s: %v", f, err)
			}
			name = af.Name.Name
			collectDecls(p, af)
		}
		if name != "main" {
			r.pkgs[name] = append(r.pkgs[name], p)
		}
	}
	return r
}

// inModule reports whether dir belongs to the root module (not to a
// nested module such as deploy/check).
func inModule(r *repo, dir string) bool {
	for d := dir; d != "."; d = path.Dir(d) {
		if r.files[d+"/go.mod"] {
			return false
		}
	}
	return true
}

func collectDecls(p *pkgDecls, f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				p.names[d.Name.Name] = true
				continue
			}
			if typ := recvType(d.Recv.List[0].Type); typ != "" {
				p.member(typ, d.Name.Name)[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					p.names[s.Name.Name] = true
					m := p.member(s.Name.Name, "")
					switch tt := s.Type.(type) {
					case *ast.StructType:
						for _, fld := range tt.Fields.List {
							for _, n := range fld.Names {
								m[n.Name] = true
							}
							if len(fld.Names) == 0 {
								if n := recvType(fld.Type); n != "" {
									m[n] = true
								}
							}
						}
					case *ast.InterfaceType:
						for _, fld := range tt.Methods.List {
							for _, n := range fld.Names {
								m[n.Name] = true
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.names[n.Name] = true
					}
				}
			}
		}
	}
}

// recvType returns the type name of a receiver or embedded field.
func recvType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvType(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.IndexExpr:
		return recvType(e.X)
	case *ast.IndexListExpr:
		return recvType(e.X)
	}
	return ""
}

func findRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/lineageflow/lineageflow\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("the module root (go.mod of github.com/lineageflow/lineageflow) not found above the test")
		}
		dir = parent
	}
}

// exists reports whether p (a path, a folder with or without its trailing
// slash, or a pattern with *) is in git ls-files.
func (r *repo) exists(p string) bool {
	p = strings.TrimPrefix(p, "./")
	p = strings.TrimSuffix(p, "/")
	if strings.ContainsAny(p, "*?[") {
		for f := range r.files {
			if ok, _ := path.Match(p, f); ok {
				return true
			}
		}
		for d := range r.dirs {
			if ok, _ := path.Match(p, d); ok {
				return true
			}
		}
		return false
	}
	return r.files[p] || r.dirs[p]
}

// resolve reports whether pkg.name (and .member, if any) is an exported
// declaration of a package of the module named pkg; known says whether pkg
// is such a package at all.
func (r *repo) resolve(pkg, name, member string) (ok, known bool) {
	ps := r.pkgs[pkg]
	if len(ps) == 0 {
		return false, false
	}
	for _, p := range ps {
		if !p.names[name] {
			continue
		}
		if member == "" || p.members[name][member] {
			return true, true
		}
	}
	return false, true
}

// A finding is one name in one place.
type finding struct {
	where string // file:line
	what  string // the name as written
	kind  string // "path", "ident", "anchor"
	// for identifiers
	pkg, name, member string
}

var (
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	ident    = regexp.MustCompile(`(?:^|[^\w.])\*?([a-z][a-z0-9]*)\.([A-Z]\w*)(?:\.([A-Za-z_]\w*))?`)
	docLink  = regexp.MustCompile(`\[\*?([a-z][a-z0-9]*)\.([A-Z]\w*)(?:\.([A-Za-z_]\w*))?\]`)
	heading  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// A citation of a DESIGN.md section: the quoted names after
	// "DESIGN.md" up to the end of the parenthesis or sentence.
	citation = regexp.MustCompile(`DESIGN\.md[,:]?\s*([^).;]*)`)
	quoted   = regexp.MustCompile(`"([^"]+)"`)
	pathLike = regexp.MustCompile(`^[a-z][a-z0-9_-]+(/[A-Za-z0-9_.*-]+)*/?$`)
	pathExt  = regexp.MustCompile(`\.(go|md|ts|mjs|css|html|yaml|yml|json|sh|java|xml|groovy|properties)$`)
)

// slug is GitHub's anchor of a heading.
func slug(h string) string {
	h = strings.ToLower(strings.ReplaceAll(h, "`", ""))
	var b strings.Builder
	for _, c := range h {
		switch {
		case c == ' ':
			b.WriteRune('-')
		case c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c > 127:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// scanMarkdown returns the names of a Markdown document, outside fenced
// code blocks, and its heading anchors.
func scanMarkdown(r *repo, doc string, text []byte) (fs []finding, anchors map[string]bool) {
	anchors = map[string]bool{}
	fenced := false
	for i, line := range strings.Split(string(text), "\n") {
		where := fmt.Sprintf("%s:%d", doc, i+1)
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			anchors[slug(m[2])] = true
		}
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if strings.HasPrefix(target, "#") {
				fs = append(fs, finding{where: where, what: target, kind: "anchor"})
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			p := path.Clean(path.Join(path.Dir(doc), target))
			fs = append(fs, finding{where: where, what: p, kind: "path"})
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			fs = append(fs, spanFindings(r, where, m[1])...)
		}
		fs = append(fs, citations(where, line)...)
	}
	return fs, anchors
}

// citations returns the DESIGN.md sections a line cites by quoted name
// (DESIGN.md, "Shared run store"; DESIGN.md "Sink > Traversal shape").
func citations(where, line string) []finding {
	var fs []finding
	for _, m := range citation.FindAllStringSubmatch(line, -1) {
		for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
			for _, part := range strings.Split(q[1], " > ") {
				fs = append(fs, finding{where: where, what: part, kind: "section"})
			}
		}
	}
	return fs
}

// spanFindings returns the repository path or Go identifiers a code span
// names.
func spanFindings(r *repo, where, s string) []finding {
	var fs []finding
	if p, ok := repoPath(r, s); ok {
		return append(fs, finding{where: where, what: p, kind: "path"})
	}
	for _, m := range ident.FindAllStringSubmatch(s, -1) {
		fs = append(fs, identFinding(where, m[1], m[2], m[3]))
	}
	return fs
}

func identFinding(where, pkg, name, member string) finding {
	what := pkg + "." + name
	if member != "" {
		what += "." + member
	}
	return finding{where: where, what: what, kind: "ident", pkg: pkg, name: name, member: member}
}

// repoPath reports whether a code span is a repository path: no spaces,
// no scheme, and its first element a top-level file or folder (a bare
// name only when it is a Markdown file at the root).
func repoPath(r *repo, s string) (string, bool) {
	s = strings.TrimPrefix(s, "./")
	if s == "" || strings.ContainsAny(s, " \t<>\"'(){}=,;") || strings.Contains(s, "://") {
		return "", false
	}
	first, _, hasSlash := strings.Cut(s, "/")
	if !hasSlash {
		if strings.HasSuffix(s, ".md") {
			return s, true
		}
		return "", false
	}
	if r.top[first] {
		return s, true
	}
	// A folder or file that looks like one of ours even though its first
	// element does not exist (a package that is gone, or not there yet).
	if pathLike.MatchString(s) && (strings.HasSuffix(s, "/") || pathExt.MatchString(s)) {
		return s, true
	}
	return "", false
}

// scanGo returns the doc links of a Go file's comments, and for a doc.go
// file also the paths and identifiers of its code spans.
func scanGo(r *repo, file string, src []byte) []finding {
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, file, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return []finding{{where: file, what: err.Error(), kind: "parse"}}
	}
	isDoc := path.Base(file) == "doc.go"
	var fs []finding
	for _, cg := range af.Comments {
		for _, c := range cg.List {
			for j, line := range strings.Split(c.Text, "\n") {
				where := fmt.Sprintf("%s:%d", file, fset.Position(c.Pos()).Line+j)
				for _, m := range docLink.FindAllStringSubmatch(line, -1) {
					fs = append(fs, identFinding(where, m[1], m[2], m[3]))
				}
				fs = append(fs, citations(where, line)...)
				if isDoc {
					for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
						fs = append(fs, spanFindings(r, where, m[1])...)
					}
				}
			}
		}
	}
	return fs
}

// fileMap returns the paths of DESIGN.md's "File map" section, with
// where each is named.
func fileMap(r *repo, text []byte) (paths []finding, found bool) {
	in := false
	for i, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line[3:]) == "File map"
			found = found || in
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(cells[1], -1) {
			paths = append(paths, finding{where: fmt.Sprintf("DESIGN.md:%d", i+1), what: strings.TrimPrefix(m[1], "./"), kind: "path"})
		}
	}
	return paths, found
}

func TestDocumentsNameWhatExists(t *testing.T) {
	r := loadRepo(t)
	var errs []string
	design, err := os.ReadFile(filepath.Join(r.root, "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	designHeadings := map[string]bool{}
	for _, line := range strings.Split(string(design), "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			designHeadings[strings.ToLower(m[2])] = true
		}
	}
	check := func(f finding, anchors map[string]bool) {
		switch f.kind {
		case "parse":
			errs = append(errs, fmt.Sprintf("%s: %s", f.where, f.what))
			return
		case "anchor":
			if !anchors[strings.TrimPrefix(f.what, "#")] {
				errs = append(errs, fmt.Sprintf("%s: links to %s, which is no heading of the document", f.where, f.what))
			}
			return
		case "section":
			if !designHeadings[strings.ToLower(f.what)] {
				errs = append(errs, fmt.Sprintf("%s: cites DESIGN.md section %q, which is no heading of DESIGN.md", f.where, f.what))
			}
			return
		}
		ok, known := false, true
		if f.kind == "path" {
			ok = r.exists(f.what)
		} else {
			ok, known = r.resolve(f.pkg, f.name, f.member)
		}
		if ok {
			return
		}
		switch {
		case f.kind == "path":
			errs = append(errs, fmt.Sprintf("%s: names `%s`, which is not a file or folder of git ls-files", f.where, f.what))
		case !known:
			// Not a package of this module (pebble.Sync, time.Now...): not ours to check.
		case f.member != "":
			errs = append(errs, fmt.Sprintf("%s: names `%s`, but package %s has no exported %s with a method, field or interface method %s", f.where, f.what, f.pkg, f.name, f.member))
		default:
			errs = append(errs, fmt.Sprintf("%s: names `%s`, but package %s declares no exported %s", f.where, f.what, f.pkg, f.name))
		}
	}

	for _, doc := range documents(r.files) {
		b, err := os.ReadFile(filepath.Join(r.root, doc))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(doc, ".md") {
			fs, anchors := scanMarkdown(r, doc, b)
			for _, f := range fs {
				check(f, anchors)
			}
		}
	}
	// Doc links of every Go file of the module (doc.go files: code spans too).
	var goFiles []string
	for f := range r.files {
		if strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") && r.goDir[path.Dir(f)] {
			goFiles = append(goFiles, f)
		}
	}
	sort.Strings(goFiles)
	for _, f := range goFiles {
		b, err := os.ReadFile(filepath.Join(r.root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range scanGo(r, f, b) {
			check(fd, nil)
		}
	}

	// DESIGN.md's file map.
	paths, found := fileMap(r, design)
	if !found {
		errs = append(errs, `DESIGN.md: no "## File map" section`)
	}
	mapped := map[string]bool{}
	for _, p := range paths {
		mapped[strings.TrimSuffix(p.what, "/")] = true
		if !r.exists(p.what) {
			check(p, nil) // reports it
		}
	}
	var pkgDirs []string
	for d := range r.goDir {
		pkgDirs = append(pkgDirs, d)
	}
	sort.Strings(pkgDirs)
	for _, d := range pkgDirs {
		if mapped[d] {
			continue
		}
		inMap := false
		for p := range mapped {
			if path.Dir(p) == d && r.files[p] {
				inMap = true
				break
			}
		}
		if inMap {
			continue
		}
		errs = append(errs, fmt.Sprintf("DESIGN.md: File map does not list the Go package %s/ (add a row for the folder or for one of its files)", d))
	}

	sortByPlace(errs)
	for _, e := range errs {
		t.Error(e)
	}
}

// sortByPlace sorts messages that start with file:line by file, then line.
func sortByPlace(ms []string) {
	place := func(m string) (string, int) {
		f, rest, _ := strings.Cut(m, ":")
		n := 0
		for _, c := range rest {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		return f, n
	}
	sort.SliceStable(ms, func(i, j int) bool {
		fi, li := place(ms[i])
		fj, lj := place(ms[j])
		if fi != fj {
			return fi < fj
		}
		if li != lj {
			return li < lj
		}
		return ms[i] < ms[j]
	})
}

// TestCheckerSeesFalseNames feeds the scanners names that do not exist,
// and some that do, so the check above cannot pass by seeing nothing.
func TestCheckerSeesFalseNames(t *testing.T) {
	r := loadRepo(t)
	doc := strings.Join([]string{
		"# Title",
		"See [the map](#title) and [gone](#no-such-heading), [a file](processor/nowhere.go).",
		"The map of files listed `processor/worker.go` and `processor/barrier.go`, `lineage/decode*.go`,",
		"`nosuchpkg/`, `explorer/web/src/`; `processor.Worker`, `processor.Shard.Checkpoint`,",
		"`lineage.Edge.Merge`, `lineage.Edge.NoSuchMember`, `pebble.Sync` and `s/<shard>/d/`.",
		"```",
		"`processor/in_a_fence.go`",
		"```",
	}, "\n")
	fs, anchors := scanMarkdown(r, "DESIGN.md", []byte(doc))
	got := map[string]bool{}
	for _, f := range fs {
		var ok bool
		switch f.kind {
		case "anchor":
			ok = anchors[strings.TrimPrefix(f.what, "#")]
		case "path":
			ok = r.exists(f.what)
		case "ident":
			var known bool
			ok, known = r.resolve(f.pkg, f.name, f.member)
			if !known {
				continue
			}
		}
		got[f.what] = ok
	}
	want := map[string]bool{
		"#title": true, "#no-such-heading": false, "processor/nowhere.go": false,
		"processor/worker.go": false, "processor/barrier.go": true, "lineage/decode*.go": true,
		"nosuchpkg/": false, "explorer/web/src/": true,
		"processor.Worker": false, "processor.Shard.Checkpoint": true,
		"lineage.Edge.Merge": true, "lineage.Edge.NoSuchMember": false,
	}
	for name, ok := range want {
		g, seen := got[name]
		switch {
		case !seen:
			t.Errorf("%s: not seen by the scanner", name)
		case g != ok:
			t.Errorf("%s: resolved %v, want %v", name, g, ok)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: seen, but it is no name (a fence, a key prefix or another module's package)", name)
		}
	}
	// Citations of DESIGN.md sections.
	var cited []string
	for _, f := range citations("x", `(DESIGN.md, Processor, "Shared run store"; DESIGN.md "Sink > Traversal shape")`) {
		cited = append(cited, f.what)
	}
	if fmt.Sprint(cited) != "[Shared run store Sink Traversal shape]" {
		t.Errorf("citations: got %q", cited)
	}
	// A doc link in a Go comment.
	src := "// Package p cites [processor.Worker] and [sink.Writer].\npackage p\n"
	var links []string
	for _, f := range scanGo(r, "x/p.go", []byte(src)) {
		ok, _ := r.resolve(f.pkg, f.name, f.member)
		links = append(links, fmt.Sprintf("%s=%v", f.what, ok))
	}
	if fmt.Sprint(links) != "[processor.Worker=false sink.Writer=true]" {
		t.Errorf("doc links: got %v", links)
	}
}
