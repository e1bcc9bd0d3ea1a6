//go:build linux

package e2e

import "syscall"

// chaosSysProcAttr puts a process in its own process group (so a kill of
// the group reaches whatever it started) and has the kernel kill it when
// the test process dies (a timeout panic, say), so no process outlives the
// test.
func chaosSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
