package pgboot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
)

func TestParseMajor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)\n", 15, true},
		{"postgres (PostgreSQL) 17beta1", 17, true},
		{"postgres (PostgreSQL) 9.6.24", 9, true},
		{"something else", 0, false},
		{"postgres (PostgreSQL) x", 0, false},
	} {
		got, err := parseMajor(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseMajor(%q) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"url only", Config{DatabaseURL: "postgres://x"}, true},
		{"dir only", Config{DataDir: "/tmp/x"}, true},
		{"neither", Config{}, false},
		{"bad port", Config{DataDir: "/tmp/x", Port: 70000}, false},
		{"bad db name", Config{DataDir: "/tmp/x", Database: "Robert'); DROP"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.WithDefaults().Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestUnreachableURLWithoutDataDir(t *testing.T) {
	ctx := context.Background()
	_, stop, err := Ensure(ctx, Config{DatabaseURL: "postgres://postgres@127.0.0.1:1/x?connect_timeout=1", Log: zerolog.Nop()})
	if err == nil {
		_ = stop()
		t.Fatal("Ensure with a dead url and no data dir succeeded")
	}
}

// publicTempDir returns a temp dir the postgres user can reach even when
// tests run as root (t.TempDir's parents are 0700).
func publicTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgboot-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
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

func TestPrivateCluster(t *testing.T) {
	if _, err := FindBinaries(); errors.Is(err, ErrNoBinaries) {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dataDir := filepath.Join(publicTempDir(t), "pgdata")
	cfg := Config{DataDir: dataDir, Port: freePort(t), Fast: true, Log: zerolog.Nop()}

	url, stop, err := Ensure(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = stop()
		}
	})
	if !strings.HasSuffix(strings.SplitN(url, "?", 2)[0], "/facho") {
		t.Errorf("url %s does not name database facho", url)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	// The WAL is bounded: nothing keeps segments beyond max_wal_size.
	for setting, want := range map[string]string{
		"max_wal_size": "256MB", "min_wal_size": "64MB", "wal_keep_size": "0", "wal_level": "minimal",
		"max_slot_wal_keep_size": "256MB", "archive_mode": "off",
	} {
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", setting).Scan(&got); err != nil {
			t.Fatalf("show %s: %v", setting, err)
		}
		if got != want {
			t.Errorf("%s = %s, want %s", setting, got, want)
		}
	}
	conn.Close(ctx)

	// A second Ensure finds it running, reuses it and does not own it.
	url2, stop2, err := Ensure(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if url2 != url {
		t.Errorf("second Ensure url %s, want %s", url2, url)
	}
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	if err := Ping(ctx, url, 3*time.Second); err != nil {
		t.Fatalf("stop of a reused cluster stopped it: %v", err)
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if err := Ping(ctx, url, 3*time.Second); err == nil {
		t.Fatal("server still answers after stop")
	}

	// Its port taken by someone else, the cluster does not start and the
	// error names the port.
	taken, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", cfg.Port))
	if err != nil {
		t.Fatal(err)
	}
	_, stopTaken, err := Ensure(ctx, cfg)
	taken.Close()
	if err == nil {
		_ = stopTaken()
		t.Fatal("started on a taken port")
	}
	if want := fmt.Sprintf("private PostgreSQL: port %d in use", cfg.Port); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}

	// Restart on the existing data dir: no initdb, data kept.
	url3, stop3, err := Ensure(ctx, cfg)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer func() { _ = stop3() }()
	if err := Ping(ctx, url3, 5*time.Second); err != nil {
		t.Fatalf("restarted cluster does not answer: %v", err)
	}

	// An owner of the data dir (facho dev, holding its folder lock) that
	// finds the cluster running adopts it: its stop stops it.
	owned := cfg
	owned.Owned = true
	urlOwned, stopOwned, err := Ensure(ctx, owned)
	if err != nil || urlOwned != url3 {
		t.Fatalf("owned Ensure: %s, %v; want %s", urlOwned, err, url3)
	}
	if err := stopOwned(); err != nil {
		t.Fatal(err)
	}
	if err := Ping(ctx, url3, 3*time.Second); err == nil {
		t.Fatal("an owner's stop left the adopted cluster running")
	}
	if _, _, err := Ensure(ctx, cfg); err != nil {
		t.Fatalf("restart: %v", err)
	}

	// StopCluster stops a cluster whoever started it; twice, or on a dir
	// without a cluster, it is no error.
	for i := 0; i < 2; i++ {
		if err := StopCluster(cfg.DataDir); err != nil {
			t.Fatalf("StopCluster %d: %v", i+1, err)
		}
	}
	if err := Ping(ctx, url3, 3*time.Second); err == nil {
		t.Error("server still answers after StopCluster")
	}
	if err := StopCluster(filepath.Join(t.TempDir(), "none")); err != nil {
		t.Errorf("StopCluster without a cluster: %v", err)
	}
}

func TestUntraversableParentFailsClearly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root hands the data dir to the postgres user")
	}
	if _, err := FindBinaries(); errors.Is(err, ErrNoBinaries) {
		t.Skip(err)
	}
	closed := filepath.Join(publicTempDir(t), "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	_, stop, err := Ensure(context.Background(), Config{DataDir: filepath.Join(closed, "pgdata"), Port: freePort(t), Log: zerolog.Nop()})
	if err == nil {
		_ = stop()
		t.Fatal("Ensure under a 0700 root dir succeeded")
	}
	if !strings.Contains(err.Error(), closed) || !strings.Contains(err.Error(), "not traversable") {
		t.Fatalf("error does not name the dir: %v", err)
	}
}
