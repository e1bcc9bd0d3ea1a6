//go:build linux

package e2e

// The harness of the chaos and cluster tests: the five production binaries
// and nats-server run as supervised processes (restarted when they die, as
// systemd's Restart= does), so a test can kill -9 any of them and watch the
// system recover. Every wait has a deadline and every process is stopped
// in t.Cleanup.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/portcheck"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

const (
	chaosToken     = "chaos-token-0123456789abcdef"
	chaosCommunity = "chaos-secret-community"
	// chaosNATSServerEnv names a nats-server binary to use instead of the
	// one built from the module cache.
	chaosNATSServerEnv = "FACHO_NATS_SERVER_BIN"
	// chaosLogsEnv names a folder where the tests write every process's
	// log (its last 3,000 lines).
	chaosLogsEnv = "FACHO_CHAOS_LOGS"
)

// chaosBinaries are the production service binaries.
var chaosBinaries = []string{
	"github.com/facho-olt/facho/services/planner/cmd/facho-planner",
	"github.com/facho-olt/facho/services/poller/cmd/facho-poller",
	"github.com/facho-olt/facho/services/projector/cmd/facho-projector",
	"github.com/facho-olt/facho/services/auditor/cmd/facho-auditor",
	"github.com/facho-olt/facho/services/availability/cmd/facho-availability",
	"github.com/facho-olt/facho/services/alerter/cmd/facho-alerter",
	"github.com/facho-olt/facho/services/api/cmd/facho-api",
}

// chaosBuild builds the service binaries and nats-server (the version this
// module depends on, the one the embedded server runs) into a temporary
// directory. FACHO_NATS_SERVER_BIN overrides the nats-server binary.
func chaosBuild(t *testing.T) (binDir, natsBin string) {
	t.Helper()
	binDir = t.TempDir()
	args := append([]string{"build", "-o", binDir + string(os.PathSeparator)}, chaosBinaries...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go build services: %v\n%s", err, out)
	}
	if p := os.Getenv(chaosNATSServerEnv); p != "" {
		return binDir, p
	}
	natsBin = filepath.Join(binDir, "nats-server")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", natsBin, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		t.Fatalf("go build nats-server (set %s to use an installed one): %v\n%s", chaosNATSServerEnv, err, out)
	}
	return binDir, natsBin
}

// chaosFreePort returns a TCP port nobody listens on right now.
func chaosFreePort(t *testing.T) int {
	t.Helper()
	addr, err := portcheck.PickTCP()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("free port %s: %v", addr, err)
	}
	return n
}

// chaosLog keeps the last lines a process wrote, across restarts, and
// remembers whether any line carried a secret.
type chaosLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	dropped int
	secrets []string
	leaks   []string // "<secret name> in: <line prefix without the secret>"
}

const chaosLogLines = 3000

func (l *chaosLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	if len(l.partial) > 64<<10 { // a runaway line: check and keep it anyway
		l.line(string(l.partial))
		l.partial = nil
	}
	return len(b), nil
}

func (l *chaosLog) line(s string) {
	for i, sec := range l.secrets {
		if sec != "" && strings.Contains(s, sec) {
			if len(l.leaks) < 5 {
				l.leaks = append(l.leaks, fmt.Sprintf("secret #%d in: %.120s", i, strings.ReplaceAll(s, sec, "<SECRET>")))
			}
		}
	}
	if len(l.lines) >= chaosLogLines {
		n := chaosLogLines / 2
		l.dropped += n
		l.lines = append(l.lines[:0], l.lines[n:]...)
	}
	l.lines = append(l.lines, s)
}

func (l *chaosLog) mark(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.line("----- " + s + " -----")
}

func (l *chaosLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := len(l.lines) - n
	if k < 0 {
		k = 0
	}
	head := ""
	if l.dropped > 0 || k > 0 {
		head = fmt.Sprintf("(%d earlier lines not shown)\n", l.dropped+k)
	}
	return head + strings.Join(l.lines[k:], "\n")
}

// beforeLast is the line before the last one (the last is the exit mark).
func (l *chaosLog) beforeLast() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.lines); n > 1 {
		return l.lines[n-2]
	}
	return ""
}

func (l *chaosLog) leaked() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.leaks...)
}

// chaosProc is a supervised process: started again restartDelay after it
// exits, until stop. kill9 kills the running instance; the supervisor
// brings it back.
type chaosProc struct {
	name     string
	bin      string
	args     []string
	env      []string
	httpURL  string // healthz base, e.g. http://127.0.0.1:1234
	healthz  string // path of the health check
	log      *chaosLog
	restart  time.Duration
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the current instance exits
	starts   int
	exits    []string // unexpected exits (not killed by the test)
	killed   bool     // the current instance was killed by the test
	stopping bool
	paused   bool // not restarted while paused
	wake     chan struct{}
	loopDone chan struct{}
}

