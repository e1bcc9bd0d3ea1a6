package docscheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// repoRoot is the repository root, three levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatalf("repository root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("repository root %s: no go.work: %v", root, err)
	}
	return root
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

// envLiteral is a Go string literal naming an environment variable; a
// literal ending in "_" is a prefix the code completes (FACHO_CLASS_).
var envLiteral = regexp.MustCompile(`"((?:FACHO|DATABASE)_[A-Z0-9_]*)"`)

// codeVariables returns the variables named by string literals in the
// non-test Go files under root, and the prefixes the code completes.
func codeVariables(t *testing.T, root string) (names, prefixes map[string]string) {
	t.Helper()
	names, prefixes = map[string]string{}, map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".facho", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range envLiteral.FindAllStringSubmatch(string(src), -1) {
			if strings.HasSuffix(m[1], "_") {
				prefixes[m[1]] = rel
			} else {
				names[m[1]] = rel
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan sources: %v", err)
	}
	return names, prefixes
}

// streamNames are the JetStream streams of the catalogue's stream table
// (FACHO_CONFIG, ...): names in the code that are not variables.
func streamNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`(?m)^\| (FACHO_[A-Z]+) \|`)
	out := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(readFile(t, filepath.Join(root, "streams", "CATALOGUE.md")), -1) {
		out[m[1]] = true
	}
	if len(out) == 0 {
		t.Fatal("streams/CATALOGUE.md: no stream table found")
	}
	return out
}

// documentedVariables returns the variables in the first column of the
// tables of docs/configuration.md (a cell may list several).
func documentedVariables(t *testing.T, root string) map[string]bool {
	t.Helper()
	doc := readFile(t, filepath.Join(root, "docs", "configuration.md"))
	name := regexp.MustCompile("`((?:FACHO|DATABASE)_[A-Z0-9_]*[A-Z0-9])`")
	out := map[string]bool{}
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line[1:], "|", 2)[0]
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// TestConfigurationDocumentsEveryVariable fails when the code reads a
// variable docs/configuration.md does not list, or the page lists one no
// code reads any more.
func TestConfigurationDocumentsEveryVariable(t *testing.T) {
	root := repoRoot(t)
	code, prefixes := codeVariables(t, root)
	streamsSet := streamNames(t, root)
	documented := documentedVariables(t, root)
	if len(documented) < 20 {
		t.Fatalf("docs/configuration.md lists %d variables: its tables were not found", len(documented))
	}
	var missing, stale []string
	for name, file := range code {
		if streamsSet[name] || documented[name] {
			continue
		}
		missing = append(missing, name+" (read in "+file+")")
	}
	for name := range documented {
		if _, ok := code[name]; ok {
			continue
		}
		completed := false
		for p := range prefixes {
			if strings.HasPrefix(name, p) {
				completed = true
			}
		}
		if !completed {
			stale = append(stale, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 {
		t.Errorf("variables read by the code but missing from docs/configuration.md (add a row):\n  %s", strings.Join(missing, "\n  "))
	}
	if len(stale) > 0 {
		t.Errorf("variables in docs/configuration.md that no code reads (remove or rename the row):\n  %s", strings.Join(stale, "\n  "))
	}
}

// internalRef is how internal tracking leaks into product text: "issue
// 12", "issue 8's", "seed 001", "seeds 002, 003", a path to the design
// documents outside the repository.
var internalRef = regexp.MustCompile(`(?i)\bissues? #?[0-9]+\b|\bseeds? [0-9]{3}\b|shared/seeds`)

// TestNoInternalNumbersInDocs fails when a user-facing document refers to
// internal issue or design-document numbers instead of saying what the
// thing does.
func TestNoInternalNumbersInDocs(t *testing.T) {
	root := repoRoot(t)
	files := []string{"README.md", "CONTRIBUTING.md", filepath.Join("deploy", "README.md")}
	for _, pattern := range []string{"docs/*.md", "services/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatalf("glob %s: %v", pattern, err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			files = append(files, rel)
		}
	}
	for _, f := range files {
		for i, line := range strings.Split(readFile(t, filepath.Join(root, f)), "\n") {
			if loc := internalRef.FindString(line); loc != "" {
				t.Errorf("%s:%d: %q refers to internal numbering; say what the thing does", f, i+1, loc)
			}
		}
	}
}

func TestInternalRefPattern(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"The console and the REST API (issue 12)", true},
		{"Issue 8's leases under chaos", true},
		{"Queue classes (seed 001)", true},
		{"design documents in `../shared/seeds/`", true},
		{"Quotas (seeds 002, 003)", true},
		{"the seeds and the nats-server authorization block", false},
		{"an issue with the OLT", false},
		{"--nats-nkey-seed-file observer.nk", false},
	} {
		if got := internalRef.MatchString(tc.line); got != tc.want {
			t.Errorf("%q: matched %v, want %v", tc.line, got, tc.want)
		}
	}
}
