//go:build unix

package devstack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFileName is the lock file of a data folder.
const LockFileName = "dev.lock"

// LockDataDir takes the data folder for this process: one `facho dev` per
// folder, since a second would open the first one's live NATS store and
// Postgres and re-run its polls. The lock is flock(2) on dir/dev.lock,
// which holds this process's pid for the message of the next one; the
// kernel drops the lock when the process ends, kill -9 included, so a
// stale lock never blocks. release unlocks.
func LockDataDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock data folder %s: %w", dir, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock data folder %s: %w", dir, err)
		}
		// The holder may not have written its pid yet.
		if pid := readPID(path); pid > 0 {
			return nil, fmt.Errorf("data folder %s is in use by facho dev pid %d", dir, pid)
		}
		return nil, fmt.Errorf("data folder %s is in use by another facho dev", dir)
	}
	if err := writePID(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock data folder %s: %w", dir, err)
	}
	return func() {
		_ = f.Truncate(0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// readPID reads the pid in a lock file, 0 when there is none.
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
