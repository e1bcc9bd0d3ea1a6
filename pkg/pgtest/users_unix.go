//go:build unix

package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// joinUsers takes a shared flock on path, waiting until ctx ends: this
// process uses the private cluster until it exits (the kernel drops the
// lock then, whatever the exit). A process stopping the cluster holds the
// lock exclusively meanwhile, so joiners wait for it and start the cluster
// again.
func joinUsers(ctx context.Context, path string) (*os.File, error) {
	// flock needs no write access: a file another user created will do.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("wait for %s: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lastUser turns this process's shared lock into an exclusive one without
// waiting: true when no other process uses the cluster. Either way the
// shared lock may be gone after the call (flock converts by unlocking
// first), which is fine: the caller is leaving.
func lastUser(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
