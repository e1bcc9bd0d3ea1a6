// Package pgboot gives a service a PostgreSQL server: the one DATABASE_URL
// points at when it answers, else a private cluster started from the
// installed PostgreSQL binaries in a data directory of our own.
//
// The private cluster listens on 127.0.0.1 only, with trust authentication
// for the role "postgres": it is meant for the one-command local run and
// for tests, not for production (use DATABASE_URL there).
package pgboot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/portcheck"
)

// DefaultPort is the private cluster's port: not 5432, so it never collides
// with a system PostgreSQL.
const DefaultPort = 15432

// DefaultDatabase is the database Ensure creates in a private cluster.
const DefaultDatabase = "facho"

// Config says which server to use or how to start one.
type Config struct {
	// DatabaseURL is used as is when a server answers there.
	DatabaseURL string
	// DataDir holds the private cluster (initdb once, then reused).
	// Required unless DatabaseURL answers.
	DataDir string
	// Port of the private cluster on 127.0.0.1; default DefaultPort.
	Port int
	// Database created in the private cluster; default DefaultDatabase.
	Database string
	// BinDir holds initdb, pg_ctl and postgres; default: the highest
	// version found in PATH, /usr/lib/postgresql/*/bin or /usr/pgsql-*/bin.
	BinDir string
	// Fast turns off fsync and synchronous commit: for throw-away test
	// clusters only, a crash can lose or corrupt data.
	Fast bool
	// Owned says the caller owns DataDir alone (facho dev holds a lock on
	// its data folder): a cluster found running there was left by a
	// previous owner that died (kill -9), and stop stops it too, as if
	// this call had started it. Without Owned such a cluster is someone
	// else's and is left running.
	Owned bool
	// StartTimeout bounds how long the server may take to accept
	// connections; default 60s.
	StartTimeout time.Duration
	// Log receives what pgboot does.
	Log zerolog.Logger
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 60 * time.Second
	}
	return c
}

// Validate checks the configuration after defaults.
func (c Config) Validate() error {
	var errs []error
	if c.DatabaseURL == "" && c.DataDir == "" {
		errs = append(errs, errors.New("pgboot: need a database url or a data dir"))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("pgboot: port %d: want 1..65535", c.Port))
	}
	if !validIdent(c.Database) {
		errs = append(errs, fmt.Errorf("pgboot: database name %q: want [a-z_][a-z0-9_]*", c.Database))
	}
	return errors.Join(errs...)
}

// Ensure returns the URL of a server that answers. When DatabaseURL answers
// it is returned and stop does nothing. Otherwise the private cluster in
// DataDir is initialised if needed, started unless it already runs, and the
// database created; stop stops the cluster if this call started it (a
// cluster found running is left running: someone else owns it).
func Ensure(ctx context.Context, cfg Config) (url string, stop func() error, err error) {
	cfg = cfg.WithDefaults()
	noop := func() error { return nil }
	if err := cfg.Validate(); err != nil {
		return "", noop, err
	}
	if cfg.DatabaseURL != "" {
		perr := Ping(ctx, cfg.DatabaseURL, 3*time.Second)
		if perr == nil {
			return cfg.DatabaseURL, noop, nil
		}
		if cfg.DataDir == "" {
			return "", noop, fmt.Errorf("pgboot: database url does not answer: %w", perr)
		}
		cfg.Log.Warn().Err(perr).Str("data_dir", cfg.DataDir).Msg("database url does not answer; starting a private PostgreSQL cluster")
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return "", noop, fmt.Errorf("pgboot: data dir %s: %w", cfg.DataDir, err)
	}
	cfg.DataDir = filepath.Clean(dataDir)
	return ensureCluster(ctx, cfg)
}

func ensureCluster(ctx context.Context, cfg Config) (string, func() error, error) {
	noop := func() error { return nil }
	runner, err := newRunner()
	if err != nil {
		return "", noop, err
	}
	if err := os.MkdirAll(filepath.Dir(cfg.DataDir), 0o755); err != nil {
		return "", noop, fmt.Errorf("pgboot: create parent of %s: %w", cfg.DataDir, err)
	}
	// Serialise processes that share the data dir: one runs initdb and
	// starts the server, the others find it running.
	unlock, err := lockFile(ctx, cfg.DataDir+".lock")
	if err != nil {
		return "", noop, err
	}
	defer unlock()

	if err := runner.prepareDir(cfg.DataDir); err != nil {
		return "", noop, err
	}
	bins, err := pickBinaries(cfg.BinDir, clusterMajor(cfg.DataDir))
	if err != nil {
		return "", noop, err
	}
	log := cfg.Log.With().Str("data_dir", cfg.DataDir).Str("bin_dir", bins.Dir).Int("pg_major", bins.Major).Logger()

	if clusterMajor(cfg.DataDir) == 0 {
		log.Info().Msg("initialising private PostgreSQL cluster")
		if err := initdb(ctx, runner, bins, cfg.DataDir); err != nil {
			return "", noop, err
		}
	}
	port, running, err := runningPort(ctx, runner, bins, cfg.DataDir)
	if err != nil {
		return "", noop, err
	}
	stop := noop
	if running {
		log.Info().Int("port", port).Bool("owned", cfg.Owned).Msg("private PostgreSQL cluster already running; reusing it")
		if cfg.Owned {
			stop = func() error { return stopServer(runner, bins, cfg.DataDir) }
		}
	} else {
		port = cfg.Port
		// A taken port would only show in the server log after pg_ctl's wait.
		if err := portcheck.Free("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
			if errors.Is(err, portcheck.ErrInUse) {
				return "", noop, fmt.Errorf("private PostgreSQL: port %d in use", port)
			}
			return "", noop, fmt.Errorf("private PostgreSQL: %w", err)
		}
		if err := writeSettings(runner, cfg, bins.Major); err != nil {
			return "", noop, err
		}
		log.Info().Int("port", port).Msg("starting private PostgreSQL cluster")
		if err := startServer(ctx, runner, bins, cfg); err != nil {
			return "", noop, err
		}
		stop = func() error { return stopServer(runner, bins, cfg.DataDir) }
	}
	admin := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := CreateDatabase(ctx, admin, cfg.Database); err != nil {
		return "", stop, err
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, cfg.Database), stop, nil
}

// Ping connects to url within timeout and checks the server answers.
func Ping(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := conn.Ping(ctx); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// CreateDatabase creates database name through the server at adminURL
// unless it exists. Safe when several processes race to create it.
func CreateDatabase(ctx context.Context, adminURL, name string) error {
	if !validIdent(name) {
		return fmt.Errorf("create database %q: invalid name", name)
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("create database %s: connect: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("create database %s: look up: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		var pgErr *pgconn.PgError
		// 42P04 duplicate_database, 23505 unique_violation: a concurrent
		// creator won the race.
		if errors.As(err, &pgErr) && (pgErr.Code == "42P04" || pgErr.Code == "23505") {
			return nil
		}
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// validIdent accepts the database names we create: plain lower-case
// identifiers, so they need no quoting.
func validIdent(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || (r >= 'a' && r <= 'z'):
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// clusterMajor returns the major version of the cluster in dir, 0 when
// there is none yet.
func clusterMajor(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "PG_VERSION"))
	if err != nil {
		return 0
	}
	var major int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d", &major); err != nil {
		return 0
	}
	return major
}
