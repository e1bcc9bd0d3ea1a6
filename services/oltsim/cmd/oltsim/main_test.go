package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/gosnmp/gosnmp"
)

// startRun runs the command and returns its stdout lines as they come.
func startRun(t *testing.T, args ...string) (lines <-chan string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"oltsim"}, args...), func(string) string { return "" }, pw, io.Discard)
		_ = pw.Close()
	}()
	ch := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			ch <- sc.Text()
		}
		close(ch)
	}()
	return ch, func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return fmt.Errorf("run did not stop")
		}
	}
}

func collect(t *testing.T, lines <-chan string, n int) []string {
	t.Helper()
	var out []string
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended after %v", out)
			}
			out = append(out, l)
		case <-timeout:
			t.Fatalf("timeout; got %v", out)
		}
	}
	return out
}

func snmpGet(t *testing.T, addr, community, oid string) string {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	var p uint16
	fmt.Sscan(port, &p)
	g := &gosnmp.GoSNMP{Target: host, Port: p, Community: community, Version: gosnmp.Version2c, Timeout: time.Second}
	if err := g.Connect(); err != nil {
		t.Fatal(err)
	}
	defer g.Conn.Close()
	r, err := g.Get([]string{oid})
	if err != nil {
		t.Fatalf("get %s: %v", addr, err)
	}
	return fmt.Sprint(r.Variables[0].Value)
}

func TestRunFromFlags(t *testing.T) {
	lines, stop := startRun(t, "-olts", "3", "-listen", "127.0.0.1:0", "-shape", "1x1x4", "-http", "127.0.0.1:0", "-community", "c1")
	out := collect(t, lines, 4)
	for i := 0; i < 3; i++ {
		f := strings.Fields(out[i])
		if f[0] != "olt" || f[1] != fmt.Sprintf("olt-%d", i) || f[3] != "huawei-ma5800" || f[4] != "onus=4" {
			t.Errorf("line %q", out[i])
		}
		if got := snmpGet(t, f[2], "c1", ".1.3.6.1.2.1.1.5.0"); !strings.Contains(got, fmt.Sprintf("%v", []byte(f[1]))) {
			t.Errorf("sysName %s", got)
		}
	}
	httpAddr := strings.TrimPrefix(out[3], "http ")
	resp, err := http.Get("http://" + httpAddr + "/olts/olt-1/onus")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Count(string(b), `"Serial"`) != 4 {
		t.Errorf("onus: %d %s", resp.StatusCode, b)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRunFromFleetFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "fleet.yaml")
	yaml := `olts:
  - name: hw
    listen: 127.0.0.1:0
    profile: huawei-ma5800
    shape: {slots: 1, ports_per_slot: 2, onus_per_port: 3}
    seed: 3
    count: 2
    faults: {latency: 1ms}
  - name: zte
    community: other
    profile: zte-c300
    shape: {slots: 1, ports_per_slot: 1, onus_per_port: 2}
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, stop := startRun(t, "-fleet", file, "-http", "")
	out := collect(t, lines, 3)
	want := []string{"hw-0", "hw-1", "zte"}
	for i, l := range out {
		f := strings.Fields(l)
		if f[1] != want[i] {
			t.Errorf("line %q, want %s", l, want[i])
		}
	}
	if got := snmpGet(t, strings.Fields(out[2])[2], "other", ".1.3.6.1.2.1.1.5.0"); !strings.Contains(got, fmt.Sprint([]byte("zte"))) {
		t.Errorf("zte sysName %s", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(file, []byte("olts:\n  - name: x\n    bogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"oltsim", "-fleet", file, "-http", ""}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown field: %v", err)
	}
}

func TestParseShape(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		want [3]int
	}{
		{"1x2x16", true, [3]int{1, 2, 16}},
		{"2x16", false, [3]int{}},
		{"ax2x3", false, [3]int{}},
		{"1x0x4", false, [3]int{}},
		{"1x-2x4", false, [3]int{}},
	}
	for _, tc := range tests {
		s, err := oltsim.ParseShape(tc.in)
		if (err == nil) != tc.ok || tc.ok && [3]int{s.Slots, s.PortsPerSlot, s.ONUsPerPort} != tc.want {
			t.Errorf("%s: %+v %v", tc.in, s, err)
		}
	}
}
