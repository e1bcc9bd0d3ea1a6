package promrules

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found (Debian package prometheus): the rules of deploy/prometheus are not checked")
	}
	return p
}

func run(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s:\n%s", filepath.Base(name), strings.Join(args, " "), out)
}

func TestRules(t *testing.T) {
	p := promtool(t)
	run(t, Dir, p, "check", "rules", "facho-rules.yml")
	run(t, Dir, p, "test", "rules", "facho-rules.test.yml")
}

// The example configuration is valid with the rules beside it.
func TestExampleConfig(t *testing.T) {
	p := promtool(t)
	tmp := t.TempDir()
	for from, to := range map[string]string{"prometheus.yml.example": "prometheus.yml", "facho-rules.yml": "facho-rules.yml"} {
		b, err := os.ReadFile(filepath.Join(Dir, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, tmp, p, "check", "config", "prometheus.yml")
}

// pendingMetrics are exported by services built beside this one (the
// alerter, the availability prober); they are reported, not failed, while
// absent from this tree.
var pendingMetrics = map[string]string{
	"facho_pon_onus":      "alerter",
	"facho_olt_available": "availability",
}

// Every facho_* metric of the rules is a name some service defines.
func TestRuleMetricsExist(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join(Dir, "facho-rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var expr []string
	for _, line := range strings.Split(string(rules), "\n") {
		if l := strings.TrimSpace(line); !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "summary:") && !strings.HasPrefix(l, "description:") {
			expr = append(expr, l)
		}
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\bfacho_[a-z0-9_]+\b`).FindAllString(strings.Join(expr, "\n"), -1) {
		used[m] = true
	}
	if len(used) == 0 {
		t.Fatal("no facho_* metric found in the rules")
	}
	defined := map[string]bool{}
	root := "../../.."
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for name := range used {
			if strings.Contains(string(b), `"`+name+`"`) {
				defined[name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch {
		case defined[n]:
		case pendingMetrics[n] != "":
			t.Logf("%s: exported by the %s service, not in this tree", n, pendingMetrics[n])
		default:
			t.Errorf("the rules read %s, which no Facho service defines", n)
		}
	}
}
