// Package devstack runs the whole of Facho in one process: an embedded
// JetStream, Postgres (DATABASE_URL or a private cluster), migrations, the
// OLT simulator and every service. The one-command local run and the
// end-to-end tests both stand on it.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/facho-olt/facho/pkg/dbmigrate"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/natsembed"
	"github.com/facho-olt/facho/pkg/pgboot"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/services/alerter"
	"github.com/facho-olt/facho/services/api"
	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/services/auditor"
	"github.com/facho-olt/facho/services/availability"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/services/poller"
	"github.com/facho-olt/facho/services/projector"
	"github.com/facho-olt/facho/services/trapd"
	"github.com/facho-olt/facho/streams"
)

// Config of the whole local system.
type Config struct {
	// DataDir holds NATS storage, the private Postgres cluster, the secret
	// key and the coordinator log file (git-ignored .facho/ in the repo).
	// Start locks it (LockDataDir): one stack per folder.
	DataDir string
	// NATSPort of the embedded server (-1: any free port). Default 14222,
	// so it never collides with a system nats-server on 4222.
	NATSPort int
	// DatabaseURL of an existing Postgres; empty or unreachable starts a
	// private cluster in DataDir/pg on PGPort.
	DatabaseURL string
	PGPort      int
	// APIAddr of the API (default 127.0.0.1:8080); MetricsAddr is the
	// host:port base of the other services' /metrics and /healthz: planner,
	// poller, projector, auditor, availability on consecutive ports (port 0:
	// any free).
	APIAddr     string
	MetricsHost string
	MetricsPort int
	// SimControlAddr serves the simulator's control endpoint ("" = off).
	SimControlAddr string
	// APIToken is the bearer token the API accepts.
	APIToken string
	// SecretKey is the base64 key sealing communities; empty = read or
	// create DataDir/secret.key.
	SecretKey string
	// Pollers is how many poller instances run (each its own lease holder).
	Pollers int
	// Streams sizes the streams (lease TTL, ack wait).
	Streams   streams.Options
	Planner   planner.Config
	Poller    poller.Config
	Projector projector.Config
	Auditor   auditor.Config
	// Availability probes the OLTs (sysUpTime) and publishes their
	// availability.
	Availability availability.Config
	// Fleet is the simulated OLTs (none: no simulator).
	Fleet oltsim.FleetConfig
	// Alerter evaluates the alert rules (its /metrics on MetricsPort +
	// Pollers + 4); AlertmanagerURLs in it point it at an Alertmanager.
	Alerter alerter.Config
	// ProfilesDir is the API's folder of vendor profiles added to the
	// built-in ones (FACHO_PROFILES_DIR, -profiles-dir); empty: built-in
	// only.
	ProfilesDir string
	// Trapd receives the OLTs' SNMP traps (its /metrics on MetricsPort +
	// Pollers + 5); Trapd.Addr is where (default 127.0.0.1:0, a free
	// port; `facho dev` uses DevTrapAddr).
	Trapd trapd.Config
}

// DevTrapAddr is where `facho dev` receives traps by default: a high
// port, no privilege needed.
const DevTrapAddr = "127.0.0.1:1162"

// DevHistoryRetention is how long `facho dev` keeps onu_history rows.
const DevHistoryRetention = 24 * time.Hour

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.DataDir == "" {
		c.DataDir = ".facho"
	}
	if c.NATSPort == 0 {
		c.NATSPort = natsembed.DefaultPort
	}
	if c.PGPort == 0 {
		c.PGPort = 15432
	}
	if c.APIAddr == "" {
		c.APIAddr = "127.0.0.1:8080"
	}
	if c.MetricsHost == "" {
		c.MetricsHost = "127.0.0.1"
	}
	if c.Pollers == 0 {
		c.Pollers = 2
	}
	if c.Projector.HistoryRetention == 0 {
		// A laptop's disk stays bounded: onu_history is kept as long as
		// the dev streams keep the events (24h), not the production year
		// (0 here is "unset", not "forever").
		c.Projector.HistoryRetention = DevHistoryRetention
	}
	if c.Trapd.Addr == "" {
		c.Trapd.Addr = "127.0.0.1:0"
	}
	if c.Auditor.LogFile == "" {
		c.Auditor.LogFile = filepath.Join(c.DataDir, "logs", "coordinator", "main.log")
	}
	return c
}

