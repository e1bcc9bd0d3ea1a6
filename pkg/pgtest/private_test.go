//go:build unix

package pgtest

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/facho-olt/facho/pkg/pgboot"
)

// The shared private cluster is stopped by its last user only: a user
// leaving while another still holds it leaves it running, a user that died
// without releasing (its lock dropped by the kernel) does not keep it, and
// a new user after the stop starts it again.
func TestPrivateClusterStopsWithItsLastUser(t *testing.T) {
	if _, err := pgboot.FindBinaries(); errors.Is(err, pgboot.ErrNoBinaries) {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Not TempDir: when root, the postgres user must reach it.
	base, err := os.MkdirTemp("", "pgtest-private-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	base = filepath.Join(base, "facho-pgtest")
	port := freePort(t)
	t.Cleanup(func() {
		_ = pgboot.StopCluster(filepath.Join(base, "data"))
		_ = os.RemoveAll(filepath.Dir(base))
	})
	up := func() bool {
		return pgboot.Ping(ctx, "postgres://postgres@127.0.0.1:"+strconv.Itoa(port)+"/postgres?sslmode=disable", 3*time.Second) == nil
	}

	// flock locks belong to open files: two users in one process are two
	// holders, as two test binaries are.
	a, urlA, err := startPrivate(ctx, base, port)
	if err != nil {
		t.Fatal(err)
	}
	b, urlB, err := startPrivate(ctx, base, port)
	if err != nil {
		t.Fatal(err)
	}
	if urlA != urlB || !up() {
		t.Fatalf("users got %s and %s; up: %v", urlA, urlB, up())
	}
	if err := a.release(); err != nil {
		t.Fatal(err)
	}
	if !up() {
		t.Fatal("the cluster stopped while another user holds it")
	}
	if err := b.release(); err != nil {
		t.Fatal(err)
	}
	if up() {
		t.Fatal("the cluster still runs after its last user left")
	}

	// A new user starts it again; one that dies without releasing does
	// not keep it running for the next last user.
	c, _, err := startPrivate(ctx, base, port)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := startPrivate(ctx, base, port)
	if err != nil {
		t.Fatal(err)
	}
	if !up() {
		t.Fatal("not restarted for a new user")
	}
	_ = c.users.Close() // as the kernel does for a killed process
	if err := d.release(); err != nil {
		t.Fatal(err)
	}
	if up() {
		t.Fatal("a dead user kept the cluster running")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
