package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

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
			if _, err := os.Stat(filepath.Join(root, path)); err != nil {
				t.Errorf("%s: link to %s: %s does not exist", f, mm[1], path)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d links checked: the documents were not found", checked)
	}
}