// Validate checks the config after defaults.
func (c Config) Validate() error {
	var errs []error
	if len(c.APIToken) < 16 {
		errs = append(errs, errors.New("api token: at least 16 characters"))
	}
	if c.Pollers < 1 {
		errs = append(errs, fmt.Errorf("pollers %d: want at least 1", c.Pollers))
	}
	if err := c.Streams.WithDefaults().Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.PGPort < 1 || c.PGPort > 65535 {
		errs = append(errs, fmt.Errorf("postgres port %d: want 1..65535", c.PGPort))
	}
	if c.NATSPort < -1 || c.NATSPort > 65535 {
		errs = append(errs, fmt.Errorf("nats port %d: want 1..65535 (-1: any free port)", c.NATSPort))
	}
	if err := c.Alerter.WithDefaults().Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Stack is a running system.
type Stack struct {
	cfg  Config
	log  zerolog.Logger
	nats *natsembed.Server
	// NC and JS are the admin identity's connection (it provisioned the
	// streams); every service has a connection of its own identity.
	NC *nats.Conn
	JS jetstream.JetStream
	// NATSURL is the embedded server's client URL; KeysDir holds the seed
	// of every NATS identity (<DataDir>/nkeys/<name>.nk, see
	// pkg/natsauth): anonymous connections are refused.
	NATSURL string
	KeysDir string
	conns   []*nats.Conn
	DB      *pgxpool.Pool
	DBURL   string
	Fleet   *oltsim.Fleet
	Box     *secret.Box
	APIURL  string
	Metrics map[string]string // service -> base URL of /metrics and /healthz
	// TrapAddr is where the trap receiver listens (UDP host:port).
	TrapAddr string

	// FirstAdmin and FirstAdminPassword are the console's first admin,
	// created when the database had no user (the password is printed once
	// by facho dev, stored only as its argon2id hash); empty otherwise.
	FirstAdmin, FirstAdminPassword string

	pgStop func() error
	unlock func() // releases the data folder (LockDataDir)
	// health checks shared by every service's /healthz: they answer
	// "database unavailable" and "nats unavailable" and log the detail
	// once per change, not once per service and probe.
	dbCheck, natsCheck func(context.Context) error
	cancel             context.CancelFunc
	group              *errgroup.Group
	stopOnce           sync.Once
	stopErr            error
}

// Start brings everything up and returns once the API answers. Services run
// until ctx ends or Stop is called.
func Start(ctx context.Context, cfg Config, log zerolog.Logger) (_ *Stack, err error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("devstack config: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	// First of all: a second stack on this folder must not touch it.
	unlock, err := LockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	s := &Stack{cfg: cfg, log: log, Metrics: map[string]string{}, unlock: unlock}
	defer func() {
		if err != nil {
			s.cleanup()
		}
	}()
	if err := checkPorts(cfg); err != nil {
		return nil, err
	}

	if s.Box, err = openBox(cfg); err != nil {
		return nil, err
	}
	if err := s.startNATS(ctx); err != nil {
		return nil, err
	}
	if err := s.startPostgres(ctx); err != nil {
		return nil, err
	}
	if s.FirstAdmin, s.FirstAdminPassword, err = EnsureFirstAdmin(ctx, &auth.Store{DB: s.DB}); err != nil {
		return nil, err
	}
	if len(cfg.Fleet.OLTs) > 0 {
		if s.Fleet, err = oltsim.Start(ctx, cfg.Fleet, log.With().Str(telemetry.KeyService, "oltsim").Logger()); err != nil {
			return nil, fmt.Errorf("start simulator: %w", err)
		}
	}
	hlog := log.With().Str(telemetry.KeyService, "devstack").Logger()
	s.dbCheck = telemetry.PublicCheck(hlog, "postgres", "database unavailable", s.DB.Ping)
	s.natsCheck = telemetry.PublicCheck(hlog, "nats", "nats unavailable", func(context.Context) error {
		if !s.NC.IsConnected() {
			return fmt.Errorf("nats connection %s", s.NC.Status())
		}
		return nil
	})
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.group, runCtx = errgroup.WithContext(runCtx)
	if err := s.startServices(runCtx); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, s.APIURL+"/healthz", 30*time.Second); err != nil {
		return nil, fmt.Errorf("api not up: %w", err)
	}
	return s, nil
}

func openBox(cfg Config) (*secret.Box, error) {
	keyText := cfg.SecretKey
	if keyText == "" {
		path := filepath.Join(cfg.DataDir, "secret.key")
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			keyText = string(b)
		case errors.Is(err, os.ErrNotExist):
			if keyText, err = secret.NewKey(); err != nil {
				return nil, err
			}
			if err := os.WriteFile(path, []byte(keyText+"\n"), 0o600); err != nil {
				return nil, fmt.Errorf("write secret key: %w", err)
			}
		default:
			return nil, fmt.Errorf("read secret key: %w", err)
		}
	}
	key, err := secret.ParseKey(keyText)
	if err != nil {
		return nil, err
	}
	return secret.NewBox(key)
}

