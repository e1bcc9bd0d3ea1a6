package pgboot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Files pgboot keeps in the data dir.
const (
	settingsFile = "facho.conf"         // included by postgresql.conf, rewritten at every start
	logFile      = "facho-postgres.log" // server log of the private cluster
	includeLine  = "include_if_exists = 'facho.conf'"
)

// maxSocketPath keeps the unix socket path under the kernel's 108-byte
// limit; a longer data dir gets no unix socket (TCP only).
const maxSocketPath = 100

func initdb(ctx context.Context, r *runner, b Binaries, dir string) error {
	cmd := r.command(ctx, filepath.Dir(dir), b.path("initdb"),
		"-D", dir, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-locale")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgboot: initdb %s: %w: %s", dir, err, lastLines(out, 15))
	}
	return nil
}

// runningPort reports whether the cluster in dir runs and on which port.
func runningPort(ctx context.Context, r *runner, b Binaries, dir string) (int, bool, error) {
	cmd := r.command(ctx, filepath.Dir(dir), b.path("pg_ctl"), "status", "-D", dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		// pg_ctl status: 3 = not running, 4 = no accessible data dir.
		if errors.As(err, &exit) && (exit.ExitCode() == 3 || exit.ExitCode() == 4) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("pgboot: pg_ctl status %s: %w: %s", dir, err, lastLines(out, 5))
	}
	pid, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0, false, fmt.Errorf("pgboot: read postmaster.pid of running cluster %s: %w", dir, err)
	}
	// Line 4 of postmaster.pid is the port.
	lines := strings.Split(string(pid), "\n")
	if len(lines) < 4 {
		return 0, false, fmt.Errorf("pgboot: postmaster.pid of %s: too short", dir)
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err != nil {
		return 0, false, fmt.Errorf("pgboot: postmaster.pid of %s: port %q: %w", dir, lines[3], err)
	}
	return port, true, nil
}

// WAL bounds of the private cluster. It has no replica and no archive, so
// it needs no WAL beyond crash recovery: wal_level minimal writes the
// least, checkpoints recycle segments once max_wal_size is reached, and
// nothing (wal_keep_size, replication slots) keeps old segments. pg_wal
// then stays near max_wal_size (PostgreSQL may exceed it briefly under a
// burst, until the next checkpoint).
const (
	walMaxSize = "256MB"
	walMinSize = "64MB"
)

// walSettings returns the WAL lines of facho.conf for PostgreSQL major.
func walSettings(major int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "wal_level = minimal\nmax_wal_senders = 0\narchive_mode = off\n")
	fmt.Fprintf(&b, "max_wal_size = '%s'\nmin_wal_size = '%s'\n", walMaxSize, walMinSize)
	fmt.Fprintf(&b, "checkpoint_timeout = '5min'\ncheckpoint_completion_target = 0.9\n")
	if major >= 13 {
		fmt.Fprintf(&b, "wal_keep_size = 0\nmax_slot_wal_keep_size = '%s'\n", walMaxSize)
	} else {
		fmt.Fprintf(&b, "wal_keep_segments = 0\n")
	}
	return b.String()
}

// writeSettings writes facho.conf (port, listen address, socket dir,
// durability, WAL bounds) and makes postgresql.conf include it.
func writeSettings(r *runner, cfg Config, major int) error {
	socketDir := cfg.DataDir
	if len(filepath.Join(socketDir, ".s.PGSQL."+strconv.Itoa(cfg.Port))) > maxSocketPath {
		socketDir = ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by pgboot at every start; edit Config instead.\n")
	fmt.Fprintf(&b, "listen_addresses = '127.0.0.1'\n")
	fmt.Fprintf(&b, "port = %d\n", cfg.Port)
	fmt.Fprintf(&b, "unix_socket_directories = %s\n", quoteConf(socketDir))
	fmt.Fprintf(&b, "max_connections = 200\n")
	b.WriteString(walSettings(major))
	if cfg.Fast {
		fmt.Fprintf(&b, "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
	}
	if err := r.writeFile(filepath.Join(cfg.DataDir, settingsFile), []byte(b.String())); err != nil {
		return err
	}
	confPath := filepath.Join(cfg.DataDir, "postgresql.conf")
	conf, err := os.ReadFile(confPath)
	if err != nil {
		return fmt.Errorf("pgboot: read %s: %w", confPath, err)
	}
	if bytes.Contains(conf, []byte(includeLine)) {
		return nil
	}
	f, err := os.OpenFile(confPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgboot: open %s: %w", confPath, err)
	}
	if _, err := f.WriteString("\n" + includeLine + "\n"); err != nil {
		_ = f.Close()
		return fmt.Errorf("pgboot: append to %s: %w", confPath, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("pgboot: close %s: %w", confPath, err)
	}
	return nil
}

func startServer(ctx context.Context, r *runner, b Binaries, cfg Config) error {
	logPath := filepath.Join(cfg.DataDir, logFile)
	secs := strconv.Itoa(int(cfg.StartTimeout.Seconds()))
	cmd := r.command(ctx, filepath.Dir(cfg.DataDir), b.path("pg_ctl"),
		"start", "-D", cfg.DataDir, "-w", "-t", secs, "-s", "-l", logPath)
	// pg_ctl leaves the server running in the background; its output
	// pipes must not keep CombinedOutput waiting for the server to exit.
	cmd.WaitDelay = time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		serverLog, _ := os.ReadFile(logPath)
		return fmt.Errorf("pgboot: start PostgreSQL in %s on port %d: %w: %s %s", cfg.DataDir, cfg.Port, err, lastLines(out, 5), lastLines(serverLog, 10))
	}
	return nil
}

// StopCluster stops the private cluster in dataDir if it runs (fast
// shutdown: sessions are ended); a cluster that does not run, or a dir
// without one, is no error. It is for the owner of a cluster that another
// process started (pgtest stops the shared test cluster this way).
func StopCluster(dataDir string) error {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return fmt.Errorf("pgboot: data dir %s: %w", dataDir, err)
	}
	major := clusterMajor(dir)
	if major == 0 {
		return nil
	}
	r, err := newRunner()
	if err != nil {
		return err
	}
	bins, err := pickBinaries("", major)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, running, err := runningPort(ctx, r, bins, dir)
	if err != nil || !running {
		return err
	}
	return stopServer(r, bins, dir)
}

func stopServer(r *runner, b Binaries, dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := r.command(ctx, filepath.Dir(dir), b.path("pg_ctl"), "stop", "-D", dir, "-m", "fast", "-w", "-t", "60", "-s")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgboot: stop PostgreSQL in %s: %w: %s", dir, err, lastLines(out, 5))
	}
	return nil
}

// quoteConf quotes a postgresql.conf string value.
func quoteConf(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// lastLines returns the last n lines of out, for error messages.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
