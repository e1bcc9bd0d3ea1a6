package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// versionOf runs deploy/version.sh in the git repository dir.
func versionOf(t *testing.T, dir string, env ...string) map[string]string {
	t.Helper()
	script, err := filepath.Abs("version.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("version.sh: %v\n%s", err, out)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		vars[k] = v
	}
	return vars
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.net", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.net", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Versions come from git tags and sort as dpkg sorts them: an untagged
// build before the first release, a release before the commits after it,
// a pre-release before its release.
func TestVersionScheme(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	commit := func(msg string) string {
		git(t, dir, "commit", "-q", "--allow-empty", "-m", msg)
		return git(t, dir, "rev-parse", "HEAD")
	}
	c1 := commit("one")
	untagged := versionOf(t, dir)
	if want := "0.0.0~git20260102030405." + c1[:12]; untagged["version"] != want {
		t.Errorf("untagged version %q, want %q", untagged["version"], want)
	}
	if untagged["commit"] != c1 || untagged["date"] != "2026-01-02T03:04:05Z" {
		t.Errorf("untagged: %v", untagged)
	}
	git(t, dir, "tag", "v1.0.0-rc1")
	rc := versionOf(t, dir)
	git(t, dir, "tag", "v1.0.0")
	release := versionOf(t, dir)
	c2 := commit("two")
	after := versionOf(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirty := versionOf(t, dir)
	for _, tc := range []struct {
		name                             string
		got                              map[string]string
		version, debversion, fileversion string
	}{
		{"pre-release", rc, "1.0.0-rc1", "1.0.0~rc1", "1.0.0-rc1"},
		{"release", release, "1.0.0", "1.0.0", "1.0.0"},
		{"after the release", after, "1.0.0+1.g" + c2[:12], "1.0.0+1.g" + c2[:12], "1.0.0-1.g" + c2[:12]},
	} {
		if tc.got["version"] != tc.version || tc.got["debversion"] != tc.debversion || tc.got["fileversion"] != tc.fileversion {
			t.Errorf("%s: %v, want version %s, debversion %s, fileversion %s", tc.name, tc.got, tc.version, tc.debversion, tc.fileversion)
		}
	}
	if dirty["commit"] != c2+"-dirty" {
		t.Errorf("uncommitted changes: commit %q, want %s-dirty", dirty["commit"], c2)
	}
	if v := versionOf(t, dir, "FACHO_VERSION=2.0.0")["version"]; v != "2.0.0" {
		t.Errorf("FACHO_VERSION: %q", v)
	}
	if _, err := exec.LookPath("dpkg"); err != nil {
		return
	}
	order := []string{untagged["debversion"], rc["debversion"], release["debversion"], after["debversion"]}
	for i := 1; i < len(order); i++ {
		if err := exec.Command("dpkg", "--compare-versions", order[i-1], "lt", order[i]).Run(); err != nil {
			t.Errorf("dpkg does not sort %s before %s", order[i-1], order[i])
		}
	}
}