func (s *Stack) startNATS(ctx context.Context) error {
	// One identity per service, seeds generated once into the data
	// folder like the secret key.
	s.KeysDir = filepath.Join(s.cfg.DataDir, "nkeys")
	keys, err := natsauth.EnsureKeys(s.KeysDir)
	if err != nil {
		return err
	}
	users, err := natsauth.ServerUsers(keys)
	if err != nil {
		return err
	}
	srv, err := natsembed.Start(natsembed.Config{Port: s.cfg.NATSPort, StoreDir: filepath.Join(s.cfg.DataDir, "nats"), Users: users})
	if err != nil {
		return err
	}
	s.nats, s.NATSURL = srv, srv.URL()
	if s.NC, s.JS, err = s.Connect(natsauth.Admin, "facho-devstack"); err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return streams.Provision(pctx, s.JS, s.cfg.Streams)
}

// NATSClient is how identity connects to the embedded server.
func (s *Stack) NATSClient(identity string) natsauth.Client {
	return natsauth.Client{NkeySeedFile: natsauth.SeedFile(s.KeysDir, identity)}
}

// Connect connects to the embedded server as identity under the client
// name; the stack closes the connection when it stops.
func (s *Stack) Connect(identity, name string) (*nats.Conn, jetstream.JetStream, error) {
	inbox := identity
	if identity == natsauth.Admin {
		inbox = "" // the admin may subscribe anywhere
	}
	opts, err := s.NATSClient(identity).Options(inbox)
	if err != nil {
		return nil, nil, err
	}
	nc, err := nats.Connect(s.NATSURL, append(opts, nats.Name(name), nats.MaxReconnects(-1),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			s.log.Error().Err(err).Str(telemetry.KeyService, name).Msg("nats async error")
		}))...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect nats as %s: %w", identity, err)
	}
	s.conns = append(s.conns, nc)
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}

