// Package docscheck holds the tests that keep the user documentation true
// to the code, so it cannot drift:
//
//	Go sources of every module ──> environment variable names ──┐
//	streams/CATALOGUE.md ──> stream names (not variables) ──────┤
//	docs/configuration.md ──> documented variables ─────────────┴─> both ways equal
//	README.md, CONTRIBUTING.md, docs/, deploy/ and service READMEs ──> no internal issue or design-document numbers
//	README.md, CONTRIBUTING.md, docs/ ──> every relative link resolves
//
// It has no code of its own: the checks are its tests, which read the
// repository from the package's folder.
package docscheck
