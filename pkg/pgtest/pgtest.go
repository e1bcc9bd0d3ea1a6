// Package pgtest gives each test a fresh PostgreSQL database with Facho's
// migrations applied, dropped when the test ends.
//
// The server is, in order: DATABASE_URL (it must answer); the local
// postgres://postgres@127.0.0.1:5432/postgres when it answers; else a
// private cluster started by pgboot in $TMPDIR/facho-pgtest on port 15433,
// shared by every test binary of the run (pgboot serialises the start with
// a lock file).
//
// Test binaries run in parallel (go test -p) and share that cluster, so no
// binary may stop it under the others. Each binary that uses it holds a
// shared flock on $TMPDIR/facho-pgtest/users.lock for its lifetime (the
// kernel drops it at exit, crash or kill -9 included). A package whose
// TestMain calls Main stops the cluster when its binary ends if no other
// binary holds that lock, i.e. it is the last user; a binary starting
// meanwhile waits for the stop and starts the cluster again. A run whose
// last binary has no such TestMain leaves the cluster running (the next
// run reuses it); stop it with `pg_ctl stop -D $TMPDIR/facho-pgtest/data`
// (as the postgres user when root).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/dbmigrate"
	"github.com/facho-olt/facho/pkg/pgboot"
)

// LocalURL is the machine's PostgreSQL, used when it answers.
const LocalURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// EnvPrivate, when set (and DATABASE_URL is not), skips the local server
// and uses the private cluster: CI sets it to test the path a machine
// without a running PostgreSQL takes.
const EnvPrivate = "FACHO_PGTEST_PRIVATE"

// PrivatePort is the port of the shared private test cluster.
const PrivatePort = pgboot.DefaultPort + 1

var server struct {
	once sync.Once
	url  string
	err  error
	// private is the private cluster when this process uses it.
	private *privateCluster
}

// Main runs the tests of a package and, when this binary used the private
// cluster and no other binary uses it still, stops it. Call it from the
// package's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	if err := release(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
	}
	return code
}

// release stops the private cluster if this process is its last user.
func release() error {
	if server.private == nil {
		return nil
	}
	return server.private.release()
}

// privateCluster is one user's hold on a private cluster shared by
// processes: the cluster's dir and the user's shared lock on
// <base>/users.lock.
type privateCluster struct {
	dataDir string
	users   *os.File
}

// startPrivate joins the users of the private cluster in base and starts
// it unless it runs.
func startPrivate(ctx context.Context, base string, port int) (*privateCluster, string, error) {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, "", fmt.Errorf("create %s: %w", base, err)
	}
	// Ignore the error: a dir created by another user keeps its mode.
	_ = os.Chmod(base, 0o755)
	users, err := joinUsers(ctx, filepath.Join(base, "users.lock"))
	if err != nil {
		return nil, "", fmt.Errorf("join the users of the private test cluster: %w", err)
	}
	p := &privateCluster{dataDir: filepath.Join(base, "data"), users: users}
	u, _, err := pgboot.Ensure(ctx, pgboot.Config{
		DataDir:  p.dataDir,
		Port:     port,
		Database: "postgres",
		Fast:     true,
		Log:      zerolog.Nop(),
	})
	if err != nil {
		_ = p.users.Close()
		return nil, "", err
	}
	return p, u, nil
}

// release leaves the users and stops the cluster when none is left.
func (p *privateCluster) release() error {
	if p.users == nil {
		return nil
	}
	defer func() {
		_ = p.users.Close()
		p.users = nil
	}()
	if !lastUser(p.users) {
		return nil
	}
	if err := pgboot.StopCluster(p.dataDir); err != nil {
		return fmt.Errorf("stop the private test cluster: %w", err)
	}
	return nil
}

// ServerURL returns the admin URL of the server tests use, starting the
// private cluster when needed (once per process).
func ServerURL(t testing.TB) string {
	t.Helper()
	server.once.Do(func() { server.url, server.err = findServer() })
	if server.err != nil {
		t.Fatalf("pgtest: no PostgreSQL server: %v", server.err)
	}
	return server.url
}

func findServer() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if u := os.Getenv("DATABASE_URL"); u != "" {
		if err := pgboot.Ping(ctx, u, 5*time.Second); err != nil {
			return "", fmt.Errorf("DATABASE_URL does not answer: %w", err)
		}
		return u, nil
	}
	if os.Getenv(EnvPrivate) == "" {
		if err := pgboot.Ping(ctx, LocalURL, 2*time.Second); err == nil {
			return LocalURL, nil
		}
	}
	p, u, err := startPrivate(ctx, filepath.Join(os.TempDir(), "facho-pgtest"), PrivatePort)
	if err != nil {
		return "", err
	}
	server.private = p
	return u, nil
}

// URL creates a fresh database with the migrations applied and returns its
// URL; the database is dropped (WITH FORCE) when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	dbURL := EmptyURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dbmigrate.ApplyURL(ctx, dbURL, zerolog.Nop()); err != nil {
		t.Fatalf("pgtest: migrate %s: %v", dbURL, err)
	}
	return dbURL
}

// EmptyURL creates a fresh database without migrations (for testing the
// migrations themselves) and returns its URL; it is dropped when the test
// ends.
func EmptyURL(t testing.TB) string {
	t.Helper()
	admin := ServerURL(t)
	name := "facho_test_" + randomHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := exec(ctx, admin, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := exec(ctx, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	dbURL, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dbURL
}

// New returns a pool on a fresh database with the migrations applied; the
// pool is closed and the database dropped when the test ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dbURL := URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatalf("pgtest: pool: %v", err)
	}
	// Registered after URL's cleanup, so it runs first: the pool closes
	// before its database is dropped.
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("pgtest: ping: %v", err)
	}
	return pool
}

func exec(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// withDatabase returns url pointing at database name. It accepts URL and
// keyword/value DSNs.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse database url: %w", err)
		}
		u.Path = "/" + name
		q := u.Query()
		q.Del("dbname")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// In a keyword/value DSN the last dbname wins.
	return dsn + " dbname=" + name, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
