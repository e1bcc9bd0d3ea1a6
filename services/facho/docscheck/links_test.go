package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mergedSeparately are documents other branches add (their features are
// built beside this one); a link to them may precede them.
func mergedSeparately() map[string]bool {
	return map[string]bool{
		"docs/availability.md": true, "docs/executions.md": true, "docs/queue-classes.md": true, "docs/quotas.md": true,
		"docs/alerting.md": true, "docs/alerts-api.md": true, "docs/prometheus.md": true,
	}
}

// TestDocLinksResolve fails when a relative link of the README, CONTRIBUTING
// or docs/ points at a file that does not exist (a moved or renamed page).
func TestDocLinksResolve(t *testing.T) {
	root := repoRoot(t)
	files := []string{"README.md", "CONTRIBUTING.md"}
	m, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range m {
		rel, _ := filepath.Rel(root, f)
		files = append(files, rel)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	pending := mergedSeparately()
	checked := 0
	for _, f := range files {
		for _, mm := range link.FindAllStringSubmatch(readFile(t, filepath.Join(root, f)), -1) {
			target := mm[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			path := filepath.Clean(filepath.Join(filepath.Dir(f), target))
			checked++
			if pending[filepath.ToSlash(path)] {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, path)); err != nil {
				t.Errorf("%s: link to %s: %s does not exist", f, mm[1], path)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d links checked: the documents were not found", checked)
	}
}
