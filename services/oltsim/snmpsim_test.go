package oltsim

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startSnmpsim serves files with snmpsimd (community = file base name) and
// returns its port. It skips when snmpsimd is missing or cannot run.
func startSnmpsim(t *testing.T, files []string) int {
	t.Helper()
	bin := requireBin(t, "snmpsimd")
	dir, err := os.MkdirTemp("", "oltsim-snmpsim-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	data, cache := filepath.Join(dir, "data"), filepath.Join(dir, "cache")
	for _, d := range []string{data, cache} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(d, 0o777)
	}
	_ = os.Chmod(dir, 0o755)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	_ = pc.Close()
	args := []string{"--data-dir=" + data, "--cache-dir=" + cache,
		fmt.Sprintf("--agent-udpv4-endpoint=127.0.0.1:%d", port), "--logging-method=null"}
	if os.Geteuid() == 0 {
		args = append(args, "--process-user=nobody", "--process-group=nogroup")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Skipf("snmpsimd cannot start: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	get := requireBin(t, "snmpget")
	first := strings.TrimSuffix(filepath.Base(files[0]), ".snmprec")
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Skipf("snmpsimd exited: %s", stderr.String())
		default:
		}
		out, err := exec.Command(get, "-v2c", "-c", first, "-t", "1", "-r", "0", "-On",
			fmt.Sprintf("127.0.0.1:%d", port), ".1.3.6.1.2.1.1.1.0").CombinedOutput()
		if err == nil && strings.HasPrefix(string(out), ".1.3.6.1.2.1.1.1.0") {
			return port
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Skipf("snmpsimd did not answer in time: %s", stderr.String())
	return 0
}

func TestSameWalkAsSnmpsim(t *testing.T) {
	walk := requireBin(t, "snmpbulkwalk")
	files := snmprecFiles(t)
	port := startSnmpsim(t, files)
	var cfg FleetConfig
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".snmprec")
		cfg.OLTs = append(cfg.OLTs, OLTConfig{Name: name, Listen: "127.0.0.1:0", Community: name, Recording: file})
	}
	f := startFleet(t, cfg)
	for _, o := range f.OLTs() {
		t.Run(o.Name(), func(t *testing.T) {
			for _, flags := range [][]string{{"-On"}, {"-On", "-Cr25", "-Ox"}} {
				args := append([]string{"-v2c", "-c", o.Name(), "-t", "5", "-r", "1"}, flags...)
				ours := runNetSNMP(t, walk, append(args, fmt.Sprintf("127.0.0.1:%d", o.Addr().Port), ".1")...)
				theirs := runNetSNMP(t, walk, append(args, fmt.Sprintf("127.0.0.1:%d", port), ".1")...)
				// snmpsim (pysnmp) fills every remaining repetition of the
				// last GETBULK with endOfMibView, net-snmp's agent and ours
				// stop after the first: compare with repeats collapsed.
				if a, b := collapseRepeats(ours), collapseRepeats(theirs); a != b {
					diffLines(t, strings.Split(a, "\n"), strings.Split(b, "\n"))
				}
			}
			// GETs of present and absent OIDs answer the same too.
			get := requireBin(t, "snmpget")
			oids := []string{".1.3.6.1.2.1.1.1.0", ".1.3.6.1.2.1.1.3.0", ".1.3.6.1.2.1.1.1", ".1.3.6.1.2.1.1", ".1.9.9"}
			args := []string{"-v2c", "-c", o.Name(), "-On"}
			ours := runNetSNMP(t, get, append(append(args, fmt.Sprintf("127.0.0.1:%d", o.Addr().Port)), oids...)...)
			theirs := runNetSNMP(t, get, append(append(args, fmt.Sprintf("127.0.0.1:%d", port)), oids...)...)
			if ours != theirs {
				t.Errorf("snmpget differs:\nours   %s\ntheirs %s", ours, theirs)
			}
		})
	}
}

// collapseRepeats drops a line equal to the previous one.
func collapseRepeats(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if len(out) > 0 && out[len(out)-1] == l {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
