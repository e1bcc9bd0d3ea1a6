// Package bench is `facho bench`: it runs the whole pipeline as production
// does (the service binaries as processes, each with its own NATS
// identity, on an embedded JetStream and Postgres) against a simulated
// fleet with a discovery and an optical GET job, measures it end to end,
// and in the same run measures baselines (gosnmp BulkWalk, net-snmp
// snmpbulkwalk, Prometheus snmp_exporter) on the same simulated tables.
// Figures are reported, never asserted.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/natsembed"
	"github.com/facho-olt/facho/pkg/pgboot"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// Config of one bench run.
type Config struct {
	OLTs  int
	Shape oltsim.Shape
	// Cycles is how many discovery+GET cycles are measured; Interval is
	// the jobs' interval (production: 5 minutes).
	Cycles   int
	Interval time.Duration
	Pollers  int
	Workers  int
	// MaxRepetitions of the pollers' walks and of the same-setting
	// baselines (the poller's default 25).
	MaxRepetitions int
	// ProjectorWorkers is FACHO_PROJECTOR_WORKERS (0: the projector's
	// default).
	ProjectorWorkers int
	// Projectors is how many projector replicas run (0: 1), and
	// ProjectorPartitions their FACHO_PROJECTOR_PARTITIONS (0: the
	// projector's default, 1: one replica leads, the others stand by).
	Projectors, ProjectorPartitions int
	// FirstRunSpread is the planner's -first-run-spread. Negative (the
	// bench's default): the fleet, configured within seconds, falls due
	// together, the worst case, which measures capacity; positive: first
	// runs are spread over the interval as in production (the lateness an
	// operator sees).
	FirstRunSpread time.Duration
	// BurstEveryCycle makes every cycle fall due together, not only the
	// first: when a cycle is walked and committed, the bench disables and
	// enables the two jobs, so every node starts over and runs now. Without
	// it the runs of cycles 2..K are as spread as the previous cycle's ends
	// (next run = end + interval, seed 003) and a steady cycle measures the
	// load the fleet offers, not the pipeline's capacity.
	BurstEveryCycle bool
	// RxDriftDBm, when positive, makes the cycles changes-heavy: the
	// simulator moves every online ONU's Rx by a random amount of up to
	// this many dB twice an interval (every 5 s with BurstEveryCycle), so
	// nearly every ONU's Rx differs at each reading and each reading
	// writes its row and its history, as a fleet whose optics wobble
	// does. 0: the tables stand still after the first discovery.
	RxDriftDBm float64
	// StatusChurnPercent, when positive, makes that share of the ONUs
	// change status every interval: the simulator takes online ONUs
	// offline and brings offline ones back (about a tenth of the fleet
	// offline in the steady state), so the projector publishes status
	// changes and the alerter evaluates them (ONU down, PON outage,
	// flapping). 0: no status changes.
	StatusChurnPercent float64
	// BaselineOLTs is how many OLTs the baselines walk (the first ones).
	BaselineOLTs int
	// Timeout bounds the measured cycles (after it: partial results).
	Timeout time.Duration
	// ProfileSeconds is the length of the CPU profile taken from every
	// service during the first cycle (0: none).
	ProfileSeconds int
	// ProfileCycle is the cycle whose first N seconds are profiled
	// (default 1; 2: a steady cycle, without the first one's inserts).
	ProfileCycle int
	// ProfileDir keeps the CPU profiles (one per service, nats.pprof for
	// the embedded NATS server); empty: they go with the temporary folder.
	ProfileDir string
	// DatabaseURL of a server where the bench creates (and drops) a
	// database of its own; empty or not answering: a private cluster in
	// the temporary folder.
	DatabaseURL string
	// BinDir holds prebuilt binaries (facho-planner, facho-poller,
	// facho-projector, facho-auditor, facho-api, oltsim); empty: go build.
	BinDir string
	// Progress receives the progress line; TTY rewrites it in place.
	Progress io.Writer
	TTY      bool
	Log      zerolog.Logger
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.OLTs == 0 {
		c.OLTs = 1000
	}
	if c.Shape == (oltsim.Shape{}) {
		c.Shape = oltsim.Shape{Slots: 1, PortsPerSlot: 16, ONUsPerPort: 64}
	}
	if c.Cycles == 0 {
		c.Cycles = 3
	}
	if c.ProfileCycle == 0 {
		c.ProfileCycle = 1
	}
	if c.FirstRunSpread == 0 {
		c.FirstRunSpread = -time.Second
	}
	if c.Interval == 0 {
		c.Interval = 5 * time.Minute
	}
	if c.Pollers == 0 {
		c.Pollers = 2
	}
	if c.Workers == 0 {
		c.Workers = 4
	}
	if c.MaxRepetitions == 0 {
		c.MaxRepetitions = 25
	}
	if c.BaselineOLTs == 0 {
		c.BaselineOLTs = min(c.OLTs, 50)
	}
	if c.Timeout == 0 {
		c.Timeout = time.Duration(c.Cycles)*c.Interval + 20*time.Minute
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

// Validate checks the config after defaults.
func (c Config) Validate() error {
	var errs []error
	if c.OLTs < 1 || c.OLTs > 20000 {
		errs = append(errs, fmt.Errorf("olts %d: want 1..20000", c.OLTs))
	}
	if c.Cycles < 1 {
		errs = append(errs, fmt.Errorf("cycles %d: want at least 1", c.Cycles))
	}
	if c.Interval < 10*time.Second {
		errs = append(errs, fmt.Errorf("interval %s: want at least 10s (the API's minimum)", c.Interval))
	}
	if c.Pollers < 1 || c.Workers < 1 {
		errs = append(errs, errors.New("pollers and workers: want at least 1"))
	}
	if c.MaxRepetitions < 1 || c.MaxRepetitions > 255 {
		errs = append(errs, fmt.Errorf("max-repetitions %d: want 1..255", c.MaxRepetitions))
	}
	if c.BaselineOLTs < 0 || c.BaselineOLTs > c.OLTs {
		errs = append(errs, fmt.Errorf("baseline-olts %d: want 0..%d", c.BaselineOLTs, c.OLTs))
	}
	if c.ProfileCycle < 1 || c.ProfileCycle > c.Cycles {
		errs = append(errs, fmt.Errorf("profile cycle %d: want 1..cycles (%d)", c.ProfileCycle, c.Cycles))
	}
	if c.BurstEveryCycle && c.FirstRunSpread > 0 {
		errs = append(errs, fmt.Errorf("burst-every-cycle with first-run-spread %s: the spread would spread the bursts; want a negative spread", c.FirstRunSpread))
	}
	if c.RxDriftDBm < 0 || c.RxDriftDBm > 5 {
		errs = append(errs, fmt.Errorf("rx-drift %g dB: want 0..5", c.RxDriftDBm))
	}
	if c.StatusChurnPercent < 0 || c.StatusChurnPercent > 50 {
		errs = append(errs, fmt.Errorf("status-churn %g %%: want 0..50", c.StatusChurnPercent))
	}
	if c.ProfileSeconds < 0 || c.ProfileSeconds > 50 {
		errs = append(errs, fmt.Errorf("profile seconds %d: want 0..50", c.ProfileSeconds))
	}
	return errors.Join(errs...)
}

// serviceBinaries are the production binaries the bench runs, plus the
// simulator.
var serviceBinaries = []string{
	"github.com/facho-olt/facho/services/planner/cmd/facho-planner",
	"github.com/facho-olt/facho/services/poller/cmd/facho-poller",
	"github.com/facho-olt/facho/services/projector/cmd/facho-projector",
	"github.com/facho-olt/facho/services/auditor/cmd/facho-auditor",
	"github.com/facho-olt/facho/services/api/cmd/facho-api",
	"github.com/facho-olt/facho/services/alerter/cmd/facho-alerter",
	"github.com/facho-olt/facho/services/oltsim/cmd/oltsim",
}

// run is the state of one bench run: everything it started, stopped by
// cleanup in reverse order.
type run struct {
	cfg       Config
	tmp       string
	community string
	token     string
	procs     []*proc // services, in start order
	sim       *proc
	nats      *natsembed.Server
	nc        *nats.Conn
	js        jetstream.JetStream
	db        *pgxpool.Pool
	dbURL     string
	dropDB    func() error
	simBase   int
	pgCPU0    float64 // Postgres server CPU seconds when the bench connected
	progress  *progress
}

// Run runs the bench and returns its result. Everything it starts
// (processes, temporary folder, database) is gone when it returns, also
// when ctx is cancelled (Ctrl-C).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bench config: %w", err)
	}
	tmp, err := tempDir()
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, tmp: tmp, community: "c" + randomHex(12), token: "bench-" + randomHex(16),
		progress: &progress{w: cfg.Progress, tty: cfg.TTY}}
	defer r.cleanup()
	return r.run(ctx)
}

