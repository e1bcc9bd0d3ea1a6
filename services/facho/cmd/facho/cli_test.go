package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/natsembed"
	"github.com/facho-olt/facho/streams"
)

// TestHelpEveryCommand: -h (and --help, and "help COMMAND") on every
// command and subcommand succeeds without touching anything (no database,
// no NATS) and prints the usage, the flags of commands that have some, and
// examples.
func TestHelpEveryCommand(t *testing.T) {
	empty := func(string) string { return "" }
	all := helps()
	paths := make([]string, 0, len(all))
	for p := range all {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		h := all[path]
		words := strings.Fields(path)
		for _, args := range [][]string{
			append(append([]string{}, words...), "-h"),
			append(append([]string{}, words...), "--help"),
			append([]string{"help"}, words...),
		} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var out, errOut bytes.Buffer
				if err := run(context.Background(), args, empty, &out, &errOut); err != nil {
					t.Fatalf("error %v (stderr %q)", err, errOut.String())
				}
				got := out.String()
				for _, want := range []string{"usage: facho " + words[0], "\nexamples:\n  ", "go run ./services/facho/cmd/facho " + path} {
					if !strings.Contains(got, want) {
						t.Errorf("lacks %q:\n%s", want, got)
					}
				}
				if _, ex, _ := strings.Cut(got, "\nexamples:\n"); !strings.Contains(ex, "facho "+words[0]) {
					t.Errorf("no example of facho %s:\n%s", words[0], got)
				}
				if h.flagsFrom != nil && !strings.Contains(got, "\n  -") {
					t.Errorf("no flags listed:\n%s", got)
				}
			})
		}
	}
	// The subcommand's flags follow it: "export -h" shows export's flags,
	// "rebuild -h" the read models.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "-h"}, "-format"},
		{[]string{"export", "onu-history", "-h"}, "-from"},
		{[]string{"rebuild", "-h"}, "onu_data"},
		{[]string{"tail", "--olt", "x", "-h"}, "-kind"},
		{[]string{"users", "add", "-h"}, "--role"},
		{[]string{"profiles", "check", "-h"}, "-timeout"},
		{[]string{"-h"}, "commands:"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), tc.args, empty, &out, &out); err != nil || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: err %v, output lacks %q:\n%s", tc.args, err, tc.want, out.String())
		}
	}
	// An unknown command stays an error, with the list of commands.
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"frobnicate", "-h"}, empty, &out, &errOut); err == nil || !strings.Contains(errOut.String(), "commands:") {
		t.Errorf("unknown -h: err %v, stderr %q", err, errOut.String())
	}
}

// TestHelpCoversUsage: every command the top-level usage lists has help.
func TestHelpCoversUsage(t *testing.T) {
	all := helps()
	inCommands := false
	for _, line := range strings.Split(usage, "\n") {
		if line == "commands:" {
			inCommands = true
			continue
		}
		if !inCommands || !strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "   ") {
			continue
		}
		cmd := strings.Fields(line)[0]
		if _, ok := all[cmd]; !ok {
			t.Errorf("command %q of the usage has no help", cmd)
		}
	}
}

func TestCommandFor(t *testing.T) {
	for _, tc := range []struct{ exe, want string }{
		{"/tmp/go-build1234/b001/exe/facho", goRunCommand},
		{"/root/.cache/go-build/ab/exe/facho", goRunCommand},
		{"/usr/local/bin/facho", "facho"},
		{"/home/me/go/bin/facho", "facho"},
	} {
		if got := commandFor(tc.exe); got != tc.want {
			t.Errorf("commandFor(%q) = %q, want %q", tc.exe, got, tc.want)
		}
	}
}

func TestDevBanner(t *testing.T) {
	base := devBanner{
		Cmd: goRunCommand, APIURL: "http://127.0.0.1:8080", Token: "facho-dev-token-change-me", NATSURL: "nats://127.0.0.1:14222",
		KeysDir: ".facho/nkeys", DBURL: "postgres://postgres@127.0.0.1:15432/facho", Retention: "varbinds 1h", Metrics: "planner http://127.0.0.1:9101/metrics",
		OLTs: 3, Shape: "1x2x16", SimPort: 16101, SimControl: "127.0.0.1:8161", IDs: []string{"olt-1", "olt-2", "olt-3"},
		Interval: 60, FirstRun: 3 * time.Second, DataDir: ".facho",
	}
	first := base
	first.FirstAdmin, first.FirstAdminPassword = "admin", "pw-123-xyz"
	restart := base
	restart.Restarted = true
	other := base
	other.DataDir, other.Cmd = "/tmp/second", "facho"
	for _, tc := range []struct {
		name    string
		b       devBanner
		want    []string
		notWant []string
	}{
		{"first start", first,
			[]string{"Facho is running.\n  console", "  first admin    user \"admin\", password pw-123-xyz", "go run ./services/facho/cmd/facho users add", "first run in 3s", "  go run ./services/facho/cmd/facho tail\n", ".facho/dev.json"},
			[]string{"schedule resumes", "-data"}},
		{"restart", restart,
			[]string{"schedule resumes from where it stopped"},
			[]string{"first run in", "first admin", "password"}},
		{"other data folder, binary", other,
			[]string{"  facho tail -data /tmp/second\n", "/tmp/second/dev.json"},
			[]string{"go run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.b.String()
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("banner lacks %q:\n%s", w, s)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(s, w) {
					t.Errorf("banner has %q:\n%s", w, s)
				}
			}
			// The password is inside the block: after "Facho is running."
			// and before "Ctrl-C".
			if i := strings.Index(s, "password"); i >= 0 && (i < strings.Index(s, "Facho is running.") || i > strings.Index(s, "Ctrl-C")) {
				t.Errorf("password outside the banner block:\n%s", s)
			}
		})
	}
}

