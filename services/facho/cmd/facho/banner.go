package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// goRunCommand is how a `go run` user runs the CLI from the repository.
const goRunCommand = "go run ./services/facho/cmd/facho"

// selfCommand is how the user who started this process runs the CLI: the
// `go run` form when the binary is one `go run` built (in a go-build
// temporary folder), else "facho".
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "facho"
	}
	return commandFor(exe)
}

// commandFor is selfCommand for the executable path exe.
func commandFor(exe string) string {
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		return goRunCommand
	}
	return "facho"
}

// devBanner is what `facho dev` prints once everything is up.
type devBanner struct {
	Cmd                            string // selfCommand
	APIURL, Token                  string
	NATSURL                        string
	KeysDir                        string
	DBURL, Retention, Metrics      string
	OLTs                           int
	Shape                          string
	SimPort                        int
	SimControl                     string
	TrapAddr                       string // the trap receiver's UDP address
	IDs                            []string
	Interval                       int
	FirstRun                       time.Duration
	Restarted                      bool     // the demo OLTs existed: the schedule resumes
	Profile                        string   // the vendor profile of the demo OLTs
	Jobs                           []string // their jobs (every Interval)
	FirstAdmin, FirstAdminPassword string
	DataDir                        string
}

func (b devBanner) String() string {
	var w strings.Builder
	fmt.Fprintf(&w, "\nFacho is running.\n")
	fmt.Fprintf(&w, "  console        %s/   (API docs at %s/api/docs)\n", b.APIURL, b.APIURL)
	if b.FirstAdminPassword != "" {
		// Printed once: only its argon2id hash is stored.
		fmt.Fprintf(&w, "  first admin    user %q, password %s (shown once: note it; more users: %s users add)\n", b.FirstAdmin, b.FirstAdminPassword, b.Cmd)
	}
	fmt.Fprintf(&w, "  API            %s   (token: %s)\n", b.APIURL, b.Token)
	fmt.Fprintf(&w, "  NATS           %s (embedded JetStream; one nkey per service in %s, no anonymous clients)\n", b.NATSURL, b.KeysDir)
	fmt.Fprintf(&w, "  Postgres       %s\n", b.DBURL)
	fmt.Fprintf(&w, "  retention      %s\n", b.Retention)
	fmt.Fprintf(&w, "  metrics        %s\n", b.Metrics)
	if b.TrapAddr != "" {
		fmt.Fprintf(&w, "  traps          udp://%s (SNMP v1/v2c traps and informs of the configured OLTs)\n", b.TrapAddr)
	}
	if b.OLTs > 0 {
		fmt.Fprintf(&w, "  simulator      %d Huawei MA5800 OLTs (%s) on 127.0.0.1:%d..%d, control http://%s\n", b.OLTs, b.Shape, b.SimPort, b.SimPort+b.OLTs-1, b.SimControl)
	}
	if len(b.IDs) > 0 {
		when := "first run in " + b.FirstRun.String()
		if b.Restarted {
			when = "schedule resumes from where it stopped"
		}
		jobs := "discovery"
		if len(b.Jobs) > 0 {
			jobs = strings.Join(b.Jobs, ", ")
		}
		profile := ""
		if b.Profile != "" {
			profile = " (profile " + b.Profile + ")"
		}
		fmt.Fprintf(&w, "  demo OLTs      %s%s, %s every %ds, %s\n", strings.Join(b.IDs, ", "), profile, jobs, b.Interval, when)
		fmt.Fprintf(&w, "\nList the ONUs of a demo OLT (they appear within a few seconds):\n")
		fmt.Fprintf(&w, "  curl -s -H 'Authorization: Bearer %s' %s/api/v1/olts/%s/onus\n", b.Token, b.APIURL, b.IDs[0])
	}
	data := ""
	if filepath.Clean(b.DataDir) != defaultDataDir {
		data = " -data " + b.DataDir
	}
	fmt.Fprintf(&w, "\nFollow live events (from this folder: the tools find this system in %s):\n", filepath.Join(b.DataDir, devInfoFile))
	fmt.Fprintf(&w, "  %s tail%s\n", b.Cmd, data)
	fmt.Fprintf(&w, "\nCtrl-C stops everything.\n")
	return w.String()
}