func (r *run) run(ctx context.Context) (*Result, error) {
	cfg := r.cfg
	res := &Result{Started: time.Now().UTC(), OLTs: cfg.OLTs, Shape: shapeText(cfg.Shape), ONUsPerOLT: shapeONUs(cfg.Shape),
		Cycles: cfg.Cycles, IntervalSeconds: cfg.Interval.Seconds(), FirstRunSpreadSeconds: cfg.FirstRunSpread.Seconds(), BurstEveryCycle: cfg.BurstEveryCycle, RxDriftDBm: cfg.RxDriftDBm, Pollers: cfg.Pollers, Workers: cfg.Workers, MaxRepetitions: cfg.MaxRepetitions,
		Projectors: max(cfg.Projectors, 1), ProjectorPartitions: max(cfg.ProjectorPartitions, 1)}
	if host, err := os.Hostname(); err == nil {
		res.Host = host
	}
	res.CPUs = numCPU()

	binDir := cfg.BinDir
	if binDir == "" {
		r.progress.set("building the service binaries and the simulator")
		binDir = filepath.Join(r.tmp, "bin")
		if err := buildBinaries(ctx, binDir); err != nil {
			return nil, err
		}
	}
	bin := func(name string) string { return filepath.Join(binDir, name) }

	r.progress.set(fmt.Sprintf("starting the simulator: %d OLTs x %d ONUs", cfg.OLTs, shapeONUs(cfg.Shape)))
	if err := r.startSimulator(ctx, bin("oltsim")); err != nil {
		return nil, err
	}
	keysDir, err := r.startNATS(ctx)
	if err != nil {
		return nil, err
	}
	r.progress.set("postgres")
	if err := r.startPostgres(ctx); err != nil {
		return nil, err
	}
	res.Postgres = "private cluster"
	if cfg.DatabaseURL != "" && r.dropDB != nil {
		res.Postgres = "DATABASE_URL server, database of its own"
	}

	// Baselines first, on an idle machine: the services are not running.
	res.Baselines = r.baselines(ctx)

	r.progress.set("starting the services")
	key, err := secret.NewKey()
	if err != nil {
		return nil, err
	}
	apiAddr, err := freeTCP()
	if err != nil {
		return nil, err
	}
	if err := r.startServices(ctx, bin, keysDir, key, apiAddr); err != nil {
		return nil, err
	}
	client := &devstack.Client{BaseURL: "http://" + apiAddr, Token: r.token}
	m := &monitor{r: r, res: res, api: client}
	stopSampler := m.startSampler(ctx)
	defer stopSampler()
	if err := r.configure(ctx, client); err != nil {
		return nil, err
	}
	configured := time.Now()
	if err := m.measure(ctx, configured, stopSampler); err != nil {
		return nil, err
	}
	r.progress.done()
	return res, nil
}

