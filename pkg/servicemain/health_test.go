package servicemain

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// freePort is a TCP port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startCluster starts a 3-node JetStream cluster and waits for its meta
// leader.
func startCluster(t *testing.T) []*server.Server {
	t.Helper()
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var nodes []*server.Server
	for i, p := range ports {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "facho-health", Host: "127.0.0.1", Port: p},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		}
		srv, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		srv.Start()
		t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
		nodes = append(nodes, srv)
	}
	for _, n := range nodes {
		if !n.ReadyForConnections(10 * time.Second) {
			t.Fatal("cluster node not ready")
		}
	}
	nc, err := nats.Connect(nodes[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return nodes
		}
		if time.Now().After(deadline) {
			t.Fatalf("no JetStream meta leader after a minute: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A service connected to a node of a cluster that lost its quorum is
// still connected, but JetStream stores nothing: /healthz says so, with
// the short public reason only.
func TestHealthzReportsJetStreamWithoutQuorum(t *testing.T) {
	nodes := startCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := Binary{Name: "x", Service: func(ctx context.Context, d Deps) error {
		<-ctx.Done()
		return nil
	}}
	sink, done := runBinary(ctx, b, []string{"-http-addr", "127.0.0.1:0"}, map[string]string{EnvNATSURL: nodes[0].ClientURL()})
	var addr string
	select {
	case addr = <-sink.addrs:
	case err := <-done:
		t.Fatalf("Run returned early: %v\n%s", err, sink)
	}
	if status, checks := healthz(t, addr); status != http.StatusOK || checks["jetstream"] != "ok" {
		t.Fatalf("/healthz = %d %v with the cluster whole, want 200 with jetstream ok", status, checks)
	}
	nodes[1].Shutdown()
	nodes[2].Shutdown()
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusServiceUnavailable {
			if !strings.Contains(string(raw), `"jetstream":"jetstream unavailable"`) || !strings.Contains(string(raw), `"nats":"ok"`) {
				t.Fatalf("/healthz = %s, want jetstream unavailable and nats ok", raw)
			}
			for _, leak := range []string{"account info", "FACHO_CONFIG", "timeout", "deadline"} {
				if strings.Contains(string(raw), leak) {
					t.Errorf("/healthz shows %q: %s", leak, raw)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz still %d %s a minute after the cluster lost its quorum", res.StatusCode, raw)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if log := sink.String(); !strings.Contains(log, "health check fails") || !strings.Contains(log, "jetstream") {
		t.Errorf("the detail is not logged:\n%s", log)
	}
	cancel()
	if err := wait(t, done); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}
