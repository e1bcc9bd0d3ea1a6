package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// maxExposure is the most `systemd-analyze security` may rate a unit of
// deploy/systemd (0 best, 10 worst; 8.4 EXPOSED without hardening).
const maxExposure = 3.0

var exposureRE = regexp.MustCompile(`Overall exposure level for \S+: ([0-9]+(?:\.[0-9]+)?)`)

func systemdUnits(t *testing.T) []string {
	t.Helper()
	units, err := filepath.Glob("../../../../deploy/systemd/*.service")
	if err != nil || len(units) == 0 {
		t.Fatalf("no units in deploy/systemd: %v", err)
	}
	return units
}

func systemdAnalyze(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd): the units' hardening is not checked")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "SYSTEMD_COLORS=0", "SYSTEMD_PAGER=")
	err = cmd.Run()
	return out.String(), err
}

// Every unit of deploy/systemd, whichever exist, is hardened to an
// exposure of at most 3.0.
func TestSystemdUnitsHardened(t *testing.T) {
	for _, unit := range systemdUnits(t) {
		abs, err := filepath.Abs(unit)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(unit), func(t *testing.T) {
			out, err := systemdAnalyze(t, "security", "--offline=true", "--no-pager", abs)
			m := exposureRE.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("systemd-analyze security: %v, no exposure level in:\n%s", err, out)
			}
			level, perr := strconv.ParseFloat(m[1], 64)
			if perr != nil {
				t.Fatal(perr)
			}
			if level > maxExposure {
				t.Errorf("exposure %.1f, want at most %.1f: harden the unit like the others (docs/security.md)\n%s", level, maxExposure, out)
			}
		})
	}
}

// Every unit verifies clean (`systemd-analyze verify`, no warning) in a
// root holding systemd's own units and the executables the units start.
func TestSystemdUnitsVerify(t *testing.T) {
	units := systemdUnits(t)
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd): the units are not verified")
	}
	var system string
	for _, dir := range []string{"/usr/lib/systemd/system", "/lib/systemd/system"} {
		if _, err := os.Stat(filepath.Join(dir, "sysinit.target")); err == nil {
			system = dir
			break
		}
	}
	if system == "" {
		t.Skip("systemd's own units are not installed: the units are not verified")
	}
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "usr/lib/systemd/system"), os.DirFS(system)); err != nil {
		t.Fatalf("copy systemd units: %v", err)
	}
	etc := filepath.Join(root, "etc/systemd/system")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, unit := range units {
		b, err := os.ReadFile(unit)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(etc, filepath.Base(unit)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		// The executables it starts, as stand-ins.
		for _, line := range strings.Split(string(b), "\n") {
			v, ok := strings.CutPrefix(strings.TrimSpace(line), "ExecStart=")
			if !ok {
				continue
			}
			exe := strings.TrimLeft(strings.Fields(v)[0], "-@+!:")
			path := filepath.Join(root, exe)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("#!/bin/sh\n"), fs.FileMode(0o755)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, unit := range units {
		name := filepath.Base(unit)
		t.Run(name, func(t *testing.T) {
			out, err := systemdAnalyze(t, "verify", "--root="+root, name)
			if err != nil || strings.TrimSpace(out) != "" {
				t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
			}
		})
	}
}
