package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/natsembed"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/portcheck"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

const token = "multiprocess-token-0123456789"

// binaries are the production service binaries, built once per test run.
var binaries = []string{
	"github.com/facho-olt/facho/services/planner/cmd/facho-planner",
	"github.com/facho-olt/facho/services/poller/cmd/facho-poller",
	"github.com/facho-olt/facho/services/projector/cmd/facho-projector",
	"github.com/facho-olt/facho/services/auditor/cmd/facho-auditor",
	"github.com/facho-olt/facho/services/api/cmd/facho-api",
	"github.com/facho-olt/facho/services/availability/cmd/facho-availability",
	"github.com/facho-olt/facho/services/alerter/cmd/facho-alerter",
}

func buildBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"build", "-o", dir + string(os.PathSeparator)}, binaries...)
	cmd := exec.Command("go", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := portcheck.PickTCP()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// proc is one running service process.
type proc struct {
	name     string
	cmd      *exec.Cmd
	httpAddr string
	mu       sync.Mutex
	out      bytes.Buffer
	done     chan error
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func start(t *testing.T, bin, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, httpAddr: freeAddr(t), done: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(append(os.Environ(), env...), "FACHO_HTTP_ADDR="+p.httpAddr)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.output())
		}
	})
	return p
}

func get(url string) (int, string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// startSecureNATS starts a server that accepts only Facho's identities
// over mutual TLS, provisions the streams as the admin, and returns the
// server's URL, the keys folder and the client TLS environment.
func startSecureNATS(t *testing.T, ctx context.Context, opts streams.Options) (url, keysDir string, tlsEnv []string) {
	t.Helper()
	keysDir = t.TempDir()
	keys, err := natsauth.EnsureKeys(keysDir)
	if err != nil {
		t.Fatal(err)
	}
	users, err := natsauth.ServerUsers(keys)
	if err != nil {
		t.Fatal(err)
	}
	tlsFiles := jstest.WriteTLSFiles(t, t.TempDir(), "127.0.0.1", "localhost")
	srv, err := natsembed.Start(natsembed.Config{Port: -1, StoreDir: t.TempDir(), Users: users, TLS: tlsFiles.ServerConfig(t, true)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	admin := natsauth.Client{NkeySeedFile: natsauth.SeedFile(keysDir, natsauth.Admin), TLSCA: tlsFiles.CA, TLSCert: tlsFiles.ClientCert, TLSKey: tlsFiles.ClientKey}
	nopts, err := admin.Options("")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.URL(), nopts...)
	if err != nil {
		t.Fatalf("connect as admin: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := streams.Provision(pctx, js, opts); err != nil {
		t.Fatal(err)
	}
	return srv.URL(), keysDir, []string{
		natsauth.EnvTLSCA + "=" + tlsFiles.CA,
		natsauth.EnvTLSCert + "=" + tlsFiles.ClientCert,
		natsauth.EnvTLSKey + "=" + tlsFiles.ClientKey,
	}
}

// TestServicesAsSeparateProcesses runs the five production binaries as
// processes against one JetStream and one Postgres, configures two
// simulated OLTs through the API and waits for their ONUs; then every
// process must stop cleanly on SIGTERM. Each process connects with its
// own NATS identity over mutual TLS (the streams are provisioned by the
// admin identity, as in production) and none hits a permissions violation.
func TestServicesAsSeparateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs five binaries")
	}
	binDir := buildBinaries(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	natsURL, keysDir, tlsEnv := startSecureNATS(t, ctx, streams.Options{LeaseTTL: 5 * time.Second})
	seed := func(identity string) string {
		return natsauth.EnvNkeySeedFile + "=" + natsauth.SeedFile(keysDir, identity)
	}
	fleet, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{
		{Name: "olt-x", Listen: "127.0.0.1:0", Community: "mp-secret-community", Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 8}, Seed: 7},
		{Name: "olt-y", Listen: "127.0.0.1:0", Community: "mp-secret-community", Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 16}, Seed: 8},
	}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Close() })

	key, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	apiAddr := freeAddr(t)
	env := []string{
		"FACHO_NATS_URL=" + natsURL,
		"DATABASE_URL=" + pgtest.URL(t),
		"FACHO_SECRET_KEY=" + key,
		"FACHO_API_TOKENS=" + token,
		"FACHO_API_ADDR=" + apiAddr,
		"FACHO_COORDINATOR_LOG=" + filepath.Join(t.TempDir(), "coordinator.log"),
		"FACHO_LEASE_TTL=5s",
	}
	env = append(env, tlsEnv...)
	with := func(identity string, extra ...string) []string {
		return append(append(append([]string(nil), env...), seed(identity)), extra...)
	}
	bin := func(name string) string { return filepath.Join(binDir, name) }
	procs := []*proc{
		start(t, bin("facho-projector"), "projector", with(natsauth.Projector)),
		start(t, bin("facho-auditor"), "auditor", with(natsauth.Auditor)),
		start(t, bin("facho-api"), "api", with(natsauth.API)),
		start(t, bin("facho-availability"), "availability", with(natsauth.Availability)),
		start(t, bin("facho-alerter"), "alerter", with(natsauth.Alerter)),
		start(t, bin("facho-poller"), "poller-1", with(natsauth.Poller, "FACHO_POLLER_ID=poller-1")),
		start(t, bin("facho-poller"), "poller-2", with(natsauth.Poller, "FACHO_POLLER_ID=poller-2")),
		start(t, bin("facho-planner"), "planner", with(natsauth.Planner), "-first-run-delay", "200ms", "-tick", "100ms", "-first-run-spread=-1s"),
	}

	// Every process answers /healthz and /metrics.
	for _, p := range procs {
		waitUntil(t, p.name+" healthy", 30*time.Second, func() (bool, string) {
			code, body, err := get("http://" + p.httpAddr + "/healthz")
			if err != nil {
				return false, err.Error()
			}
			return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
		})
		code, body, err := get("http://" + p.httpAddr + "/metrics")
		if err != nil || code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
			t.Errorf("%s /metrics: %d %v", p.name, code, err)
		}
	}

	client := &devstack.Client{BaseURL: "http://" + apiAddr, Token: token}
	waitUntil(t, "api up", 30*time.Second, func() (bool, string) {
		code, _, err := get("http://" + apiAddr + "/healthz")
		return err == nil && code == http.StatusOK, fmt.Sprint(code, err)
	})
	if _, err := devstack.ConfigureHuawei(ctx, client, fleet.OLTs(), devstack.DemoOptions{Community: "mp-secret-community", IntervalSeconds: 3600}); err != nil {
		t.Fatal(err)
	}
	for _, olt := range fleet.OLTs() {
		want := len(olt.ONUs())
		waitUntil(t, "ONUs of "+olt.Name(), 60*time.Second, func() (bool, string) {
			var got struct {
				ONUs []struct {
					Serial string `json:"serial"`
				} `json:"onus"`
			}
			if err := client.Do(ctx, http.MethodGet, "/api/v1/olts/"+olt.Name()+"/onus", nil, &got); err != nil {
				return false, err.Error()
			}
			return len(got.ONUs) == want, fmt.Sprintf("%d of %d ONUs", len(got.ONUs), want)
		})
	}
	// The availability service probed every OLT: available in the API
	// (the projector's olt_availability) and in its metric.
	var availMetrics string
	for _, p := range procs {
		if p.name == "availability" {
			availMetrics = "http://" + p.httpAddr + "/metrics"
		}
	}
	for _, olt := range fleet.OLTs() {
		waitUntil(t, "availability of "+olt.Name(), 60*time.Second, func() (bool, string) {
			var got struct {
				Availability *string `json:"availability"`
			}
			if err := client.Do(ctx, http.MethodGet, "/api/v1/olts/"+olt.Name(), nil, &got); err != nil {
				return false, err.Error()
			}
			if got.Availability == nil || *got.Availability != "available" {
				return false, fmt.Sprintf("availability %v", got.Availability)
			}
			_, body, err := get(availMetrics)
			if err != nil {
				return false, err.Error()
			}
			return strings.Contains(body, `facho_olt_available{olt_id="`+olt.Name()+`"} 1`), "metric facho_olt_available"
		})
	}

	// Graceful shutdown: SIGTERM, exit status 0, and no plaintext
	// community in any process's logs.
	for _, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("signal %s: %v", p.name, err)
		}
	}
	for _, p := range procs {
		select {
		case err := <-p.done:
			if err != nil {
				t.Errorf("%s exited with %v", p.name, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop within 30s of SIGTERM", p.name)
		}
		out := p.output()
		if strings.Contains(out, "mp-secret-community") || strings.Contains(out, key) {
			t.Errorf("%s logged a secret", p.name)
		}
		if !strings.Contains(out, `"service":`) {
			t.Errorf("%s wrote no structured log lines", p.name)
		}
		for _, id := range natsauth.Names() {
			b, err := os.ReadFile(natsauth.SeedFile(keysDir, id))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, strings.TrimSpace(string(b))) {
				t.Errorf("%s logged the nats seed of %s", p.name, id)
			}
		}
		if strings.Contains(out, "Permissions Violation") {
			t.Errorf("%s hit a permissions violation: its identity lacks a permission it needs", p.name)
		}
	}
}

func waitUntil(t *testing.T, what string, limit time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not reached in %s (last: %s)", what, limit, last)
}
