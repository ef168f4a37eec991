// Package codecheck holds tests over the module's own source and build
// graph; it has no code. Nothing imports it.
//
//   - TestNoMutablePackageVars: package-level variables of non-test code
//     are read-only (see the test's comment for the rule and its allowlist).
//   - TestBinaryLinksNoTestOnlyPackage: `go list -deps ./cmd/lineageflow`
//     holds no package of this module meant for tests only.
package codecheck
