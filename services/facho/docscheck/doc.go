// Package docscheck holds the tests that keep the user documentation true
// to the code, so it cannot drift:
//
//	Go sources of every module ──> environment variable names ──┐
//	streams/CATALOGUE.md ──> stream names (not variables) ──────┤
//	docs/configuration.md ──> documented variables ─────────────┴─> both ways equal
//	README.md, CONTRIBUTING.md, docs/, deploy/ and service READMEs ──> no internal issue or design-document numbers
//	README.md, CONTRIBUTING.md, docs/ ──> every relative link resolves
//	README.md, docs/ ──> ```sh runnable blocks ──> run against a started facho dev ──> exit status 0
//
// It has no code of its own: the checks are its tests, which read the
// repository from the package's folder (the runnable blocks' test also
// builds facho and runs facho dev; -short skips it).
package docscheck
