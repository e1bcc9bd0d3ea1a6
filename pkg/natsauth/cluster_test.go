package natsauth_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/streams"
)

// startAuthCluster starts a 3-node JetStream cluster with Facho's
// identities and returns a jstest.Env on its first node (admin
// connection, keys).
func startAuthCluster(t *testing.T) *jstest.Env {
	t.Helper()
	keysDir := t.TempDir()
	ids, keys, err := natsauth.EnsureIdentities(keysDir)
	if err != nil {
		t.Fatal(err)
	}
	users, err := natsauth.ServerUsersOf(ids, keys)
	if err != nil {
		t.Fatal(err)
	}
	var ports []int
	var routes []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		ports = append(ports, p)
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var first *server.Server
	for i, p := range ports {
		srv, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true, Nkeys: users,
			Cluster: server.ClusterOpts{Name: "facho-people", Host: "127.0.0.1", Port: p},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		})
		if err != nil {
			t.Fatal(err)
		}
		srv.Start()
		t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
		if !srv.ReadyForConnections(10 * time.Second) {
			t.Fatal("cluster node not ready")
		}
		if first == nil {
			first = srv
		}
	}
	env := &jstest.Env{URL: first.ClientURL(), KeysDir: keysDir}
	env.NC, env.JS = env.Connect(t, natsauth.Admin)
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := env.JS.AccountInfo(ctx)
		cancel()
		if err == nil {
			return env
		}
		if time.Now().After(deadline) {
			t.Fatalf("no meta leader after a minute: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// On a cluster the operator moves a stuck stream's or consumer's leader
// (nats stream cluster step-down, nats consumer cluster step-down); the
// observer may not.
func TestOperatorStepDownInCluster(t *testing.T) {
	env := startAuthCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var onu jetstream.StreamConfig
	for _, sc := range streams.StreamConfigs(streams.Options{Replicas: 3, Storage: jetstream.MemoryStorage}) {
		if sc.Name == streams.StreamONU {
			onu = sc
		}
	}
	s, err := env.JS.CreateStream(ctx, onu)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "noc-probe", Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	leader := func() string {
		t.Helper()
		for {
			info, err := s.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.Cluster != nil && info.Cluster.Leader != "" {
				return info.Cluster.Leader
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	before := leader()

	v := make(violations, 16)
	obsNC, _ := env.Connect(t, natsauth.Observer, v.handler())
	rctx, rcancel := context.WithTimeout(ctx, time.Second)
	if _, err := obsNC.RequestWithContext(rctx, "$JS.API.STREAM.LEADER.STEPDOWN.FACHO_ONU", nil); err == nil {
		t.Fatal("the observer stepped a leader down")
	}
	rcancel()
	v.next(t, "$JS.API.STREAM.LEADER.STEPDOWN.FACHO_ONU")
	if out, err := natsCLI(t, env, natsauth.Observer, "stream", "cluster", "step-down", streams.StreamONU, "-f"); err == nil {
		t.Fatalf("nats stream cluster step-down as observer: allowed\n%s", out)
	}

	if out, err := natsCLI(t, env, natsauth.Operator, "stream", "cluster", "step-down", streams.StreamONU, "-f"); err != nil {
		t.Fatalf("nats stream cluster step-down as operator: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for leader() == before {
		if time.Now().After(deadline) {
			t.Fatalf("leader still %s after the step-down", before)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := natsCLI(t, env, natsauth.Operator, "consumer", "cluster", "step-down", streams.StreamONU, "noc-probe", "-f"); err != nil {
		t.Fatalf("nats consumer cluster step-down as operator: %v\n%s", err, out)
	}
}
