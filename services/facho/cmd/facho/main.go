// Command facho is Facho's operator CLI:
//
//	facho dev                 run the whole system locally (one command)
//	facho keygen              print a new FACHO_SECRET_KEY
//	facho streams provision   create or update streams, consumers and KV buckets
//	facho streams catalogue   print the event catalogue (streams/CATALOGUE.md)
//	facho nats keys DIR       write NATS identities' seeds and the server's authorization block
//	facho replay              print a stream's events as JSON lines
//	facho rebuild MODEL       rebuild a read model from the streams (shadow, compare, swap)
//	facho export WHAT         export onu-data, onu-history or varbinds as CSV or parquet
//	facho tail                follow live ONU changes, executions and notifications
//	facho bench               measure the whole pipeline against a simulated fleet
//	facho version             print the version, git commit and build date
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgboot"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/services/alerter"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/services/trapd"
	"github.com/facho-olt/facho/streams"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "facho:", err)
		os.Exit(1)
	}
}

const usage = `usage: facho <command> [flags]

commands:
  dev                  run the whole system locally: embedded NATS, Postgres, simulator, all services
  keygen               print a new FACHO_SECRET_KEY (base64 of 32 random bytes)
  streams provision    create or update every stream, consumer and KV bucket (idempotent)
  streams catalogue    print the event catalogue
  nats keys DIR        write an nkey seed per NATS identity and the nats-server authorization block
  replay               print a stream's events as JSON lines (--stream S --from SEQ|TIME [--to ...] [--subject F])
  rebuild MODEL        rebuild a read model from the streams into a shadow, compare, swap (--dry-run: report only)
  export WHAT          onu-data, onu-history or varbinds as CSV or parquet (--format csv|parquet --out FILE
                       [--olt X]; onu-history and varbinds: --from, --to)
  users add NAME       add a console/API user (--role admin|operator|viewer; password from FACHO_USER_PASSWORD or stdin)
  users list           list the users
  keys rotate          re-seal every OLT community (and webhook secret) under FACHO_SECRET_KEY, opening
                       with FACHO_SECRET_KEY_OLD: no downtime (see docs/operations.md)
  tail                 follow live ONU changes, executions, notifications ([--olt X] [--kind K] [--json])
  profiles             vendor profiles: list | show ID | check FILE [HOST[:PORT]] (validate; walk an agent and
                       print the ONUs Facho would store)
  bench                the whole pipeline against a simulated fleet, with baselines (-olts N -shape SxPxO -cycles K -json FILE)
  version              print the version, git commit and build date ([-json])
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command")
	}
	// -h on any command or subcommand (or "help COMMAND") prints its help
	// and succeeds, before the command checks anything else.
	if path, ok := helpPath(args); ok {
		if path == "" {
			fmt.Fprint(stdout, usage)
			return nil
		}
		return printHelp(ctx, path, getenv, stdout, stderr)
	}
	return dispatch(ctx, args, getenv, stdout, stderr)
}

// dispatch runs the command args name.
func dispatch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	switch args[0] {
	case "dev":
		return runDev(ctx, args[1:], getenv, stdout, stderr)
	case "keygen":
		k, err := secret.NewKey()
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, k)
		return nil
	case "nats":
		return runNATS(args[1:], stdout, stderr)
	case "streams":
		if len(args) < 2 {
			return errors.New("streams: want provision or catalogue")
		}
		switch args[1] {
		case "catalogue":
			_, err := stdout.Write(streams.RenderCatalogue())
			return err
		case "provision":
			return runProvision(ctx, args[2:], getenv, stdout)
		}
		return fmt.Errorf("streams: unknown command %q", args[1])
	case "replay":
		return runReplay(ctx, args[1:], getenv, stdout, stderr)
	case "rebuild":
		return runRebuild(ctx, args[1:], getenv, stdout, stderr)
	case "export":
		return runExport(ctx, args[1:], getenv, stdout, stderr)
	case "tail":
		return runTail(ctx, args[1:], getenv, stdout, stderr)
	case "users":
		return runUsers(ctx, args[1:], getenv, os.Stdin, stdout)
	case "keys":
		return runKeys(ctx, args[1:], getenv, stdout)
	case "bench":
		return runBench(ctx, args[1:], getenv, stdout, stderr)
	case "profiles":
		return runProfiles(ctx, args[1:], getenv, stdout)
	case "version":
		return runVersion(args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

func runProvision(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("streams provision", flag.ContinueOnError)
	fs.SetOutput(stdout)
	url := fs.String("nats", envOr(getenv, "FACHO_NATS_URL", "nats://127.0.0.1:4222"), "NATS URL (FACHO_NATS_URL)")
	// With identities on the server, this is the admin's seed.
	var client natsauth.Client
	client.RegisterFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // usage printed; -h is not a failure
		}
		return err
	}
	opts, err := streams.OptionsFromEnv(getenv)
	if err != nil {
		return fmt.Errorf("stream options: %w", err)
	}
	nc, js, err := connectCLI(*url, client)
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := streams.Provision(ctx, js, opts); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "streams, consumers and KV buckets provisioned")
	return nil
}

// DefaultDevToken is the dev command's API token when FACHO_API_TOKEN is
// unset. Local use only; production services refuse to start without
// tokens of their own.
const DefaultDevToken = "facho-dev-token-change-me"

func runDev(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", ".facho", "data folder (git-ignored): NATS storage, private Postgres, secret key, logs")
	apiAddr := fs.String("api", envOr(getenv, "FACHO_API_ADDR", "127.0.0.1:8080"), "API listen address")
	natsPort := fs.Int("nats-port", 14222, "embedded NATS client port (not 4222: never collides with a system nats-server)")
	pgPort := fs.Int("pg-port", pgboot.DefaultPort, "port of the private Postgres started in the data folder when DATABASE_URL is unset or does not answer (not 5432: never collides with a system Postgres)")
	metricsPort := fs.Int("metrics-port", 9101, "first port of the services' /metrics and /healthz (planner, pollers, projector, auditor, availability, alerter, trapd)")
	olts := fs.Int("olts", 3, "simulated Huawei OLTs")
	shapeText := fs.String("shape", "1x2x16", "simulated OLT shape: SLOTSxPORTSxONUS")
	simPort := fs.Int("sim-port", 16101, "UDP port of the first simulated OLT (one port each, on 127.0.0.1)")
	simControl := fs.String("sim-control", "127.0.0.1:8161", "simulator control endpoint (faults, record)")
	trapAddr := fs.String("trap-addr", devstack.DevTrapAddr, "UDP address of the trap receiver (the simulated OLTs send their traps there)")
	interval := fs.Int("interval", 60, "interval of the demo OLTs' jobs (the profile's discovery and optical GET), seconds")
	firstRun := fs.Duration("first-run", 3*time.Second, "delay before a newly planned node first runs (production default 60s)")
	pollers := fs.Int("pollers", 2, "poller instances")
	checkConfig := fs.Bool("check-config", false, "validate the configuration and exit")
	alertmanagerURL := fs.String("alertmanager-url", getenv("FACHO_ALERTMANAGER_URL"), "Alertmanager base URL(s) the alerter posts to, comma-separated (FACHO_ALERTMANAGER_URL; default none)")
	alertRules := fs.String("alert-rules", getenv("FACHO_ALERT_RULES"), "alert rules YAML file (FACHO_ALERT_RULES; default: the shipped thresholds)")
	profilesDir := fs.String("profiles-dir", getenv("FACHO_PROFILES_DIR"), "folder of vendor profiles (*.yaml) added to the built-in ones (FACHO_PROFILES_DIR; default none)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: facho dev [flags]\n\nflags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), `