func (s *Stack) startPostgres(ctx context.Context) error {
	url, stop, err := pgboot.Ensure(ctx, pgboot.Config{
		DatabaseURL: s.cfg.DatabaseURL,
		DataDir:     filepath.Join(s.cfg.DataDir, "pg"),
		Port:        s.cfg.PGPort,
		// The data folder is locked (LockDataDir): a cluster running in it
		// is a leftover of a killed facho dev, ours to stop at the end.
		Owned: true,
		Log:   s.log.With().Str(telemetry.KeyService, "pgboot").Logger(),
	})
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	s.DBURL, s.pgStop = url, stop
	if s.DB, err = pgxpool.New(ctx, url); err != nil {
		return fmt.Errorf("postgres pool: %w", err)
	}
	if err := dbmigrate.Apply(ctx, s.DB, s.log.With().Str(telemetry.KeyService, "dbmigrate").Logger()); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// serviceLog and a registry per service, as if each ran on its own.
func (s *Stack) serve(ctx context.Context, name string, port int) (*prometheus.Registry, zerolog.Logger, error) {
	reg := telemetry.NewRegistry()
	log := s.log.With().Str(telemetry.KeyService, name).Logger()
	health := telemetry.NewHealth()
	health.Add("nats", s.natsCheck)
	health.Add("postgres", s.dbCheck)
	mux := telemetry.Mux(reg, health)
	addr := net.JoinHostPort(s.cfg.MetricsHost, fmt.Sprint(port))
	bound := make(chan net.Addr, 1)
	s.group.Go(func() error {
		return telemetry.Serve(ctx, addr, mux, func(a net.Addr) { bound <- a })
	})
	select {
	case a := <-bound:
		s.Metrics[name] = "http://" + a.String()
	case <-time.After(5 * time.Second):
		return nil, log, fmt.Errorf("%s telemetry did not start on %s", name, addr)
	}
	return reg, log, nil
}

func (s *Stack) port(i int) int {
	if s.cfg.MetricsPort == 0 {
		return 0
	}
	return s.cfg.MetricsPort + i
}

// goService runs one service, connected to NATS as identity, beside its
// own telemetry server.
func (s *Stack) goService(ctx context.Context, name, identity string, port int, run func(js jetstream.JetStream, reg *prometheus.Registry, log zerolog.Logger) error) error {
	_, js, err := s.Connect(identity, "facho-"+name)
	if err != nil {
		return err
	}
	reg, log, err := s.serve(ctx, name, port)
	if err != nil {
		return err
	}
	s.group.Go(func() error { return wrap(name, run(js, reg, log)) })
	return nil
}

func (s *Stack) startServices(ctx context.Context) error {
	if err := s.goService(ctx, "planner", natsauth.Planner, s.port(0), func(js jetstream.JetStream, reg *prometheus.Registry, log zerolog.Logger) error {
		return planner.Run(ctx, s.cfg.Planner, planner.Deps{JS: js, Log: log, Registry: reg})
	}); err != nil {
		return err
	}
	for i := 0; i < s.cfg.Pollers; i++ {
		pcfg := s.cfg.Poller
		pcfg.PollerID = fmt.Sprintf("poller-%d", i+1)
		if err := s.goService(ctx, pcfg.PollerID, natsauth.Poller, s.port(1+i), func(js jetstream.JetStream, reg *prometheus.Registry, log zerolog.Logger) error {
			return poller.Run(ctx, pcfg, poller.Deps{JS: js, Log: log, Registry: reg, Box: s.Box})
		}); err != nil {
			return err
		}
	}
	if err := s.goService(ctx, "projector", natsauth.Projector, s.port(1+s.cfg.Pollers), func(js jetstream.JetStream, reg *prometheus.Registry, log zerolog.Logger) error {
		return projector.Run(ctx, s.cfg.Projector, projector.Deps{JS: js, DB: s.DB, Log: log, Registry: reg})
	}); err != nil {
		return err
	}
	if err := s.goService(ctx, "auditor", natsauth.Auditor, s.port(2+s.cfg.Pollers), func(js jetstream.JetStream, reg *prometheus.Registry, log zerolog.Logger) error {
		return auditor.Run(ctx, s.cfg.Auditor, auditor.Deps{JS: js, DB: s.DB, Log: log, Registry: reg, Box: s.Box})
	}); err != nil {
		return err
	}
	if err := s.goService(ctx, "alerter", natsauth.Alerter, s.port(4+s.cfg.Pollers), func(js jetstream.JetStream, reg *prometheus.Registry, log zerolog.Logger) error {
		return alerter.Run(ctx, s.cfg.Alerter, alerter.Deps{JS: js, DB: s.DB, Log: log, Registry: reg, Box: s.Box})
	}); err != nil {
		return err
	}
	if err := s.goService(ctx, "availability", natsauth.Availability, s.port(3+s.cfg.Pollers), func(js jetstream.JetStream, reg *prometheus.Registry, log zerolog.Logger) error {
		return availability.Run(ctx, s.cfg.Availability, availability.Deps{JS: js, Box: s.Box, Log: log, Registry: reg})
	}); err != nil {
		return err
	}
	// The trap receiver: its address (a free port with :0) once open.
	trapBound := make(chan net.Addr, 1)
	if err := s.goService(ctx, "trapd", natsauth.Trapd, s.port(5+s.cfg.Pollers), func(js jetstream.JetStream, reg *prometheus.Registry, log zerolog.Logger) error {
		return trapd.Run(ctx, s.cfg.Trapd, trapd.Deps{JS: js, Box: s.Box, Log: log, Registry: reg, Listening: func(a net.Addr) { trapBound <- a }})
	}); err != nil {
		return err
	}
	select {
	case a := <-trapBound:
		s.TrapAddr = a.String()
	case <-ctx.Done():
		return fmt.Errorf("trapd: %w", s.group.Wait())
	case <-time.After(30 * time.Second):
		return errors.New("trapd did not open its socket")
	}

	if s.Fleet != nil && s.cfg.SimControlAddr != "" {
		s.group.Go(func() error {
			return wrap("oltsim control", telemetry.Serve(ctx, s.cfg.SimControlAddr, s.Fleet.Handler(), nil))
		})
	}

	apiReg := telemetry.NewRegistry()
	_, apiJS, err := s.Connect(natsauth.API, "facho-api")
	if err != nil {
		return err
	}
	bound := make(chan net.Addr, 1)
	acfg := api.Config{Addr: s.cfg.APIAddr, Tokens: []string{s.cfg.APIToken}, ProfilesDir: s.cfg.ProfilesDir}
	s.group.Go(func() error {
		return wrap("api", api.Run(ctx, acfg, api.Deps{
			JS: apiJS, DB: s.DB, Box: s.Box, Registry: apiReg, Gatherer: apiReg,
			Log:   s.log.With().Str(telemetry.KeyService, "api").Logger(),
			Ready: func(a net.Addr) { bound <- a },
		}))
	})
	select {
	case a := <-bound:
		s.APIURL = "http://" + a.String()
	case <-ctx.Done():
		return fmt.Errorf("api: %w", s.group.Wait())
	case <-time.After(10 * time.Second):
		return errors.New("api did not start")
	}
	return nil
}

func wrap(name string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func waitHTTP(ctx context.Context, url string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", url, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Wait blocks until the services stop (ctx ended or one failed).
func (s *Stack) Wait() error {
	err := s.group.Wait()
	s.cleanup()
	return err
}

// Stop stops every service and releases everything.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() {
		if s.cancel != nil {
			s.cancel()
		}
		if s.group != nil {
			s.stopErr = s.group.Wait()
		}
		s.cleanup()
	})
	return s.stopErr
}

func (s *Stack) cleanup() {
	if s.Fleet != nil {
		_ = s.Fleet.Close()
		s.Fleet = nil
	}
	if s.DB != nil {
		s.DB.Close()
		s.DB = nil
	}
	for _, nc := range s.conns {
		nc.Close()
	}
	s.conns, s.NC = nil, nil
	if s.nats != nil {
		s.nats.Shutdown()
		s.nats = nil
	}
	if s.pgStop != nil {
		if err := s.pgStop(); err != nil {
			s.log.Warn().Err(err).Msg("stop postgres")
		}
		s.pgStop = nil
	}
	// Last: the folder is free once nothing uses it any more.
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
}
