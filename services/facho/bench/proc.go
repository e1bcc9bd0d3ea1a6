package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/facho-olt/facho/pkg/portcheck"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on
// every Linux Facho runs on).
const clockTicks = 100

// proc is one process the bench started: a service binary, the
// simulator or snmp_exporter. Its output goes to a log file in the bench's
// temporary folder, shown (tail) when it fails.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{}
	err     error
	// httpAddr serves /healthz and /metrics, pprofAddr /debug/pprof/
	// (empty: none).
	httpAddr, pprofAddr string
}

// startProc starts bin in its own process group (a Ctrl-C in the terminal
// reaches the bench only, which then stops its processes in order).
func startProc(name, bin, logDir string, env []string, args ...string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("log of %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, logFile: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace, then kills.
func (p *proc) stop(grace time.Duration) error {
	defer p.logFile.Close()
	if p.exited() {
		return p.err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within %s of SIGTERM: killed", p.name, grace)
	}
}

// logTail is the last lines of the process's log.
func (p *proc) logTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// procUsage is what /proc says of a process: CPU seconds (user+system,
// plus its waited-for children's when children is set) and peak RSS.
type procUsage struct {
	CPUSeconds float64
	PeakRSS    int64 // bytes (VmHWM)
	RSS        int64 // bytes now (VmRSS)
}

func readUsage(pid int, children bool) (procUsage, error) {
	var u procUsage
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	// Fields after the command (which may hold spaces) in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return u, fmt.Errorf("stat of %d: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime 14, stime 15, cutime 16, cstime 17.
	if len(f) < 15 {
		return u, fmt.Errorf("stat of %d: too few fields", pid)
	}
	var ticks int64
	last := 12
	if children {
		last = 14
	}
	for k := 11; k <= last; k++ {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return u, fmt.Errorf("stat of %d: %w", pid, err)
		}
		ticks += v
	}
	u.CPUSeconds = float64(ticks) / clockTicks
	st, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, fmt.Errorf("read status of %d: %w", pid, err)
	}
	defer st.Close()
	sc := bufio.NewScanner(st)
	for sc.Scan() {
		line := sc.Text()
		for _, f := range []struct {
			key string
			to  *int64
		}{{"VmHWM:", &u.PeakRSS}, {"VmRSS:", &u.RSS}} {
			if rest, ok := strings.CutPrefix(line, f.key); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				*f.to = kb << 10
			}
		}
	}
	return u, nil
}

// treeCPU is the CPU seconds of pid with its waited-for children plus its
// live children's own (Postgres: the postmaster and its backends).
func treeCPU(pid int) (float64, error) {
	u, err := readUsage(pid, true)
	if err != nil {
		return 0, err
	}
	total := u.CPUSeconds
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return total, fmt.Errorf("list /proc: %w", err)
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		if cu, err := readUsage(child, true); err == nil {
			total += cu.CPUSeconds
		}
	}
	return total, nil
}

// freeTCP returns a TCP address on 127.0.0.1 nobody listens on now.
func freeTCP() (string, error) {
	return portcheck.PickTCP()
}

// freeUDPRange finds n consecutive free UDP ports on 127.0.0.1 (the
// simulator's OLTs take consecutive ports).
func freeUDPRange(n int) (int, error) {
	for base := 20000; base+n < 60000; base += n + 97 {
		var held []*net.UDPConn
		ok := true
		for i := 0; i < n; i++ {
			c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: base + i})
			if err != nil {
				ok = false
				break
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("no range of free UDP ports for the simulator")
}

// waitHealthy polls url until it answers 200, the process exits or ctx ends.
func waitHealthy(ctx context.Context, p *proc, url string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		if p.exited() {
			return fmt.Errorf("%s exited: %v\n%s", p.name, p.err, p.logTail(20))
		}
		if code, _, err := httpGet(ctx, url); err == nil && code == 200 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy within %s: %w\n%s", p.name, limit, ctx.Err(), p.logTail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
