package bench

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgboot"
)

// TestTempDirHoldsPrivateCluster: the bench's temporary folder lets other
// users in (0711) and, run as root without DATABASE_URL, a private
// PostgreSQL cluster (which then runs as the postgres user) starts in it.
func TestTempDirHoldsPrivateCluster(t *testing.T) {
	tmp, err := tempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	st, err := os.Stat(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o711 {
		t.Fatalf("mode %v, want 0711", st.Mode().Perm())
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the private cluster runs as this user, whatever the folder's mode")
	}
	if _, err := pgboot.FindBinaries(); err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url, stop, err := pgboot.Ensure(ctx, pgboot.Config{DataDir: filepath.Join(tmp, "pg"), Port: port, Owned: true, Log: zerolog.Nop()})
	if err != nil {
		t.Fatalf("private cluster in %s: %v", tmp, err)
	}
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	if err := pgboot.Ping(ctx, url, 10*time.Second); err != nil {
		t.Fatalf("ping the cluster on port %s: %v", strconv.Itoa(port), err)
	}
}
