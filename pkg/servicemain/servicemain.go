// Package servicemain is what every Facho service binary does around its
// service: the common flags with their environment fallbacks, -check-config,
// the JSON logger, PostgreSQL with the migrations applied, NATS (as the
// service's own identity, over TLS when asked: pkg/natsauth) with the
// streams provisioned, or checked to exist when an identity that may not
// provision connects, and the service run beside the /metrics and /healthz
// server until the context ends.
//
// A binary describes only what is its own (flags, config check, how to call
// its library's Run) in a Binary and calls Binary.Run from its run function.
package servicemain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/pkg/telemetry"
)

// Database says whether and how a service uses PostgreSQL.
type Database int

const (
	// NoDatabase: the service does not use PostgreSQL.
	NoDatabase Database = iota
	// RequireDatabase: -database-url (DATABASE_URL) is required; the
	// migrations are applied at start-up.
	RequireDatabase
	// DatabaseOrPrivateCluster: -database-url, or -pg-data-dir
	// (FACHO_PG_DATA_DIR) where a private cluster is started (pkg/pgboot)
	// when the URL is empty or does not answer; the migrations are applied
	// at start-up.
	DatabaseOrPrivateCluster
)

// Binary describes one service binary: what it adds to the common flags
// and how it runs its service.
type Binary struct {
	// Name of the service: the logger's service key and, as
	// "facho-<Name>", the NATS connection name.
	Name string
	// HTTPAddr is the default address of /metrics and /healthz
	// (-http-addr, FACHO_HTTP_ADDR).
	HTTPAddr string
	// Database says whether the service uses PostgreSQL.
	Database Database
	// SecretKey: the service needs the key of pkg/secret, read from
	// FACHO_SECRET_KEY only (a key on the command line shows in ps), and
	// gets Deps.Box.
	SecretKey bool
	// LogTo receives the JSON log; nil means stdout.
	LogTo io.Writer
	// Flags, if not nil, registers the service's own flags. Defaults from
	// env are read before parsing; common may be changed by flags that
	// override a common setting (the poller's -lease-ttl).
	Flags func(fs *flag.FlagSet, env *Env, common *Common)
	// Check, if not nil, validates the service's configuration once the
	// flags are parsed, without connecting; it is the place to apply
	// WithDefaults.
	Check func() error
	// ClientName, if not nil, is called after Check and names the NATS
	// connection instead of "facho-<Name>".
	ClientName func() string
	// DBConns, if not nil, is called after Check: the fewest pooled
	// database connections the service needs (the pool gets at least 12;
	// a pool_max_conns in the URL wins).
	DBConns func() int32
	// Service runs the service until ctx ends and then returns nil.
	Service func(ctx context.Context, deps Deps) error
}

// Deps is what a service gets from its binary.
type Deps struct {
	JS       jetstream.JetStream
	DB       *pgxpool.Pool // nil with NoDatabase
	Box      *secret.Box   // nil without SecretKey
	Log      zerolog.Logger
	Registry *prometheus.Registry
	// Health is served on /healthz; it already checks nats (and postgres
	// when there is a database). A service may add its own checks.
	Health *telemetry.Health
}

// Run parses args and the environment and, unless -check-config is given,
// connects and runs the service with the telemetry server until ctx ends.
// With -check-config it validates everything that can be checked without
// connecting and prints "configuration ok".
func (b Binary) Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	common, env, err := b.parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	checked, err := b.validate(common, env)
	if err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	if common.CheckConfig {
		fmt.Fprintln(stdout, "configuration ok")
		return nil
	}
	logTo := b.LogTo
	if logTo == nil {
		logTo = stdout
	}
	return b.start(ctx, common, checked, telemetry.NewLoggerFormat(logTo, common.LogFormat, b.Name, checked.level))
}

// Main is a binary's func main: it runs run with the process's arguments,
// environment and standard streams until SIGINT or SIGTERM, and exits 1
// with the error on stderr if run fails. -h (flag.ErrHelp: the usage is
// printed already) exits 0.
func Main(command string, run func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", command, err)
		os.Exit(1)
	}
}

// serviceConfig is the configuration convention of Facho's service
// libraries: zero fields take defaults, then one Validate.
type serviceConfig[C any] interface {
	WithDefaults() C
	Validate() error
}

// CheckConfig returns the Check of a service whose Config follows the
// convention: it applies the defaults to *cfg in place, so the service runs
// with what was validated, and validates it.
func CheckConfig[C serviceConfig[C]](cfg *C) func() error {
	return func() error {
		*cfg = (*cfg).WithDefaults()
		return (*cfg).Validate()
	}
}
