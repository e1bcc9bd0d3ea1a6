package servicemain

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// Environment variables of the common flags.
const (
	EnvNATSURL     = "FACHO_NATS_URL"
	EnvHTTPAddr    = "FACHO_HTTP_ADDR"
	EnvLogLevel    = "FACHO_LOG_LEVEL"
	EnvLogFormat   = telemetry.EnvLogFormat
	EnvDatabaseURL = "DATABASE_URL"
	EnvPGDataDir   = "FACHO_PG_DATA_DIR"
	EnvProvision   = "FACHO_PROVISION"
	EnvPprofAddr   = "FACHO_PPROF_ADDR"
)

// Provisioning modes of -provision (FACHO_PROVISION).
const (
	// ProvisionAuto provisions when the service connects anonymously and
	// checks that the streams exist when it connects with an identity
	// (pkg/natsauth: only the admin identity may create or change them).
	ProvisionAuto = "auto"
	ProvisionYes  = "yes"
	ProvisionNo   = "no"
)

// DefaultNATSURL is the NATS server used when neither -nats-url nor
// FACHO_NATS_URL says otherwise.
const DefaultNATSURL = "nats://127.0.0.1:4222"

// Common is what the common flags and the environment say.
type Common struct {
	NATSURL  string
	HTTPAddr string // empty: no telemetry server
	// PprofAddr serves net/http/pprof on a listener of its own (empty:
	// off); never on HTTPAddr, which may be reachable by scrapers.
	PprofAddr string
	LogLevel  string
	// LogFormat is json, console or "" (console on a terminal, else json).
	LogFormat   string
	DatabaseURL string // may hold a password: never echoed
	PGDataDir   string
	// NATS is how the service authenticates to NATS (nkey seed or
	// credentials file, TLS): file paths only, never the secrets.
	NATS natsauth.Client
	// Provision is auto, yes or no: whether the service creates or
	// updates the streams at start-up or only checks they exist.
	Provision   string
	CheckConfig bool
	// Streams come from streams.OptionsFromEnv, the same variables every
	// service reads, so no service provisions the streams differently;
	// a binary's flags may override them for its own provisioning.
	Streams streams.Options
}

// parse registers the common flags, then the binary's, and parses args.
func (b Binary) parse(args []string, getenv func(string) string, stderr io.Writer) (Common, *Env, error) {
	name := "facho-" + b.Name
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := newEnv(getenv)
	var c Common
	fs.StringVar(&c.NATSURL, "nats-url", env.String(EnvNATSURL, DefaultNATSURL), "NATS server URL ("+EnvNATSURL+")")
	c.NATS.RegisterFlags(fs, getenv)
	fs.StringVar(&c.Provision, "provision", env.String(EnvProvision, ProvisionAuto), "create or update the streams at start-up: yes, no (only check they exist), auto (yes when connecting without an identity) ("+EnvProvision+")")
	fs.StringVar(&c.HTTPAddr, "http-addr", env.String(EnvHTTPAddr, b.HTTPAddr), "address of /metrics and /healthz, empty for none ("+EnvHTTPAddr+")")
	fs.StringVar(&c.PprofAddr, "pprof-addr", env.String(EnvPprofAddr, ""), "address of /debug/pprof/ (CPU and heap profiles), empty for none; bind it to localhost ("+EnvPprofAddr+")")
	fs.StringVar(&c.LogLevel, "log-level", env.String(EnvLogLevel, "info"), "log level: trace, debug, info, warn, error ("+EnvLogLevel+")")
	fs.StringVar(&c.LogFormat, "log-format", env.String(EnvLogFormat, ""), "log format: json or console; empty: console on a terminal, json otherwise ("+EnvLogFormat+")")
	fs.BoolVar(&c.CheckConfig, "check-config", false, "validate the configuration and exit")
	if b.Database != NoDatabase {
		fs.StringVar(&c.DatabaseURL, "database-url", env.String(EnvDatabaseURL, ""), "PostgreSQL URL ("+EnvDatabaseURL+")")
	}
	if b.Database == DatabaseOrPrivateCluster {
		fs.StringVar(&c.PGDataDir, "pg-data-dir", env.String(EnvPGDataDir, ""), "start a private PostgreSQL cluster here when the database URL is empty or does not answer ("+EnvPGDataDir+")")
	}
	opts, err := streams.OptionsFromEnv(getenv)
	if err != nil {
		env.fail(fmt.Errorf("stream options: %w", err))
	}
	c.Streams = opts
	if b.Flags != nil {
		b.Flags(fs, env, &c)
	}
	if err := fs.Parse(args); err != nil {
		return c, env, err
	}
	return c, env, nil
}

// checked is what validation derives from the settings.
type checked struct {
	level zerolog.Level
	box   *secret.Box
}

// validate checks everything that can be checked without connecting and
// reports every problem at once.
func (b Binary) validate(c Common, env *Env) (checked, error) {
	var out checked
	errs := append([]error(nil), env.errs...)
	level, err := zerolog.ParseLevel(c.LogLevel)
	if err != nil {
		errs = append(errs, fmt.Errorf("log level: %w", err))
	}
	out.level = level
	if _, err := telemetry.ParseLogFormat(c.LogFormat); err != nil {
		errs = append(errs, err)
	}
	if c.NATSURL == "" {
		errs = append(errs, errors.New("nats url is empty"))
	}
	if err := c.NATS.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch c.Provision {
	case ProvisionAuto, ProvisionYes, ProvisionNo:
	default:
		errs = append(errs, fmt.Errorf("provision %q: want auto, yes or no", c.Provision))
	}
	if err := c.Streams.WithDefaults().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("stream options: %w", err))
	}
	if err := b.validateDatabase(c); err != nil {
		errs = append(errs, err)
	}
	if b.SecretKey {
		// FACHO_SECRET_KEY, plus FACHO_SECRET_KEY_OLD during a rotation;
		// the errors never quote a key.
		var err error
		out.box, err = secret.BoxFromEnv(env.getenv)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if b.Check != nil {
		if err := b.Check(); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

func (b Binary) validateDatabase(c Common) error {
	switch {
	case b.Database == NoDatabase:
		return nil
	case c.DatabaseURL == "" && b.Database == DatabaseOrPrivateCluster:
		if c.PGDataDir == "" {
			return fmt.Errorf("%s or %s is required", EnvDatabaseURL, EnvPGDataDir)
		}
		return nil
	case c.DatabaseURL == "":
		return fmt.Errorf("%s is required", EnvDatabaseURL)
	}
	if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
		// The URL may hold a password: neither it nor the parse error is echoed.
		return fmt.Errorf("%s does not parse", EnvDatabaseURL)
	}
	return nil
}
