//go:build !unix

package pgboot

import (
	"context"
	"errors"
	"os"
	"os/exec"
)

var errUnsupported = errors.New("pgboot: a private PostgreSQL cluster is supported on unix only; set DATABASE_URL")

type runner struct{}

func newRunner() (*runner, error) { return nil, errUnsupported }

func (r *runner) command(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}
func (r *runner) prepareDir(string) error { return errUnsupported }
func (r *runner) writeFile(path string, content []byte) error {
	return os.WriteFile(path, content, 0o600)
}
func lockFile(context.Context, string) (func(), error) { return nil, errUnsupported }

// LockFile is unsupported off unix.
func LockFile(ctx context.Context, path string) (func(), error) { return lockFile(ctx, path) }