func buildBinaries(ctx context.Context, dir string) error {
	args := append([]string{"build", "-o", dir + string(os.PathSeparator)}, serviceBinaries...)
	cmd := exec.CommandContext(ctx, "go", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build (run facho bench from the repository, or give -bin): %w\n%s", err, out)
	}
	return nil
}

func (r *run) startSimulator(ctx context.Context, bin string) error {
	base, err := freeUDPRange(r.cfg.OLTs)
	if err != nil {
		return err
	}
	r.simBase = base
	env := append(os.Environ(), "OLTSIM_COMMUNITY="+r.community)
	args := []string{"-olts", strconv.Itoa(r.cfg.OLTs), "-listen", fmt.Sprintf("127.0.0.1:%d", base),
		"-shape", shapeText(r.cfg.Shape), "-name", "bench", "-http", "", "-log-level", "warn"}
	if r.cfg.RxDriftDBm > 0 || r.cfg.StatusChurnPercent > 0 {
		// Two ticks an interval: every cycle's readings see at least one.
		// Bursts follow each other as soon as a cycle is committed: a tick
		// every 5 s then (a cycle of a large fleet takes a minute or more).
		tick := r.cfg.Interval / 2
		if r.cfg.BurstEveryCycle {
			tick = min(tick, 5*time.Second)
		}
		args = append(args, "-life-interval", tick.String())
		if r.cfg.RxDriftDBm > 0 {
			args = append(args, "-life-rx-drift", strconv.FormatFloat(r.cfg.RxDriftDBm, 'f', -1, 64))
		}
		if r.cfg.StatusChurnPercent > 0 {
			off, on := churnPercents(r.cfg.StatusChurnPercent, float64(r.cfg.Interval)/float64(tick))
			args = append(args, "-life-offline", strconv.FormatFloat(off, 'f', -1, 64), "-life-online", strconv.FormatFloat(on, 'f', -1, 64))
		}
	}
	p, err := startProc("oltsim", bin, r.tmp, env, args...)
	if err != nil {
		return err
	}
	r.sim = p
	// Up when the last OLT answers.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if p.exited() {
			return fmt.Errorf("simulator exited: %v\n%s", p.err, p.logTail(20))
		}
		if snmpAnswers(ctx, "127.0.0.1", base+r.cfg.OLTs-1, r.community) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("simulator not answering: %w", errors.Join(ctx.Err(), errors.New("deadline")))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (r *run) startNATS(ctx context.Context) (string, error) {
	keysDir := filepath.Join(r.tmp, "nkeys")
	keys, err := natsauth.EnsureKeys(keysDir)
	if err != nil {
		return "", err
	}
	users, err := natsauth.ServerUsers(keys)
	if err != nil {
		return "", err
	}
	srv, err := natsembed.Start(natsembed.Config{Port: -1, StoreDir: filepath.Join(r.tmp, "nats"), Users: users})
	if err != nil {
		return "", err
	}
	r.nats = srv
	opts, err := natsauth.Client{NkeySeedFile: natsauth.SeedFile(keysDir, natsauth.Admin)}.Options("")
	if err != nil {
		return "", err
	}
	if r.nc, err = nats.Connect(srv.URL(), append(opts, nats.Name("facho-bench"))...); err != nil {
		return "", fmt.Errorf("connect nats as admin: %w", err)
	}
	if r.js, err = jetstream.New(r.nc); err != nil {
		return "", fmt.Errorf("jetstream: %w", err)
	}
	sopts, err := streams.OptionsFromEnv(os.Getenv)
	if err != nil {
		return "", fmt.Errorf("stream options: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return keysDir, streams.Provision(pctx, r.js, sopts)
}

func (r *run) startPostgres(ctx context.Context) error {
	log := r.cfg.Log
	if r.cfg.DatabaseURL != "" && pgboot.Ping(ctx, r.cfg.DatabaseURL, 3*time.Second) == nil {
		name := "facho_bench_" + randomHex(6)
		if err := pgboot.CreateDatabase(ctx, r.cfg.DatabaseURL, name); err != nil {
			return err
		}
		admin := r.cfg.DatabaseURL
		r.dropDB = func() error {
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := pgx.Connect(dctx, admin)
			if err != nil {
				return fmt.Errorf("drop database %s: %w", name, err)
			}
			defer conn.Close(dctx)
			if _, err := conn.Exec(dctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
				return fmt.Errorf("drop database %s: %w", name, err)
			}
			return nil
		}
		u, err := withDatabase(admin, name)
		if err != nil {
			return err
		}
		r.dbURL = u
	} else {
		addr, err := freeTCP()
		if err != nil {
			return err
		}
		_, portText, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(portText)
		url, stop, err := pgboot.Ensure(ctx, pgboot.Config{DataDir: filepath.Join(r.tmp, "pg"), Port: port, Owned: true, Log: log})
		if err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		r.dropDB, r.dbURL = stop, url
	}
	pool, err := pgxpool.New(ctx, r.dbURL)
	if err != nil {
		return fmt.Errorf("postgres pool: %w", err)
	}
	r.db = pool
	if pid := r.postmaster(ctx); pid > 1 {
		r.pgCPU0, _ = treeCPU(pid)
	}
	return nil
}

// postmaster is the pid of the Postgres server's main process when it
// runs on this machine and /proc shows it (0 otherwise).
func (r *run) postmaster(ctx context.Context) int {
	var backend int
	if err := r.db.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", backend))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// baselines walks the first BaselineOLTs OLTs' ONU columns with the
// other walkers, pollers x workers at a time like the pipeline.
func (r *run) baselines(ctx context.Context) []Baseline {
	n := r.cfg.BaselineOLTs
	if n == 0 {
		return nil
	}
	targets := make([]target, n)
	for i := range targets {
		targets[i] = target{host: "127.0.0.1", port: r.simBase + i}
	}
	var cols []string
	for _, o := range devstack.HuaweiOIDs("huawei") {
		cols = append(cols, o["oid"].(string))
	}
	conc := r.cfg.Pollers * r.cfg.Workers
	reps := r.cfg.MaxRepetitions
	var out []Baseline
	step := func(what string, f func() Baseline) {
		r.progress.set(fmt.Sprintf("baseline %s on %d OLTs", what, n))
		b := f()
		if b.Skipped != "" {
			r.progress.line(fmt.Sprintf("baseline %s skipped: %s", b.Name, b.Skipped))
		}
		out = append(out, b)
	}
	step("gosnmp", func() Baseline { return gosnmpBaseline(ctx, targets, cols, r.community, reps, conc) })
	step("snmpbulkwalk", func() Baseline { return netsnmpBaseline(ctx, r.tmp, targets, cols, r.community, reps, conc) })
	if reps != 25 {
		step("snmpbulkwalk -Cr25", func() Baseline { return netsnmpBaseline(ctx, r.tmp, targets, cols, r.community, 25, conc) })
	}
	metrics := []exporterMetric{
		{"facho_onu_serial", cols[0], "OctetString"},
		{"facho_onu_description", cols[1], "DisplayString"},
		{"facho_onu_status", cols[2], "gauge"},
		{"facho_onu_rx_power", cols[3], "gauge"},
	}
	step("snmp_exporter", func() Baseline { return exporterBaseline(ctx, r.tmp, targets, metrics, r.community, 25, conc) })
	return out
}

func (r *run) startServices(ctx context.Context, bin func(string) string, keysDir, key, apiAddr string) error {
	base := append(os.Environ(),
		"FACHO_NATS_URL="+r.nats.URL(),
		"DATABASE_URL="+r.dbURL,
		secret.EnvKey+"="+key,
		"FACHO_API_TOKENS="+r.token,
		"FACHO_API_ADDR="+apiAddr,
		"FACHO_COORDINATOR_LOG="+filepath.Join(r.tmp, "coordinator.log"),
		"FACHO_POLLER_WORKERS="+strconv.Itoa(r.cfg.Workers),
		"FACHO_SNMP_MAX_REPETITIONS="+strconv.Itoa(r.cfg.MaxRepetitions),
		"FACHO_LOG_LEVEL=warn",
	)
	type svc struct {
		name, bin, identity string
		env                 []string
		args                []string
	}
	// The projector and auditor first: they create the schema (every
	// service migrates; tern serialises them) and consume from the start.
	list := []svc{
		{"projector", "facho-projector", natsauth.Projector, projectorEnv(r.cfg.ProjectorWorkers, r.cfg.ProjectorPartitions), nil},
		{"auditor", "facho-auditor", natsauth.Auditor, nil, nil},
		{"api", "facho-api", natsauth.API, nil, nil},
		// The alerter as production runs it: every onu.changed evaluated
		// (no receiver: what it would send is counted, not delivered).
		{"alerter", "facho-alerter", natsauth.Alerter, nil, nil},
	}
	for i := 2; i <= r.cfg.Projectors; i++ {
		list = append(list, svc{fmt.Sprintf("projector-%d", i), "facho-projector", natsauth.Projector, projectorEnv(r.cfg.ProjectorWorkers, r.cfg.ProjectorPartitions), nil})
	}
	for i := 1; i <= r.cfg.Pollers; i++ {
		id := fmt.Sprintf("poller-%d", i)
		list = append(list, svc{id, "facho-poller", natsauth.Poller, []string{"FACHO_POLLER_ID=" + id}, nil})
	}
	list = append(list, svc{"planner", "facho-planner", natsauth.Planner, nil, []string{"-first-run-delay", "3s", "-first-run-spread", r.cfg.FirstRunSpread.String()}})
	for _, s := range list {
		httpAddr, err := freeTCP()
		if err != nil {
			return err
		}
		pprofAddr, err := freeTCP()
		if err != nil {
			return err
		}
		env := append(append([]string(nil), base...), s.env...)
		env = append(env, natsauth.EnvNkeySeedFile+"="+natsauth.SeedFile(keysDir, s.identity),
			"FACHO_HTTP_ADDR="+httpAddr, "FACHO_PPROF_ADDR="+pprofAddr)
		p, err := startProc(s.name, bin(s.bin), r.tmp, env, s.args...)
		if err != nil {
			return err
		}
		p.httpAddr, p.pprofAddr = httpAddr, pprofAddr
		r.procs = append(r.procs, p)
		if err := waitHealthy(ctx, p, "http://"+httpAddr+"/healthz", 90*time.Second); err != nil {
			return err
		}
	}
	return waitHealthy(ctx, r.procs[2], "http://"+apiAddr+"/healthz", 30*time.Second)
}

// churnPercents are the simulator's per-tick chances (percent) that an
// online ONU goes offline and an offline one comes back, for churn percent
// of the ONUs changing status per interval of ticks ticks: an offline ONU
// comes back with a 50 % chance a tick, and the offline chance x solves
// 2xy/(x+y) = churn/ticks (the changes a tick in the steady state, where
// x/(x+y) of the fleet is offline: about churn percent for churn <= 20).
func churnPercents(churn, ticks float64) (offline, online float64) {
	c := churn / max(ticks, 1)
	const y = 50.0
	return y * c / (2*y - c), y
}

func projectorEnv(workers, partitions int) []string {
	var env []string
	if workers > 0 {
		env = append(env, "FACHO_PROJECTOR_WORKERS="+strconv.Itoa(workers))
	}
	if partitions > 0 {
		env = append(env, "FACHO_PROJECTOR_PARTITIONS="+strconv.Itoa(partitions))
	}
	return env
}

// configure creates the Huawei brand, its OIDs, the OLTs, a discovery
// job and an optical GET job through the API, as an operator would.
func (r *run) configure(ctx context.Context, c *devstack.Client) error {
	r.progress.set(fmt.Sprintf("configuring %d OLTs through the API", r.cfg.OLTs))
	if err := c.Do(ctx, http.MethodPost, "/api/v1/brands", map[string]any{"id": "huawei", "name": "Huawei", "description": "MA5600T/MA5800 GPON", "index_scheme": "pon.onu"}, nil); err != nil {
		return fmt.Errorf("create brand: %w", err)
	}
	var oidIDs []string
	for _, body := range devstack.HuaweiOIDs("huawei") {
		if err := c.Do(ctx, http.MethodPost, "/api/v1/oids", body, nil); err != nil {
			return fmt.Errorf("create oid %s: %w", body["id"], err)
		}
		oidIDs = append(oidIDs, body["id"].(string))
	}
	ids := make([]string, r.cfg.OLTs)
	err := forEach(ctx, indexTargets(r.cfg.OLTs), 8, func(t target) error {
		id := fmt.Sprintf("bench-%d", t.port)
		ids[t.port] = id
		body := map[string]any{"id": id, "name": id, "ip": "127.0.0.1", "port": r.simBase + t.port, "community": r.community, "brand_id": "huawei", "enabled": true, "description": "simulated Huawei MA5800 (facho bench)"}
		return c.Do(ctx, http.MethodPost, "/api/v1/olts", body, nil)
	})
	if err != nil {
		return fmt.Errorf("create olts: %w", err)
	}
	interval := int(r.cfg.Interval / time.Second)
	jobs := []map[string]any{ // the ids are benchJobs
		{"id": "bench-discovery", "name": "ONU discovery", "brand_id": "huawei", "kind": "discovery", "oid_ids": oidIDs, "interval_seconds": interval, "max_retries": 3, "retry_delay_seconds": 120, "priority": 90, "enabled": true},
		{"id": "bench-optical", "name": "Optical GET", "brand_id": "huawei", "kind": "get", "oid_ids": []string{"hw-ont-rx-power"}, "interval_seconds": interval, "max_retries": 2, "retry_delay_seconds": 60, "priority": 40, "enabled": true},
	}
	for _, job := range jobs {
		if err := c.Do(ctx, http.MethodPost, "/api/v1/jobs", job, nil); err != nil {
			return fmt.Errorf("create job %s: %w", job["id"], err)
		}
		err := forEach(ctx, indexTargets(r.cfg.OLTs), 8, func(t target) error {
			return c.Do(ctx, http.MethodPost, "/api/v1/jobs/"+job["id"].(string)+"/olts", map[string]any{"olt_id": ids[t.port], "enabled": true}, nil)
		})
		if err != nil {
			return fmt.Errorf("assign job %s: %w", job["id"], err)
		}
	}
	return nil
}

// benchJobs are the jobs configure creates.
var benchJobs = []string{"bench-discovery", "bench-optical"}

// realign disables and enables every bench job: each node starts over
// (a new plannable-since) and, with the bench's -first-run-spread
// negative and -first-run-delay 3s, the whole fleet falls due together.
func realign(ctx context.Context, c *devstack.Client) error {
	for _, action := range []string{"disable", "enable"} {
		for _, id := range benchJobs {
			if err := c.Do(ctx, http.MethodPost, "/api/v1/jobs/"+id+"/"+action, nil, nil); err != nil {
				return fmt.Errorf("%s job %s: %w", action, id, err)
			}
		}
	}
	return nil
}

// indexTargets are n placeholders whose port is their index (forEach
// over indexes).
func indexTargets(n int) []target {
	t := make([]target, n)
	for i := range t {
		t[i].port = i
	}
	return t
}

// cleanup stops everything in reverse order of start; it runs also when
// the bench was cancelled.
func (r *run) cleanup() {
	var wg sync.WaitGroup
	for i := len(r.procs) - 1; i >= 0; i-- {
		p := r.procs[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.stop(30 * time.Second); err != nil {
				r.cfg.Log.Warn().Err(err).Str("process", p.name).Msg("stop")
			}
		}()
	}
	wg.Wait()
	if r.sim != nil {
		_ = r.sim.stop(10 * time.Second)
	}
	if r.nc != nil {
		r.nc.Close()
	}
	if r.nats != nil {
		r.nats.Shutdown()
	}
	if r.db != nil {
		r.db.Close()
	}
	if r.dropDB != nil {
		if err := r.dropDB(); err != nil {
			r.cfg.Log.Warn().Err(err).Msg("drop the bench database")
		}
	}
	if err := os.RemoveAll(r.tmp); err != nil {
		r.cfg.Log.Warn().Err(err).Str("dir", r.tmp).Msg("remove temporary folder")
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func shapeText(s oltsim.Shape) string {
	return fmt.Sprintf("%dx%dx%d", s.Slots, s.PortsPerSlot, s.ONUsPerPort)
}

// withDatabase points a Postgres URL (or keyword/value DSN) at database name.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			// The URL may hold a password: not echoed.
			return "", errors.New("DATABASE_URL does not parse")
		}
		u.Path = "/" + name
		q := u.Query()
		q.Del("dbname")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " dbname=" + name, nil
}

// percentile of sorted values (nearest rank).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(p*float64(len(sorted))+0.5) - 1
	k = max(0, min(k, len(sorted)-1))
	return sorted[k]
}

func sortedCopy(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s
}

func shapeONUs(s oltsim.Shape) int { return s.Slots * s.PortsPerSlot * s.ONUsPerPort }

// tempDir creates the bench's temporary folder. It is traversable by other
// users (0711: they may enter, not list it) because, run as root without
// DATABASE_URL, the private PostgreSQL cluster in it runs as the postgres
// user, which must reach its data folder; what is inside keeps its own
// modes (the cluster's folder is the postgres user's, 0700; seeds 0600).
func tempDir() (string, error) {
	tmp, err := os.MkdirTemp("", "facho-bench-")
	if err != nil {
		return "", fmt.Errorf("temporary folder: %w", err)
	}
	if err := os.Chmod(tmp, 0o711); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("temporary folder %s: %w", tmp, err)
	}
	return tmp, nil
}