func (p *chaosProc) spawn() error {
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = chaosSysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd = cmd
	p.exited = make(chan struct{})
	p.killed = false
	p.starts++
	p.log.mark(fmt.Sprintf("start #%d pid %d", p.starts, cmd.Process.Pid))
	return nil
}

// supervise starts the process and keeps it running until stop.
func (p *chaosProc) supervise(t *testing.T) {
	t.Helper()
	p.wake = make(chan struct{}, 1)
	p.loopDone = make(chan struct{})
	p.mu.Lock()
	err := p.spawn()
	p.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.loopDone)
		for {
			p.mu.Lock()
			cmd, exited := p.cmd, p.exited
			p.mu.Unlock()
			werr := cmd.Wait()
			p.mu.Lock()
			close(exited)
			p.log.mark(fmt.Sprintf("exit: %v", werr))
			if !p.killed && !p.stopping {
				cause := p.log.beforeLast()
				p.exits = append(p.exits, fmt.Sprintf("%s: %v: %.200s", time.Now().UTC().Format("15:04:05.000"), werr, cause))
			}
			for !p.stopping && p.paused {
				p.mu.Unlock()
				<-p.wake
				p.mu.Lock()
			}
			if p.stopping {
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			select {
			case <-time.After(p.restart):
			case <-p.wake:
			}
			p.mu.Lock()
			if p.stopping {
				p.mu.Unlock()
				return
			}
			if err := p.spawn(); err != nil {
				p.exits = append(p.exits, err.Error())
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { p.stop(10 * time.Second) })
}

// kill9 kills the running instance with SIGKILL and returns when it is
// gone; the supervisor restarts it after the restart delay unless paused.
func (p *chaosProc) kill9() error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.killed = true
	p.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill -9 %s: %w", p.name, err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kill -9 %s: still running after 10s", p.name)
	}
}

