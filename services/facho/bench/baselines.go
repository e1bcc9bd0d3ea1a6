package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gosnmp/gosnmp"
)

// Baseline is one walker other than Facho over the same simulated tables.
type Baseline struct {
	Name              string  `json:"name"`
	MaxRepetitions    int     `json:"max_repetitions"`
	OLTs              int     `json:"olts"`
	Concurrency       int     `json:"concurrency"`
	Varbinds          int64   `json:"varbinds"`
	Seconds           float64 `json:"seconds"`
	VarbindsPerS      float64 `json:"varbinds_per_s"`
	CPUSeconds        float64 `json:"cpu_seconds"`
	VarbindsPerCPUSec float64 `json:"varbinds_per_cpu_second"`
	// Skipped says why the baseline did not run (tool not installed).
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

func (b *Baseline) finish(elapsed time.Duration) {
	b.Seconds = elapsed.Seconds()
	if b.Seconds > 0 {
		b.VarbindsPerS = float64(b.Varbinds) / b.Seconds
	}
	if b.CPUSeconds > 0 {
		b.VarbindsPerCPUSec = float64(b.Varbinds) / b.CPUSeconds
	}
}

// target is one simulated OLT as the baselines walk it.
type target struct {
	host string
	port int
}

// forEach runs fn on every target with at most conc at a time.
func forEach(ctx context.Context, targets []target, conc int, fn func(target) error) error {
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, t := range targets {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(t); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// selfCPU is this process's CPU seconds so far.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// gosnmpBaseline walks every column of every target with gosnmp's
// BulkWalk, in this process (whose CPU it measures: the services are not
// running yet, the embedded NATS is idle).
func gosnmpBaseline(ctx context.Context, targets []target, columns []string, community string, reps, conc int) Baseline {
	b := Baseline{Name: "gosnmp BulkWalk", MaxRepetitions: reps, OLTs: len(targets), Concurrency: conc}
	var n atomic.Int64
	cpu0, t0 := selfCPU(), time.Now()
	err := forEach(ctx, targets, conc, func(t target) error {
		g := &gosnmp.GoSNMP{Target: t.host, Port: uint16(t.port), Community: community, Version: gosnmp.Version2c,
			Timeout: 2 * time.Second, Retries: 2, MaxRepetitions: uint32(reps), Context: ctx}
		if err := g.Connect(); err != nil {
			return fmt.Errorf("gosnmp connect %s:%d: %w", t.host, t.port, err)
		}
		defer g.Conn.Close()
		for _, col := range columns {
			if err := g.BulkWalk(col, func(gosnmp.SnmpPDU) error { n.Add(1); return nil }); err != nil {
				return fmt.Errorf("gosnmp walk %s:%d %s: %w", t.host, t.port, col, err)
			}
		}
		return nil
	})
	b.Varbinds, b.CPUSeconds = n.Load(), selfCPU()-cpu0
	b.finish(time.Since(t0))
	if err != nil {
		b.Error = err.Error()
	}
	return b
}

// netsnmpBaseline runs snmpbulkwalk once per column and target. The
// community is in a snmp.conf of the temporary folder (SNMPCONFPATH), not
// on the command line where ps would show it.
func netsnmpBaseline(ctx context.Context, tmp string, targets []target, columns []string, community string, reps, conc int) Baseline {
	b := Baseline{Name: fmt.Sprintf("net-snmp snmpbulkwalk -Cr%d", reps), MaxRepetitions: reps, OLTs: len(targets), Concurrency: conc}
	bin, err := exec.LookPath("snmpbulkwalk")
	if err != nil {
		b.Skipped = "snmpbulkwalk not installed (Debian package snmp)"
		return b
	}
	confDir := filepath.Join(tmp, "netsnmp")
	if err := os.MkdirAll(confDir, 0o700); err != nil {
		b.Error = err.Error()
		return b
	}
	conf := fmt.Sprintf("defVersion 2c\ndefCommunity %s\nmibs\n", community)
	if err := os.WriteFile(filepath.Join(confDir, "snmp.conf"), []byte(conf), 0o600); err != nil {
		b.Error = err.Error()
		return b
	}
	env := append(os.Environ(), "SNMPCONFPATH="+confDir, "MIBS=", "MIBDIRS=/nonexistent")
	var n atomic.Int64
	var cpuMu sync.Mutex
	t0 := time.Now()
	err = forEach(ctx, targets, conc, func(t target) error {
		for _, col := range columns {
			cmd := exec.CommandContext(ctx, bin, fmt.Sprintf("-Cr%d", reps), "-On", "-Oq", "-t", "2", "-r", "2",
				fmt.Sprintf("%s:%d", t.host, t.port), col)
			cmd.Env = env
			var out bytes.Buffer
			cmd.Stdout = &out
			cmd.Stderr = io.Discard
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("snmpbulkwalk %s:%d %s: %w", t.host, t.port, col, err)
			}
			n.Add(int64(bytes.Count(out.Bytes(), []byte("\n.1."))) + 1)
			if ps := cmd.ProcessState; ps != nil {
				cpuMu.Lock()
				b.CPUSeconds += (ps.UserTime() + ps.SystemTime()).Seconds()
				cpuMu.Unlock()
			}
		}
		return nil
	})
	b.Varbinds = n.Load()
	b.finish(time.Since(t0))
	if err != nil {
		b.Error = err.Error()
	}
	return b
}

// exporterMetric is one column as snmp_exporter exposes it.
type exporterMetric struct{ name, oid, typ string }

// exporterBaseline scrapes every target through Prometheus's
// snmp_exporter with a module walking the same columns.
func exporterBaseline(ctx context.Context, tmp string, targets []target, metrics []exporterMetric, community string, reps, conc int) Baseline {
	b := Baseline{Name: "Prometheus snmp_exporter", MaxRepetitions: reps, OLTs: len(targets), Concurrency: conc}
	bin, err := exec.LookPath("prometheus-snmp-exporter")
	if err != nil {
		if bin, err = exec.LookPath("snmp_exporter"); err != nil {
			b.Skipped = "prometheus-snmp-exporter not installed (Debian package prometheus-snmp-exporter)"
			return b
		}
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "facho:\n  version: 2\n  max_repetitions: %d\n  retries: 2\n  timeout: 5s\n  auth:\n    community: %q\n  walk:\n", reps, community)
	for _, m := range metrics {
		fmt.Fprintf(&cfg, "  - %s\n", m.oid)
	}
	cfg.WriteString("  metrics:\n")
	for _, m := range metrics {
		fmt.Fprintf(&cfg, "  - name: %s\n    oid: %s\n    type: %s\n    indexes:\n    - labelname: pon\n      type: gauge\n    - labelname: onu\n      type: gauge\n", m.name, m.oid, m.typ)
	}
	cfgPath := filepath.Join(tmp, "snmp_exporter.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		b.Error = err.Error()
		return b
	}
	addr, err := freeTCP()
	if err != nil {
		b.Error = err.Error()
		return b
	}
	p, err := startProc("snmp_exporter", bin, tmp, os.Environ(), "--config.file="+cfgPath, "--web.listen-address="+addr, "--log.level=warn")
	if err != nil {
		b.Error = err.Error()
		return b
	}
	defer func() { _ = p.stop(5 * time.Second) }()
	if err := waitHealthy(ctx, p, "http://"+addr+"/metrics", 20*time.Second); err != nil {
		b.Error = err.Error()
		return b
	}
	u0, _ := readUsage(p.cmd.Process.Pid, false)
	client := &http.Client{Timeout: 5 * time.Minute}
	var n atomic.Int64
	t0 := time.Now()
	err = forEach(ctx, targets, conc, func(t target) error {
		url := fmt.Sprintf("http://%s/snmp?module=facho&target=%s:%d", addr, t.host, t.port)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("snmp_exporter scrape: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("snmp_exporter scrape of %s:%d answered %d", t.host, t.port, resp.StatusCode)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var k int64
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "facho_") {
				k++
			}
		}
		n.Add(k)
		return sc.Err()
	})
	b.Varbinds = n.Load()
	b.finish(time.Since(t0))
	if u1, uerr := readUsage(p.cmd.Process.Pid, false); uerr == nil {
		b.CPUSeconds = u1.CPUSeconds - u0.CPUSeconds
		if b.CPUSeconds > 0 {
			b.VarbindsPerCPUSec = float64(b.Varbinds) / b.CPUSeconds
		}
	}
	if err != nil {
		b.Error = err.Error()
	}
	return b
}

// httpGet returns the status and body of url.
func httpGet(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