environment:
  DATABASE_URL             Postgres to use; unset or not answering: a private cluster in <data>/pg on -pg-port
  FACHO_API_TOKEN          API bearer token (default %s, local use only)
  FACHO_SECRET_KEY         key sealing SNMP communities (default: <data>/secret.key, created once)
  FACHO_LOG_LEVEL          trace, debug, info (default), warn, error
  FACHO_LOG_FORMAT         json or console (default: console on a terminal, json otherwise)
  %s   raw varbinds kept (dev default %s)
  %s   NodeDue kept (dev default %s)
  %s     execution, ONU, audit and dead-letter events kept (dev default %s)
  %s   cap of each stream but the configuration stream (dev default %s)
`, DefaultDevToken, streams.EnvVarbindsMaxAge, devVarbindsMaxAge, streams.EnvScheduleMaxAge, devScheduleMaxAge,
			streams.EnvEventsMaxAge, devEventsMaxAge, streams.EnvMaxBytes, devStreamMaxBytes)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // usage printed; -h is not a failure
		}
		return err
	}
	shape, err := oltsim.ParseShape(*shapeText)
	if err != nil {
		return err
	}
	streamOpts, err := streams.OptionsFromEnv(devStreamEnv(getenv))
	if err != nil {
		return fmt.Errorf("stream options: %w", err)
	}
	token := envOr(getenv, "FACHO_API_TOKEN", DefaultDevToken)
	community := envOr(getenv, "FACHO_DEMO_COMMUNITY", "public")
	// Each service tags its own lines; the base logger carries no service
	// key. FACHO_LOG_LEVEL and FACHO_LOG_FORMAT as in every service.
	log, err := telemetry.LoggerFromEnv(getenv, stderr, "", zerolog.InfoLevel)
	if err != nil {
		return err
	}

	cfg := devstack.Config{
		DataDir:        *dataDir,
		NATSPort:       *natsPort,
		DatabaseURL:    getenv("DATABASE_URL"),
		PGPort:         *pgPort,
		Streams:        streamOpts,
		APIAddr:        *apiAddr,
		MetricsPort:    *metricsPort,
		SimControlAddr: *simControl,
		Trapd:          trapd.Config{Addr: *trapAddr},
		APIToken:       token,
		SecretKey:      getenv(secret.EnvKey),
		Pollers:        *pollers,
		// A handful of demo OLTs: no spreading of first runs, the demo's
		// first discovery comes FirstRunDelay after start.
		Planner:     planner.Config{FirstRunDelay: *firstRun, FirstRunSpread: -1},
		ProfilesDir: *profilesDir,
	}
	cfg.Alerter.AlertmanagerURLs = alerter.ParseURLs(*alertmanagerURL)
	if cfg.Alerter.Rules, err = alerter.LoadRules(*alertRules); err != nil {
		return err
	}
	for i := 0; i < *olts; i++ {
		cfg.Fleet.OLTs = append(cfg.Fleet.OLTs, oltsim.OLTConfig{
			Name: fmt.Sprintf("olt-%d", i+1), Listen: fmt.Sprintf("127.0.0.1:%d", *simPort+i),
			Community: community, Profile: "huawei-ma5800", Shape: shape, Seed: int64(i + 1),
		})
	}
	if err := cfg.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if *checkConfig {
		fmt.Fprintln(stdout, "configuration ok")
		return nil
	}

	stack, err := devstack.Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	client := &devstack.Client{BaseURL: stack.APIURL, Token: token}
	// The demo OLTs are configured from the vendor profile, as an
	// operator adds real ones. On a restart on the same data folder they
	// exist and the planner resumes their persisted schedule.
	demo, err := devstack.ConfigureProfile(ctx, client, stack.Fleet.OLTs(), devstack.DemoProfile, devstack.DemoOptions{Community: community, IntervalSeconds: *interval})
	if err != nil {
		_ = stack.Stop()
		return fmt.Errorf("configure demo: %w", err)
	}
	ids, restarted := demo.OLTs, demo.Existing
	info := devInfo{PID: os.Getpid(), NATSURL: stack.NATSURL, KeysDir: stack.KeysDir, APIURL: stack.APIURL, DatabaseURL: stack.DBURL}
	if err := writeDevInfo(*dataDir, info); err != nil {
		_ = stack.Stop()
		return err
	}
	defer os.Remove(filepath.Join(*dataDir, devInfoFile))
	b := devBanner{
		Cmd: selfCommand(), APIURL: stack.APIURL, Token: token, NATSURL: stack.NATSURL, KeysDir: stack.KeysDir,
		DBURL: redactURL(stack.DBURL), Retention: retention(streamOpts), Metrics: metricsList(stack.Metrics),
		OLTs: *olts, Shape: *shapeText, SimPort: *simPort, SimControl: *simControl, IDs: ids, TrapAddr: stack.TrapAddr,
		Interval: *interval, FirstRun: *firstRun, Restarted: restarted, Profile: devstack.DemoProfile, Jobs: demo.Jobs,
		FirstAdmin: stack.FirstAdmin, FirstAdminPassword: stack.FirstAdminPassword,
		DataDir: *dataDir,
	}
	// Printed once, after the start-up logs and in one write, so the
	// password is inside the block rather than among the log lines.
	fmt.Fprint(stdout, b.String())
	err = stack.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Dev retention: the defaults of `facho dev` for the stream variables it
// reads like every service (streams.OptionsFromEnv), shorter than the
// production ones so a laptop's disk stays bounded: raw varbinds and
// NodeDue an hour, the other event streams a day, and each stream but the
// configuration stream at most 256 MiB (oldest dropped first).
const (
	devVarbindsMaxAge = "1h"
	devScheduleMaxAge = "1h"
	devEventsMaxAge   = "24h"
	devStreamMaxBytes = "256MiB"
)

// devStreamEnv is getenv with the dev retention defaults for the stream
// variables that are unset.
func devStreamEnv(getenv func(string) string) func(string) string {
	return func(key string) string {
		if v := getenv(key); v != "" {
			return v
		}
		switch key {
		case streams.EnvVarbindsMaxAge:
			return devVarbindsMaxAge
		case streams.EnvScheduleMaxAge:
			return devScheduleMaxAge
		case streams.EnvEventsMaxAge:
			return devEventsMaxAge
		case streams.EnvMaxBytes:
			return devStreamMaxBytes
		}
		return ""
	}
}

// retention says what the streams keep, as the banner shows it.
func retention(o streams.Options) string {
	s := fmt.Sprintf("varbinds %s, NodeDue %s, events %s", shortDuration(o.VarbindsMaxAge), shortDuration(o.ScheduleMaxAge), shortDuration(o.EventsMaxAge))
	if o.MaxBytes > 0 {
		s += fmt.Sprintf(", at most %d MiB per stream", o.MaxBytes>>20)
	}
	// Per-stream overrides (<STREAM>_MAX_AGE, _MAX_BYTES), sorted.
	names := make([]string, 0, len(o.Streams))
	for name := range o.Streams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		l := o.Streams[name]
		switch {
		case l.MaxAge > 0 && l.MaxBytes > 0:
			s += fmt.Sprintf(", %s %s and %d MiB", name, shortDuration(l.MaxAge), l.MaxBytes>>20)
		case l.MaxAge > 0:
			s += fmt.Sprintf(", %s %s", name, shortDuration(l.MaxAge))
		case l.MaxBytes > 0:
			s += fmt.Sprintf(", %s %d MiB", name, l.MaxBytes>>20)
		}
	}
	if o.Compression == streams.CompressionNone {
		s += ", uncompressed"
	}
	return s + "; configuration kept"
}

// shortDuration prints 1h rather than 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// metricsList prints service -> /metrics base URL in a stable order.
func metricsList(m map[string]string) string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + " " + m[name] + "/metrics"
	}
	return strings.Join(parts, ", ")
}

// redactURL hides a password in a database URL before printing it.
func redactURL(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 {
		return u
	}
	creds := u[scheme+3 : at]
	if i := strings.Index(creds, ":"); i >= 0 {
		return u[:scheme+3] + creds[:i] + ":xxxxx" + u[at:]
	}
	return u
}
