package pgboot

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Binaries is one PostgreSQL installation.
type Binaries struct {
	Dir   string
	Major int
}

func (b Binaries) path(tool string) string { return filepath.Join(b.Dir, tool) }

// candidateDirs lists directories that may hold a PostgreSQL installation.
func candidateDirs() []string {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		// PATH often holds symlinks (Debian's /usr/local/bin); the real
		// directory also holds postgres and pg_ctl of the same version.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/usr/local/pgsql/bin", "/opt/homebrew/opt/postgresql*/bin", "/usr/local/opt/postgresql*/bin"} {
		m, _ := filepath.Glob(pattern)
		dirs = append(dirs, m...)
	}
	return dirs
}

// pickBinaries returns the installation in binDir, or else the highest
// version found. wantMajor, when not 0, is the version of an existing
// cluster: only that version can start it.
func pickBinaries(binDir string, wantMajor int) (Binaries, error) {
	dirs := candidateDirs()
	if binDir != "" {
		dirs = []string{binDir}
	}
	seen := map[string]bool{}
	var found []Binaries
	var problems []string
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		b, err := inspect(d)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		found = append(found, b)
	}
	if len(found) == 0 {
		msg := "pgboot: no PostgreSQL binaries found (initdb, pg_ctl, postgres in PATH, /usr/lib/postgresql/*/bin or /usr/pgsql-*/bin); install PostgreSQL or set DATABASE_URL"
		if len(problems) > 0 {
			msg += ": " + strings.Join(problems, "; ")
		}
		return Binaries{}, errors.New(msg)
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].Major > found[j].Major })
	if wantMajor == 0 {
		return found[0], nil
	}
	for _, b := range found {
		if b.Major == wantMajor {
			return b, nil
		}
	}
	return Binaries{}, fmt.Errorf("pgboot: the existing cluster is PostgreSQL %d but only version %d binaries are installed (%s); remove the data dir or install PostgreSQL %d", wantMajor, found[0].Major, found[0].Dir, wantMajor)
}

// ErrNoBinaries is wrapped by FindBinaries when nothing is installed.
var ErrNoBinaries = errors.New("no PostgreSQL binaries")

// FindBinaries returns the highest installed PostgreSQL version, or an error
// wrapping ErrNoBinaries (tests skip on it).
func FindBinaries() (Binaries, error) {
	b, err := pickBinaries("", 0)
	if err != nil {
		return b, fmt.Errorf("%w: %v", ErrNoBinaries, err)
	}
	return b, nil
}

// inspect checks dir holds the three tools and reads their major version.
func inspect(dir string) (Binaries, error) {
	for _, tool := range []string{"initdb", "pg_ctl", "postgres"} {
		st, err := os.Stat(filepath.Join(dir, tool))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return Binaries{}, fmt.Errorf("%s: no executable %s", dir, tool)
		}
	}
	out, err := exec.Command(filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return Binaries{}, fmt.Errorf("%s: postgres --version: %v", dir, err)
	}
	major, err := parseMajor(string(out))
	if err != nil {
		return Binaries{}, fmt.Errorf("%s: %v", dir, err)
	}
	return Binaries{Dir: dir, Major: major}, nil
}

// parseMajor reads "postgres (PostgreSQL) 15.20 (Debian ...)".
func parseMajor(version string) (int, error) {
	const marker = "(PostgreSQL) "
	i := strings.Index(version, marker)
	if i < 0 {
		return 0, fmt.Errorf("unexpected version string %q", strings.TrimSpace(version))
	}
	rest := version[i+len(marker):]
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	major, err := strconv.Atoi(rest[:end])
	if err != nil || major < 9 {
		return 0, fmt.Errorf("unexpected version string %q", strings.TrimSpace(version))
	}
	return major, nil
}