// TestToolsFindRunningDev: run with no flag and no variable, the stream
// tools read the NATS URL and the observer's seed from the data folder's
// dev.json (what a running facho dev writes), and a failure to connect
// names the address dialled.
func TestToolsFindRunningDev(t *testing.T) {
	env, _ := toolsEnv(t)
	publishExec(t, env.JS, "olt-1", 2)
	empty := func(string) string { return "" }

	data := t.TempDir()
	if err := writeDevInfo(data, devInfo{PID: 1, NATSURL: env.URL, KeysDir: env.KeysDir}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(data, devInfoFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("dev.json: %v, mode %v", err, fi.Mode())
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"replay", "--stream", streams.StreamExec, "-data", data}, empty, &out, &errOut); err != nil {
		t.Fatalf("replay with -data: %v (%s)", err, errOut.String())
	}
	if got := lines(t, out.String()); len(got) != 2 {
		t.Fatalf("replay with -data: %d lines, want 2: %s", len(got), out.String())
	}

	// In the folder itself, without -data: .facho/dev.json.
	cwd, _ := os.Getwd()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, defaultDataDir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeDevInfo(filepath.Join(dir, defaultDataDir), devInfo{NATSURL: env.URL, KeysDir: env.KeysDir}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Chdir(cwd) }()
	out.Reset()
	if err := run(context.Background(), []string{"replay", "--stream", streams.StreamExec}, empty, &out, &errOut); err != nil {
		t.Fatalf("replay in the folder: %v", err)
	}
	if got := lines(t, out.String()); len(got) != 2 {
		t.Fatalf("replay in the folder: %d lines, want 2", len(got))
	}

	// The flags win over dev.json, and an admin seed is taken from its
	// keys for --identity admin.
	fs := newTestFlagSet()
	nf := addNATSFlags(fs, empty)
	if err := fs.Parse([]string{"-data", data, "--identity", natsauth.Admin}); err != nil {
		t.Fatal(err)
	}
	if err := nf.resolve(); err != nil {
		t.Fatal(err)
	}
	if *nf.url != env.URL || nf.client.NkeySeedFile != natsauth.SeedFile(env.KeysDir, natsauth.Admin) {
		t.Errorf("resolved %s, %s", *nf.url, nf.client.NkeySeedFile)
	}
	fs = newTestFlagSet()
	nf = addNATSFlags(fs, empty)
	if err := fs.Parse([]string{"-data", data, "--nats", "nats://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if err := nf.resolve(); err != nil {
		t.Fatal(err)
	}
	if *nf.url != "nats://127.0.0.1:1" {
		t.Errorf("--nats overridden by dev.json: %s", *nf.url)
	}

	// A dev.json whose server is gone: the error names the address.
	gone := t.TempDir()
	if err := writeDevInfo(gone, devInfo{NATSURL: "nats://127.0.0.1:1", KeysDir: env.KeysDir}); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"tail", "-data", gone}, empty, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "nats://127.0.0.1:1") {
		t.Errorf("tail against a gone server: %v, want the address named", err)
	}
	// No dev.json and no flag: the default address is named, with a hint.
	err = run(context.Background(), []string{"replay", "--stream", streams.StreamExec, "-data", t.TempDir(), "--nats", "nats://user:secret@127.0.0.1:1"}, empty, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "nats://127.0.0.1:1") || strings.Contains(err.Error(), "secret") {
		t.Errorf("replay against nothing: %v, want the address without credentials", err)
	}
}

func newTestFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// TestToolsRefuseForeignNATS: a NATS server that answers but holds no Facho
// streams (someone else's on 4222) is named as such, not "stream not
// found" later.
func TestToolsRefuseForeignNATS(t *testing.T) {
	srv, err := natsembed.Start(natsembed.Config{Port: -1, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"tail", "-data", t.TempDir(), "--nats", srv.URL()}, func(string) string { return "" }, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "has no Facho streams") || !strings.Contains(err.Error(), srv.URL()) {
		t.Fatalf("tail against a foreign server: %v", err)
	}
}

// facho dev reads FACHO_LOG_LEVEL and FACHO_LOG_FORMAT like every service:
// a bad value is refused, naming the variable, before anything starts.
func TestDevLogVariables(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		wantErr string
	}{
		{map[string]string{"FACHO_LOG_LEVEL": "debug", "FACHO_LOG_FORMAT": "console"}, ""},
		{map[string]string{"FACHO_LOG_LEVEL": "loud"}, "FACHO_LOG_LEVEL"},
		{map[string]string{"FACHO_LOG_FORMAT": "xml"}, "FACHO_LOG_FORMAT"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"dev", "-check-config"}, func(k string) string { return tc.env[k] }, &out, &errOut)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: error %v, want one naming %s", tc.env, err, tc.wantErr)
		}
	}
}
