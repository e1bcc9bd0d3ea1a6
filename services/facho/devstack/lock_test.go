//go:build unix

package devstack_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
)

// Two locks on one folder: the second fails naming the holder's pid; once
// released the folder can be locked again.
func TestLockDataDir(t *testing.T) {
	dir := t.TempDir()
	release, err := devstack.LockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = devstack.LockDataDir(dir)
	want := fmt.Sprintf("data folder %s is in use by facho dev pid %d", dir, os.Getpid())
	if err == nil || err.Error() != want {
		t.Fatalf("second lock: %v, want %q", err, want)
	}
	release()
	release2, err := devstack.LockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	release2()
}

// envLockHolder makes TestLockHolder a process that holds a lock.
const envLockHolder = "FACHO_TEST_LOCK_HOLDER"

// TestLockHolder is the helper process of TestStaleLockAfterKill9: it
// locks the folder named by envLockHolder, says so and waits to be killed.
func TestLockHolder(t *testing.T) {
	dir := os.Getenv(envLockHolder)
	if dir == "" {
		t.Skip("helper process of TestStaleLockAfterKill9")
	}
	if _, err := devstack.LockDataDir(dir); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	// Until killed (or the parent goes away and stdin closes).
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}

// A facho dev killed with -9 leaves dev.lock with its pid behind, but no
// lock: the kernel drops flock locks with the process, so the next start
// is not blocked.
func TestStaleLockAfterKill9(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolder$", "-test.count=1")
	cmd.Env = append(os.Environ(), envLockHolder+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("helper said %q, %v", line, err)
	}

	_, err = devstack.LockDataDir(dir)
	want := fmt.Sprintf("data folder %s is in use by facho dev pid %d", dir, cmd.Process.Pid)
	if err == nil || err.Error() != want {
		t.Fatalf("lock while the helper holds it: %v, want %q", err, want)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	// The dead holder's pid is still in the file: only the flock counts.
	if b, _ := os.ReadFile(filepath.Join(dir, devstack.LockFileName)); strings.TrimSpace(string(b)) != strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("lock file after kill -9 holds %q, want the dead pid %d (this test must meet a stale file)", b, cmd.Process.Pid)
	}
	release, err := devstack.LockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after the holder was killed: %v", err)
	}
	release()
}

func devConfig(dir string) devstack.Config {
	return devstack.Config{
		DataDir:     dir,
		NATSPort:    -1,
		DatabaseURL: "postgres://postgres@127.0.0.1:1/unused?sslmode=disable",
		APIAddr:     "127.0.0.1:0",
		APIToken:    token,
		Pollers:     1,
	}
}

// A second stack on a locked folder refuses before touching anything.
func TestStartRefusesALockedFolder(t *testing.T) {
	dir := t.TempDir()
	release, err := devstack.LockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := devstack.Start(ctx, devConfig(dir), zerolog.Nop())
	if err == nil {
		_ = s.Stop()
		t.Fatal("a second stack started on a locked data folder")
	}
	if want := fmt.Sprintf("data folder %s is in use by facho dev pid %d", dir, os.Getpid()); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the refused stack wrote into the folder: %v", entries)
	}
}

// Taken ports are named, all at once, before anything starts; the folder
// is released again after the refusal.
func TestStartNamesTakenPorts(t *testing.T) {
	tcp := func() (net.Listener, int) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln, ln.Addr().(*net.TCPAddr).Port
	}
	api, apiPort := tcp()
	_, natsPort := tcp()
	_, metricsPort := tcp() // the planner's: the first metrics port
	_, controlPort := tcp()
	sim, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	simPort := sim.LocalAddr().(*net.UDPAddr).Port

	dir := t.TempDir()
	cfg := devConfig(dir)
	cfg.APIAddr = api.Addr().String()
	cfg.NATSPort = natsPort
	cfg.MetricsPort = metricsPort
	cfg.SimControlAddr = fmt.Sprintf("127.0.0.1:%d", controlPort)
	cfg.Fleet.OLTs = []oltsim.OLTConfig{{Name: "olt-a", Listen: sim.LocalAddr().String(), Community: "c-0123456789",
		Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 1}, Seed: 1}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := devstack.Start(ctx, cfg, zerolog.Nop())
	if err == nil {
		_ = s.Stop()
		t.Fatal("started with taken ports")
	}
	for _, want := range []string{
		fmt.Sprintf("embedded nats: port %d in use", natsPort),
		fmt.Sprintf("api: port %d in use", apiPort),
		fmt.Sprintf("planner metrics: port %d in use", metricsPort),
		fmt.Sprintf("simulator control: port %d in use", controlPort),
		fmt.Sprintf("simulator olt-a: port %d/udp in use", simPort),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	release, err := devstack.LockDataDir(dir)
	if err != nil {
		t.Fatalf("the folder stays locked after a refused start: %v", err)
	}
	release()
}
