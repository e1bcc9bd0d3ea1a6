//go:build unix

package pgboot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ServerUser is the system user initdb and postgres run as when we are
// root: both refuse to run as root.
const ServerUser = "postgres"

// runner runs PostgreSQL's tools, as ServerUser when we are root.
type runner struct {
	cred *syscall.Credential // nil: run as ourselves
}

func newRunner() (*runner, error) {
	if os.Geteuid() != 0 {
		return &runner{}, nil
	}
	u, err := user.Lookup(ServerUser)
	if err != nil {
		return nil, fmt.Errorf("pgboot: running as root, and PostgreSQL refuses to: need the system user %q to run it as: %w", ServerUser, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("pgboot: user %s: %w", ServerUser, err)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, g := range ids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				cred.Groups = append(cred.Groups, uint32(n))
			}
		}
	}
	return &runner{cred: cred}, nil
}

// command builds a command for one of PostgreSQL's tools. PG* variables
// are dropped so a caller's PGDATA or PGPORT cannot redirect it.
func (r *runner) command(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	cmd.Dir = dir
	if r.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
		cmd.Env = append(cmd.Env, "HOME="+dir)
	}
	return cmd
}

// prepareDir creates the data dir and, when we are root, hands it to
// ServerUser and checks that user can reach it.
func (r *runner) prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pgboot: create data dir %s: %w", dir, err)
	}
	if r.cred == nil {
		return nil
	}
	if clusterMajor(dir) == 0 {
		if err := os.Chown(dir, int(r.cred.Uid), int(r.cred.Gid)); err != nil {
			return fmt.Errorf("pgboot: chown data dir %s to %s: %w", dir, ServerUser, err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("pgboot: chmod data dir %s: %w", dir, err)
		}
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("pgboot: stat %s: %w", p, err)
		}
		if !r.canTraverse(st) {
			return fmt.Errorf("pgboot: directory %s is not traversable by the %s user (mode %s); PostgreSQL runs as %s because we are root: chmod o+x %s or choose a data dir elsewhere", p, ServerUser, st.Mode().Perm(), ServerUser, p)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// canTraverse reports whether the server user may enter directory st.
func (r *runner) canTraverse(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	mode := st.Mode().Perm()
	if sys.Uid == r.cred.Uid {
		return mode&0o100 != 0
	}
	inGroup := sys.Gid == r.cred.Gid
	for _, g := range r.cred.Groups {
		inGroup = inGroup || g == sys.Gid
	}
	if inGroup {
		return mode&0o010 != 0
	}
	return mode&0o001 != 0
}

// writeFile writes a file the server reads, owned by the server user.
func (r *runner) writeFile(path string, content []byte) error {
	if err := os.WriteFile(path, content, 0o600); err != nil {
		return fmt.Errorf("pgboot: write %s: %w", path, err)
	}
	if r.cred != nil {
		if err := os.Chown(path, int(r.cred.Uid), int(r.cred.Gid)); err != nil {
			return fmt.Errorf("pgboot: chown %s: %w", path, err)
		}
	}
	return nil
}

// lockFile takes an exclusive lock on path, waiting until ctx ends. The
// returned func releases it.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgboot: open lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("pgboot: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("pgboot: wait for lock %s: %w", path, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LockFile exposes the same cross-process lock for callers that share a
// data dir across processes (pgtest).
func LockFile(ctx context.Context, path string) (unlock func(), err error) {
	return lockFile(ctx, path)
}