// setPaused holds the restart of a killed instance (paused) or lets it
// happen at once.
func (p *chaosProc) setPaused(paused bool) {
	p.mu.Lock()
	p.paused = paused
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// stop ends supervision: SIGTERM, then SIGKILL after grace. It returns the
// exit error of the last instance (nil for a clean exit) and whether it
// stopped within grace.
func (p *chaosProc) stop(grace time.Duration) (error, bool) {
	p.mu.Lock()
	if p.loopDone == nil {
		p.mu.Unlock()
		return nil, true
	}
	p.stopping = true
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	inTime := true
	select {
	case <-exited:
	default:
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(grace):
			inTime = false
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	<-p.loopDone
	if cmd.ProcessState != nil && !cmd.ProcessState.Success() {
		return fmt.Errorf("%s", cmd.ProcessState), inTime
	}
	return nil, inTime
}

// healthy reports whether the current instance answers its health check.
func (p *chaosProc) healthy() bool {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get(p.httpURL + p.healthz)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitHealthy waits until the process answers its health check.
func (p *chaosProc) waitHealthy(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		if p.healthy() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy within %s", p.name, limit)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// chaosNode is one nats-server process.
type chaosNode struct {
	*chaosProc
	serverName  string
	port        int
	clusterPort int
	httpPort    int
	storeDir    string
}

func (n *chaosNode) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// natsConfig renders the node's configuration file: the layout of
// deploy/nats-cluster (server_name, jetstream store, cluster routes), on
// loopback ports.
func chaosNATSConfig(n *chaosNode, peers []*chaosNode, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %s\nlisten: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\n", n.serverName, n.port, n.httpPort)
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n  max_memory_store: 256MB\n  max_file_store: 4GB\n}\n", n.storeDir)
	if len(peers) > 1 {
		fmt.Fprintf(&b, "cluster {\n  name: facho-chaos\n  listen: 127.0.0.1:%d\n  routes: [\n", n.clusterPort)
		for _, p := range peers {
			fmt.Fprintf(&b, "    nats-route://127.0.0.1:%d\n", p.clusterPort)
		}
		b.WriteString("  ]\n}\n")
	}
	b.WriteString(extra)
	return b.String()
}

// chaosConfig shapes a stack.
type chaosConfig struct {
	Nodes    int // nats-server processes (1, or 3 for a cluster)
	Replicas int // FACHO_STREAM_REPLICAS
	OLTs     int
	Pollers  int
	Shape    oltsim.Shape
	// ShapeOf, when set, is the shape of OLT i (instead of Shape).
	ShapeOf func(i int) oltsim.Shape
	// Faults of OLT i.
	Faults          func(i int) oltsim.Faults
	IntervalSeconds int
	RestartDelay    time.Duration
	ExtraEnv        []string
}

// chaosStack is a running system: nats-server node(s), the services as
// processes, the simulated OLTs in this process and a fresh database.
type chaosStack struct {
	t        *testing.T
	cfg      chaosConfig
	ctx      context.Context
	nodes    []*chaosNode
	services []*chaosProc
	byName   map[string]*chaosProc
	fleet    *oltsim.Fleet
	db       *pgxpool.Pool
	apiAddr  string
	client   *devstack.Client
	secrets  []string
	nc       *nats.Conn // the test's own connection, as the admin identity
	js       jetstream.JetStream
	natsURLs string
	built    time.Duration // how long building the binaries took
	keysDir  string        // one nkey seed per identity (pkg/natsauth)
	tls      jstest.TLSFiles
}

// clientOf is how identity connects: its nkey seed and mutual TLS.
func (s *chaosStack) clientOf(identity string) natsauth.Client {
	return natsauth.Client{NkeySeedFile: natsauth.SeedFile(s.keysDir, identity), TLSCA: s.tls.CA, TLSCert: s.tls.ClientCert, TLSKey: s.tls.ClientKey}
}

// connectAs opens a NATS connection with a Facho identity.
func (s *chaosStack) connectAs(identity string, opts ...nats.Option) (*nats.Conn, error) {
	auth, err := s.clientOf(identity).Options(identity)
	if err != nil {
		return nil, fmt.Errorf("connect as %s: %w", identity, err)
	}
	// RetryOnFailedConnect: the chaos may have NATS down right now.
	opts = append(append(auth, nats.Name("chaos-test-as-"+identity), nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true), nats.ReconnectWait(200*time.Millisecond),
		// The chaos cuts connections: not worth a line on stderr each.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})), opts...)
	nc, err := nats.Connect(s.natsURLs, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect as %s: %w", identity, err)
	}
	return nc, nil
}

// streamOptions are the stream options every service is given.
func (s *chaosStack) streamOptions() streams.Options {
	return streams.Options{Replicas: max(s.cfg.Replicas, 1), LeaseTTL: 5 * time.Second, PollerAckWait: 5 * time.Second}
}

func (s *chaosStack) proc(name string) *chaosProc { return s.byName[name] }

// startChaosStack builds and starts everything; the services are healthy
// and the OLTs configured (through the API) when it returns.
func startChaosStack(t *testing.T, cfg chaosConfig) *chaosStack {
	t.Helper()
	if cfg.RestartDelay == 0 {
		cfg.RestartDelay = 500 * time.Millisecond
	}
	buildStart := time.Now()
	binDir, natsBin := chaosBuild(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &chaosStack{t: t, cfg: cfg, ctx: ctx, byName: map[string]*chaosProc{}, built: time.Since(buildStart)}

	key, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	s.secrets = []string{chaosCommunity, key}

	// NATS identities (an nkey per service, the permission table of
	// pkg/natsauth rendered into each server's authorization block) and
	// mutual TLS, as deploy/nats-cluster runs them.
	s.keysDir = t.TempDir()
	keys, err := natsauth.EnsureKeys(s.keysDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range natsauth.Names() {
		b, err := os.ReadFile(natsauth.SeedFile(s.keysDir, name))
		if err != nil {
			t.Fatal(err)
		}
		s.secrets = append(s.secrets, strings.TrimSpace(string(b)))
	}
	authConf, err := natsauth.RenderAuthorization(keys)
	if err != nil {
		t.Fatal(err)
	}
	s.tls = jstest.WriteTLSFiles(t, t.TempDir(), "127.0.0.1", "localhost")
	serverExtra := string(authConf) + fmt.Sprintf("tls {\n  cert_file: %q\n  key_file: %q\n  ca_file: %q\n  verify: true\n}\n",
		s.tls.ServerCert, s.tls.ServerKey, s.tls.CA)

	// NATS.
	for i := 0; i < cfg.Nodes; i++ {
		name := fmt.Sprintf("nats-%d", i+1)
		n := &chaosNode{serverName: "facho-chaos-" + strconv.Itoa(i+1), port: chaosFreePort(t), clusterPort: chaosFreePort(t), httpPort: chaosFreePort(t), storeDir: t.TempDir()}
		n.chaosProc = &chaosProc{name: name, bin: natsBin, log: &chaosLog{secrets: s.secrets}, restart: cfg.RestartDelay,
			httpURL: fmt.Sprintf("http://127.0.0.1:%d", n.httpPort), healthz: "/healthz"}
		s.nodes = append(s.nodes, n)
	}
	var urls []string
	confDir := t.TempDir()
	for _, n := range s.nodes {
		conf := filepath.Join(confDir, n.name+".conf")
		if err := os.WriteFile(conf, []byte(chaosNATSConfig(n, s.nodes, serverExtra)), 0o600); err != nil {
			t.Fatal(err)
		}
		n.args = []string{"-c", conf}
		urls = append(urls, n.url())
	}
	s.natsURLs = strings.Join(urls, ",")
	for _, n := range s.nodes {
		n.supervise(t)
		s.byName[n.name] = n.chaosProc
	}
	for _, n := range s.nodes {
		if err := n.waitHealthy(ctx, 60*time.Second); err != nil {
			t.Fatalf("%v\n%s", err, n.log.tail(50))
		}
	}
	if s.nc, err = s.connectAs(natsauth.Admin); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.nc.Close)
	if s.js, err = jetstream.New(s.nc); err != nil {
		t.Fatal(err)
	}
	// The operator provisions the streams once, with the admin identity
	// (services only check that they exist).
	pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
	err = streams.Provision(pctx, s.js, s.streamOptions())
	pcancel()
	if err != nil {
		t.Fatalf("provision as admin: %v", err)
	}

	// OLTs.
	var fc oltsim.FleetConfig
	for i := 0; i < cfg.OLTs; i++ {
		oc := oltsim.OLTConfig{Name: fmt.Sprintf("olt-%02d", i), Listen: "127.0.0.1:0", Community: chaosCommunity,
			Profile: "huawei-ma5800", Shape: cfg.Shape, Seed: int64(100 + i)}
		if cfg.Faults != nil {
			oc.Faults = cfg.Faults(i)
		}
		if cfg.ShapeOf != nil {
			oc.Shape = cfg.ShapeOf(i)
		}
		fc.OLTs = append(fc.OLTs, oc)
	}
	s.fleet, err = oltsim.Start(ctx, fc, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.fleet.Close() })

	// Database.
	dbURL := pgtest.URL(t)
	s.db, err = pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.db.Close)

	// Services.
	s.apiAddr = fmt.Sprintf("127.0.0.1:%d", chaosFreePort(t))
	env := append([]string{
		"FACHO_NATS_URL=" + s.natsURLs,
		"DATABASE_URL=" + dbURL,
		"FACHO_SECRET_KEY=" + key,
		"FACHO_API_TOKENS=" + chaosToken,
		"FACHO_API_ADDR=" + s.apiAddr,
		"FACHO_COORDINATOR_LOG=" + filepath.Join(t.TempDir(), "coordinator.log"),
		// Time constants scaled down with the test: a dead holder's lease
		// expires after 5 s, its NodeDue is redelivered after 5 s, and the
		// pollers' sweep for attempts that ended without a terminal event
		// (a lease released while NATS refused the event) runs every 10 s
		// instead of 5 min.
		"FACHO_LEASE_TTL=5s",
		"FACHO_POLLER_ACK_WAIT=5s",
		"FACHO_INTERRUPT_SWEEP_EVERY=10s",
		"FACHO_STREAM_REPLICAS=" + strconv.Itoa(max(cfg.Replicas, 1)),
		natsauth.EnvTLSCA + "=" + s.tls.CA,
		natsauth.EnvTLSCert + "=" + s.tls.ClientCert,
		natsauth.EnvTLSKey + "=" + s.tls.ClientKey,
	}, cfg.ExtraEnv...)
	bin := func(name string) string { return filepath.Join(binDir, name) }
	add := func(name, binName string, extraEnv []string, args ...string) {
		identity := strings.TrimPrefix(binName, "facho-")
		extraEnv = append(extraEnv, natsauth.EnvNkeySeedFile+"="+natsauth.SeedFile(s.keysDir, identity))
		p := &chaosProc{name: name, bin: bin(binName), args: args, log: &chaosLog{secrets: s.secrets}, restart: cfg.RestartDelay, healthz: "/healthz"}
		port := chaosFreePort(t)
		p.httpURL = fmt.Sprintf("http://127.0.0.1:%d", port)
		p.env = append(append(append([]string(nil), env...), extraEnv...), fmt.Sprintf("FACHO_HTTP_ADDR=127.0.0.1:%d", port))
		s.services = append(s.services, p)
		s.byName[name] = p
	}
	add("projector", "facho-projector", nil)
	add("auditor", "facho-auditor", nil)
	add("availability", "facho-availability", nil)
	add("alerter", "facho-alerter", nil)
	add("api", "facho-api", nil)
	for i := 1; i <= cfg.Pollers; i++ {
		id := fmt.Sprintf("poller-%d", i)
		add(id, "facho-poller", []string{"FACHO_POLLER_ID=" + id})
	}
	add("planner", "facho-planner", nil, "-first-run-delay", "200ms", "-tick", "100ms", "-first-run-spread=-1s")
	for _, p := range s.services {
		p.supervise(t)
	}
	t.Cleanup(func() {
		dir := os.Getenv(chaosLogsEnv)
		if dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Errorf("%s: %v", chaosLogsEnv, err)
				dir = ""
			}
		}
		for _, p := range s.allProcs() {
			if dir != "" {
				path := filepath.Join(dir, t.Name()+"-"+p.name+".log")
				if err := os.WriteFile(path, []byte(p.log.tail(chaosLogLines)), 0o644); err != nil {
					t.Errorf("write %s: %v", path, err)
				}
			} else if t.Failed() {
				t.Logf("last lines of %s (%s=DIR keeps them all):\n%s", p.name, chaosLogsEnv, p.log.tail(60))
			}
		}
	})
	for _, p := range s.services {
		if err := p.waitHealthy(ctx, 60*time.Second); err != nil {
			t.Fatalf("%v\n%s", err, p.log.tail(50))
		}
	}

	// The API serves on its own address, which may open after /healthz of
	// the telemetry server.
	api := &chaosProc{name: "api listener", httpURL: "http://" + s.apiAddr, healthz: "/healthz"}
	if err := api.waitHealthy(ctx, 60*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, s.proc("api").log.tail(50))
	}
	s.client = &devstack.Client{BaseURL: "http://" + s.apiAddr, Token: chaosToken}
	cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
	defer ccancel()
	if _, err := devstack.ConfigureHuawei(cctx, s.client, s.fleet.OLTs(), devstack.DemoOptions{Community: chaosCommunity, IntervalSeconds: cfg.IntervalSeconds}); err != nil {
		t.Fatalf("configure through the api: %v", err)
	}
	return s
}

