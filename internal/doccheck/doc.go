// Package doccheck holds one test and no code: the documents of the
// repository name only what exists. It checks DESIGN.md, README.md,
// docs/*.md and every doc.go file (CHANGELOG.md is history and may name
// what was removed):
//
//   - every relative Markdown link, and every code span that is a
//     repository path (its first element is a top-level file or folder, as
//     in `processor/barrier.go` or `explorer/web/src/`), is a file or a
//     folder of `git ls-files` (a code span with * is a pattern that must
//     match one);
//   - every link to a heading of the same document (#anchor), and every
//     DESIGN.md section cited by its quoted name in a document or a Go
//     comment (DESIGN.md, "Shared run store"), names a heading;
//   - every Go identifier written pkg.Name or pkg.Name.Member (a code span
//     of the documents, a doc link [pkg.Name] in any Go file) names an
//     exported declaration of that package of the module (parsed with
//     go/parser, no type checking): a function, type, variable or
//     constant, and a method, struct field or interface method of a type;
//   - DESIGN.md's "File map" (a table whose first cell holds the paths)
//     lists paths that exist, and every Go package folder of the module.
//
// Names that other branches of the same change bring (pendingNames in the
// test) are reported, not failed, only while what they wait for is true;
// a pending name that exists fails the test until it is taken off the
// list.
package doccheck