func (s *chaosStack) allProcs() []*chaosProc {
	var out []*chaosProc
	for _, n := range s.nodes {
		out = append(out, n.chaosProc)
	}
	return append(out, s.services...)
}

// waitAllHealthy waits until every process answers its health check.
func (s *chaosStack) waitAllHealthy(limit time.Duration) error {
	var errs []error
	deadline := time.Now().Add(limit)
	for _, p := range s.allProcs() {
		if err := p.waitHealthy(s.ctx, time.Until(deadline)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// progress counts what the pipeline finished after since: executions that
// ended (projector), and coordinator log rows (auditor).
func (s *chaosStack) progress(ctx context.Context, since time.Time) (execs, logs int, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = s.db.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM executions WHERE status IN ('SUCCESS','FAILED') AND finished_at > $1),
		       (SELECT count(*) FROM coordinator_logs WHERE "timestamp" > $1)`, since).Scan(&execs, &logs)
	return execs, logs, err
}

// waitProgress waits until an execution that ended after since and a
// coordinator log row written after since are in Postgres.
func (s *chaosStack) waitProgress(ctx context.Context, since time.Time, limit time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		e, l, err := s.progress(ctx, since)
		if err == nil && e > 0 && l > 0 {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("no progress within %s (executions %d, logs %d, err %v)", limit, e, l, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ---- checks ----

// checkExecutionsEnded lists executions scheduled (or started) before cut
// that are still PENDING or RUNNING, and any status outside the known set.
func (s *chaosStack) checkExecutionsEnded(ctx context.Context, cut time.Time) (problems []string, byStatus map[string]int, err error) {
	byStatus = map[string]int{}
	rows, err := s.db.Query(ctx, `SELECT status, count(*) FROM executions GROUP BY status`)
	if err != nil {
		return nil, nil, fmt.Errorf("count executions: %w", err)
	}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("count executions: %w", err)
		}
		byStatus[st] = n
		switch st {
		case "PENDING", "RUNNING", "SUCCESS", "FAILED", "SKIPPED", "INTERRUPTED", "ABORTED":
		default:
			problems = append(problems, fmt.Sprintf("%d executions in unknown status %q", n, st))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("count executions: %w", err)
	}
	rows, err = s.db.Query(ctx, `
		SELECT id, olt_id, status, poller_id, attempt, COALESCE(scheduled_at, started_at, updated_at)
		FROM executions
		WHERE status IN ('PENDING','RUNNING') AND COALESCE(scheduled_at, started_at, updated_at) < $1
		ORDER BY 6`, cut)
	if err != nil {
		return nil, nil, fmt.Errorf("unended executions: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, olt, st, poller string
		var attempt int
		var at time.Time
		if err := rows.Scan(&id, &olt, &st, &poller, &attempt, &at); err != nil {
			return nil, nil, fmt.Errorf("unended executions: %w", err)
		}
		if n++; n <= 10 {
			problems = append(problems, fmt.Sprintf("execution %s on %s still %s (poller %q, attempt %d, since %s)", id, olt, st, poller, attempt, at.UTC().Format("15:04:05.000")))
		}
	}
	if n > 10 {
		problems = append(problems, fmt.Sprintf("... %d executions not ended in all", n))
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("unended executions: %w", err)
	}
	// Attempts too: none left RUNNING.
	arows, err := s.db.Query(ctx, `
		SELECT a.execution_id, e.olt_id, a.attempt, a.poller_id, a.lease_revision, a.started_at, e.status, e.attempt
		FROM execution_attempts a JOIN executions e ON e.id = a.execution_id
		WHERE a.status = 'RUNNING' AND a.started_at < $1
		ORDER BY a.started_at`, cut)
	if err != nil {
		return nil, nil, fmt.Errorf("running attempts: %w", err)
	}
	for arows.Next() {
		var id, olt, poller, est string
		var attempt, eattempt int
		var rev int64
		var at time.Time
		if err := arows.Scan(&id, &olt, &attempt, &poller, &rev, &at, &est, &eattempt); err != nil {
			arows.Close()
			return nil, nil, fmt.Errorf("running attempts: %w", err)
		}
		problems = append(problems, fmt.Sprintf("attempt %d of execution %s on %s (poller %s, lease revision %d, started %s) still RUNNING; the execution is %s at attempt %d",
			attempt, id, olt, poller, rev, at.UTC().Format("15:04:05.000"), est, eattempt))
	}
	arows.Close()
	if err := arows.Err(); err != nil {
		return nil, nil, fmt.Errorf("running attempts: %w", err)
	}
	rows, err = s.db.Query(ctx, `SELECT status, count(*) FROM execution_attempts GROUP BY status`)
	if err != nil {
		return nil, nil, fmt.Errorf("count attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var k int
		if err := rows.Scan(&st, &k); err != nil {
			return nil, nil, fmt.Errorf("count attempts: %w", err)
		}
		byStatus["attempts "+st] = k
	}
	return problems, byStatus, rows.Err()
}

// checkAudited: every execution that succeeded before cut has its
// EXECUTION_SUCCEEDED coordinator log row (the auditor lost nothing).
func (s *chaosStack) checkAudited(ctx context.Context, cut time.Time) ([]string, error) {
	var missing int
	var example string
	err := s.db.QueryRow(ctx, `
		SELECT count(*), COALESCE(min(e.id), '')
		FROM executions e
		WHERE e.status = 'SUCCESS' AND e.finished_at < $1
		  AND NOT EXISTS (SELECT 1 FROM coordinator_logs l
		                  WHERE l.event_type = 'EXECUTION_SUCCEEDED' AND l.details->>'execution_id' = e.id)`, cut).Scan(&missing, &example)
	if err != nil {
		return nil, fmt.Errorf("audited executions: %w", err)
	}
	if missing > 0 {
		return []string{fmt.Sprintf("%d successful executions without their EXECUTION_SUCCEEDED coordinator log (e.g. %s)", missing, example)}, nil
	}
	return nil, nil
}

// checkONUData compares onu_data with the simulator's truth for every OLT.
func (s *chaosStack) checkONUData(ctx context.Context) (problems []string, compared int, err error) {
	for _, olt := range s.fleet.OLTs() {
		type row struct {
			serial, desc, status string
			rx                   *float64
		}
		got := map[[2]int64]row{}
		rows, err := s.db.Query(ctx, `SELECT pon_index, onu_id, serial, description, status, rx_power_dbm FROM onu_data WHERE olt_id = $1`, olt.Name())
		if err != nil {
			return nil, 0, fmt.Errorf("read onu_data of %s: %w", olt.Name(), err)
		}
		for rows.Next() {
			var k [2]int64
			var r row
			if err := rows.Scan(&k[0], &k[1], &r.serial, &r.desc, &r.status, &r.rx); err != nil {
				rows.Close()
				return nil, 0, fmt.Errorf("read onu_data of %s: %w", olt.Name(), err)
			}
			got[k] = r
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, fmt.Errorf("read onu_data of %s: %w", olt.Name(), err)
		}
		truth := olt.ONUs()
		var bad []string
		for _, w := range truth {
			k := [2]int64{w.PonIndex, int64(w.ID)}
			g, ok := got[k]
			delete(got, k)
			compared++
			want := "OFFLINE"
			if w.Online {
				want = "ONLINE"
			}
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("%d.%d missing", k[0], k[1]))
			case g.serial != w.Serial || g.desc != w.Description:
				bad = append(bad, fmt.Sprintf("%d.%d serial/description %q/%q, want %q/%q", k[0], k[1], g.serial, g.desc, w.Serial, w.Description))
			case g.status != want:
				bad = append(bad, fmt.Sprintf("%d.%d status %s, want %s", k[0], k[1], g.status, want))
			case w.Online && (g.rx == nil || chaosAbs(*g.rx-w.RxPowerDBm) > 0.006):
				bad = append(bad, fmt.Sprintf("%d.%d rx %v, want %.2f", k[0], k[1], chaosFmtRx(g.rx), w.RxPowerDBm))
			case !w.Online && g.rx != nil:
				bad = append(bad, fmt.Sprintf("%d.%d offline with rx %.2f", k[0], k[1], *g.rx))
			}
		}
		for k := range got {
			bad = append(bad, fmt.Sprintf("%d.%d in onu_data but not on the OLT", k[0], k[1]))
		}
		if len(bad) > 0 {
			sort.Strings(bad)
			more := ""
			if len(bad) > 3 {
				more = fmt.Sprintf(" (and %d more)", len(bad)-3)
				bad = bad[:3]
			}
			problems = append(problems, fmt.Sprintf("onu_data of %s differs from the OLT: %s%s", olt.Name(), strings.Join(bad, "; "), more))
		}
	}
	return problems, compared, nil
}

func chaosAbs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func chaosFmtRx(p *float64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatFloat(*p, 'f', 2, 64)
}

// checkNoOverlap: the simulator saw at most one request in flight at a
// time on every OLT. A walk is sequential (one request outstanding, its
// latency well under the SNMP timeout), so two in flight means two
// operations ran on the OLT at once.
func (s *chaosStack) checkNoOverlap() (problems []string, requests int) {
	for _, olt := range s.fleet.OLTs() {
		r := olt.Record()
		requests += r.Requests
		if r.MaxConcurrent > 1 {
			at := ""
			for _, smp := range r.Timeline {
				if smp.InFlight > 1 {
					at = " first at " + smp.At.UTC().Format("15:04:05.000")
					break
				}
			}
			problems = append(problems, fmt.Sprintf("OLT %s had %d requests in flight at once (two operations)%s", olt.Name(), r.MaxConcurrent, at))
		}
	}
	return problems, requests
}

// readStream returns every message of a stream, in order.
func (s *chaosStack) readStream(ctx context.Context, stream string) ([]jetstream.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("stream %s info: %w", stream, err)
	}
	if info.State.Msgs == 0 {
		return nil, nil
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, fmt.Errorf("stream %s consumer: %w", stream, err)
	}
	var out []jetstream.Msg
	for {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return out, fmt.Errorf("stream %s fetch: %w", stream, err)
		}
		n := 0
		for m := range batch.Messages() {
			out = append(out, m)
			n++
			md, err := m.Metadata()
			if err == nil && md.Sequence.Stream >= info.State.LastSeq {
				return out, nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return out, fmt.Errorf("stream %s fetch: %w", stream, err)
		}
		if n == 0 {
			return out, fmt.Errorf("stream %s: fetch returned nothing at %d of %d messages", stream, len(out), info.State.Msgs)
		}
		if ctx.Err() != nil {
			return out, fmt.Errorf("stream %s: %w", stream, ctx.Err())
		}
	}
}

// checkONUEvents: no two ONU events with the same id, no ONU discovered
// twice, no change published twice in a row for an ONU, and no change
// that changes nothing.
func (s *chaosStack) checkONUEvents(ctx context.Context) (problems []string, checked int, err error) {
	msgs, err := s.readStream(ctx, streams.StreamONU)
	for try := 0; err != nil && try < 10 && ctx.Err() == nil; try++ {
		// Right after a node of a cluster came back, a stream may be
		// between leaders for a moment ("no responders").
		time.Sleep(time.Second)
		msgs, err = s.readStream(ctx, streams.StreamONU)
	}
	if err != nil {
		return nil, 0, err
	}
	ids := map[string]uint64{}
	msgIDs := map[string]uint64{}
	type onuKey struct {
		olt      string
		pon, onu int64
	}
	discovered := map[onuKey]int{}
	last := map[onuKey]string{}
	add := func(p string) {
		if len(problems) < 20 {
			problems = append(problems, p)
		}
	}
	for _, m := range msgs {
		md, _ := m.Metadata()
		seq := uint64(0)
		if md != nil {
			seq = md.Sequence.Stream
		}
		checked++
		env, ev, err := streams.Decode[streams.ONUChanged](m.Data())
		if err != nil {
			add(fmt.Sprintf("FACHO_ONU seq %d: %v", seq, err))
			continue
		}
		if prev, ok := ids[env.ID]; ok {
			add(fmt.Sprintf("ONU event id %s twice (seq %d and %d)", env.ID, prev, seq))
		}
		ids[env.ID] = seq
		if h := m.Headers().Get(jetstream.MsgIDHeader); h != "" {
			if prev, ok := msgIDs[h]; ok {
				add(fmt.Sprintf("ONU event Nats-Msg-Id %s twice (seq %d and %d)", h, prev, seq))
			}
			msgIDs[h] = seq
		}
		k := onuKey{ev.OLTID, ev.PonIndex, ev.ONUID}
		if ev.Change == streams.ONUDiscovered {
			if discovered[k]++; discovered[k] == 2 {
				add(fmt.Sprintf("ONU %s %d.%d discovered twice (second at seq %d)", k.olt, k.pon, k.onu, seq))
			}
		}
		prev := "none"
		if ev.Previous != nil {
			prev = fmt.Sprintf("%+v", chaosONUState(*ev.Previous))
		}
		cur := chaosONUState(ev.Current)
		sig := ev.Change + ":" + prev + "->" + cur
		if last[k] == sig {
			add(fmt.Sprintf("ONU %s %d.%d: the same change twice in a row (%s, seq %d)", k.olt, k.pon, k.onu, sig, seq))
		}
		last[k] = sig
		if ev.Previous != nil && prev == cur {
			add(fmt.Sprintf("ONU %s %d.%d: a change that changes nothing (seq %d)", k.olt, k.pon, k.onu, seq))
		}
	}
	return problems, checked, nil
}

func chaosONUState(st streams.ONUState) string {
	return fmt.Sprintf("%s|%s|%s|%s", st.Serial, st.Description, st.Status, chaosFmtRx(st.RxPowerDBm))
}

// chaosDeadLetter is the part of a dead letter the checks read.
type chaosDeadLetter struct {
	Consumer  string `json:"consumer"`
	Stream    string `json:"stream"`
	StreamSeq uint64 `json:"stream_seq"`
	Subject   string `json:"subject"`
	Reason    string `json:"reason"`
}

// deadLetters reads every dead letter, keyed by consumer, stream and
// sequence.
func (s *chaosStack) deadLetters(ctx context.Context) (map[string]chaosDeadLetter, int, error) {
	msgs, err := s.readStream(ctx, streams.StreamDLQ)
	if err != nil {
		return nil, 0, err
	}
	out := map[string]chaosDeadLetter{}
	for _, m := range msgs {
		env, err := streams.DecodeEnvelope(m.Data())
		if err != nil {
			continue
		}
		var dl chaosDeadLetter
		if err := streams.DecodeData(env, &dl); err != nil {
			continue
		}
		if dl.Consumer == "" {
			dl.Consumer = strings.TrimPrefix(m.Subject(), "facho.dlq.")
		}
		out[chaosDLKey(dl.Consumer, dl.Stream, dl.StreamSeq)] = dl
	}
	return out, len(msgs), nil
}

func chaosDLKey(consumer, stream string, seq uint64) string {
	return consumer + "/" + stream + "/" + strconv.FormatUint(seq, 10)
}

// consumersCaughtUp lists durable consumers with messages not yet
// delivered or not yet acknowledged.
func (s *chaosStack) consumersBehind(ctx context.Context) ([]string, error) {
	var behind []string
	for _, cd := range streams.ConsumerConfigs(streams.Options{}) {
		c, err := s.js.Consumer(ctx, cd.Stream, cd.Config.Durable)
		if err != nil {
			return nil, fmt.Errorf("consumer %s: %w", cd.Config.Durable, err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("consumer %s info: %w", cd.Config.Durable, err)
		}
		if info.NumPending > 0 || info.NumAckPending > 0 {
			behind = append(behind, fmt.Sprintf("%s (%d pending, %d unacknowledged, %d redelivered)", cd.Config.Durable, info.NumPending, info.NumAckPending, info.NumRedelivered))
		}
	}
	return behind, nil
}

// stopAll stops every service with SIGTERM, then the nats-server nodes:
// each must exit cleanly within the limit, and no log may carry a secret.
// exits lists the exits the test did not cause (a service that could not
// start while NATS was down, say): the supervisor restarted them, as
// systemd's Restart=on-failure does; they are figures, not failures.
func (s *chaosStack) stopAll(limit time.Duration) (problems, exits []string) {
	for _, p := range s.services {
		p.setPaused(true)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, p := range s.services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err, inTime := p.stop(limit)
			mu.Lock()
			defer mu.Unlock()
			if !inTime {
				problems = append(problems, fmt.Sprintf("%s did not stop within %s of SIGTERM", p.name, limit))
			} else if err != nil {
				problems = append(problems, fmt.Sprintf("%s exited with %v on SIGTERM", p.name, err))
			}
		}()
	}
	wg.Wait()
	for _, n := range s.nodes {
		n.stop(limit)
	}
	for _, p := range s.allProcs() {
		for _, l := range p.log.leaked() {
			problems = append(problems, fmt.Sprintf("%s logged a secret: %s", p.name, l))
		}
		p.mu.Lock()
		for _, e := range p.exits {
			exits = append(exits, fmt.Sprintf("%s at %s", p.name, e))
		}
		p.mu.Unlock()
	}
	return problems, exits
}

// ---- figures ----

// chaosRecovery is what happened after one kill.
type chaosRecovery struct {
	victim   string
	at       time.Duration // since the chaos started
	healthy  time.Duration // kill until healthy again (0: not seen)
	progress time.Duration // kill until the pipeline made progress after the restart (0: not seen)
	note     string
}

func (r chaosRecovery) String() string {
	f := func(d time.Duration) string {
		if d == 0 {
			return "not seen"
		}
		return d.Round(10 * time.Millisecond).String()
	}
	s := fmt.Sprintf("t+%-6s %-10s healthy after %-8s progress after %-8s", r.at.Round(100*time.Millisecond), r.victim, f(r.healthy), f(r.progress))
	if r.note != "" {
		s += " (" + r.note + ")"
	}
	return s
}

// chaosSummarize prints min/median/max of the recovery durations picked.
func chaosSummarize(rs []chaosRecovery, pick func(chaosRecovery) time.Duration) string {
	var ds []time.Duration
	missing := 0
	for _, r := range rs {
		if d := pick(r); d > 0 {
			ds = append(ds, d)
		} else {
			missing++
		}
	}
	if len(ds) == 0 {
		return fmt.Sprintf("none measured (%d not seen)", missing)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	r := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	out := fmt.Sprintf("min %s, median %s, max %s over %d", r(ds[0]), r(ds[len(ds)/2]), r(ds[len(ds)-1]), len(ds))
	if missing > 0 {
		out += fmt.Sprintf(" (%d not seen)", missing)
	}
	return out
}

// chaosEnvDuration reads a duration from the environment.
func chaosEnvDuration(t *testing.T, key string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration such as 10m", key, v)
	}
	return d
}

// lines joins problems for one error message.
func chaosLines(ps []string) string { return "\n  " + strings.Join(ps, "\n  ") }
