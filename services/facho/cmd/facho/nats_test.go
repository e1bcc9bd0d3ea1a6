package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/natsembed"
)

// facho nats keys writes a seed per identity and an authorization block
// nats-server reads; a second run keeps the seeds; no seed is printed.
func TestNATSKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nkeys")
	runKeys := func() string {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), []string{"nats", "keys", dir}, func(string) string { return "" }, &out, &errOut); err != nil {
			t.Fatalf("nats keys: %v\n%s", err, errOut.String())
		}
		return out.String()
	}
	out := runKeys()
	auth1, err := os.ReadFile(filepath.Join(dir, AuthConfFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range natsauth.Names() {
		seed, err := os.ReadFile(natsauth.SeedFile(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, strings.TrimSpace(string(seed))) {
			t.Fatalf("facho nats keys printed the seed of %s", name)
		}
		if !strings.Contains(out, name) {
			t.Errorf("output does not list %s:\n%s", name, out)
		}
	}
	runKeys()
	auth2, err := os.ReadFile(filepath.Join(dir, AuthConfFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(auth1, auth2) {
		t.Error("a second run changed the keys")
	}

	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte("listen: 127.0.0.1:-1\ninclude \""+AuthConfFile+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server does not read %s: %v", AuthConfFile, err)
	}
	if len(opts.Nkeys) != len(natsauth.Names()) {
		t.Fatalf("%d users in the authorization block, want %d", len(opts.Nkeys), len(natsauth.Names()))
	}
}

// facho streams provision authenticates with the admin's seed; without
// it the server refuses the CLI.
func TestProvisionWithAdminIdentity(t *testing.T) {
	dir := t.TempDir()
	keys, err := natsauth.EnsureKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	users, err := natsauth.ServerUsers(keys)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := natsembed.Start(natsembed.Config{Port: -1, StoreDir: t.TempDir(), Users: users})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	env := map[string]string{"FACHO_NATS_URL": srv.URL()}
	getenv := func(k string) string { return env[k] }
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"streams", "provision"}, getenv, &out, &errOut); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Fatalf("anonymous provision: %v, want an authorization violation", err)
	}
	env[natsauth.EnvNkeySeedFile] = natsauth.SeedFile(dir, natsauth.Admin)
	if err := run(context.Background(), []string{"streams", "provision"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("provision as admin: %v", err)
	}
	if !strings.Contains(out.String(), "provisioned") {
		t.Fatalf("output %q", out.String())
	}
}

// The cluster configs of deploy/ are what nats-server reads once the
// operator has put the generated authorization block and the TLS files in
// place: clients over TLS with the identities, routes over mutual TLS,
// monitoring on localhost.
func TestDeployClusterConfigs(t *testing.T) {
	confs, err := filepath.Glob("../../../../deploy/nats-cluster/nats-*.conf")
	if err != nil || len(confs) != 3 {
		t.Fatalf("cluster configs: %v %v", confs, err)
	}
	etc := t.TempDir() // stands for /etc/facho/nats
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"nats", "keys", filepath.Join(etc, "keys")}, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	auth, err := os.ReadFile(filepath.Join(etc, "keys", AuthConfFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, AuthConfFile), auth, 0o644); err != nil {
		t.Fatal(err)
	}
	tlsDir := filepath.Join(etc, "tls")
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	files := jstest.WriteTLSFiles(t, tlsDir, "facho-nats-1", "facho-nats-2", "facho-nats-3")
	for _, conf := range confs {
		name := strings.TrimSuffix(filepath.Base(conf), ".conf") // nats-1
		node := "facho-" + name
		copyFile(t, files.ServerCert, filepath.Join(tlsDir, node+".pem"))
		copyFile(t, files.ServerKey, filepath.Join(tlsDir, node+"-key.pem"))
		b, err := os.ReadFile(conf)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "/etc/facho/nats/", etc+"/")
		text = strings.ReplaceAll(text, "/var/lib/facho/", t.TempDir()+"/")
		local := filepath.Join(etc, name+".conf")
		if err := os.WriteFile(local, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		opts, err := server.ProcessConfigFile(local)
		if err != nil {
			t.Fatalf("%s: %v", conf, err)
		}
		switch {
		case len(opts.Nkeys) != len(natsauth.Names()):
			t.Errorf("%s: %d identities, want %d", conf, len(opts.Nkeys), len(natsauth.Names()))
		case opts.TLSConfig == nil:
			t.Errorf("%s: clients without TLS", conf)
		case opts.Cluster.TLSConfig == nil || opts.Cluster.TLSConfig.ClientAuth != tls.RequireAndVerifyClientCert:
			t.Errorf("%s: routes without mutual TLS", conf)
		case opts.HTTPHost != "127.0.0.1":
			t.Errorf("%s: monitoring on %q, want localhost", conf, opts.HTTPHost)
		case opts.NoAuthUser != "":
			t.Errorf("%s: anonymous clients accepted as %s", conf, opts.NoAuthUser)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// facho nats keys -integrator and facho nats identity add: the integrator
// gets a seed, its durables are kept across runs, and the authorization
// block holds it with its durables.
func TestNATSIntegratorIdentity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nkeys")
	nats := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"nats"}, args...), func(string) string { return "" }, &out, &errOut)
		return out.String() + errOut.String(), err
	}
	if out, err := nats("keys", "-integrator", "acme", dir); err != nil {
		t.Fatalf("nats keys -integrator: %v\n%s", err, out)
	}
	if out, err := nats("identity", "add", "integrator:globex", "-durable", "billing,crm", dir); err != nil {
		t.Fatalf("nats identity add: %v\n%s", err, out)
	}
	if out, err := nats("identity", "add", "integrator:globex", "-durable", "alerts", dir); err != nil {
		t.Fatalf("nats identity add again: %v\n%s", err, out)
	}
	for _, bad := range [][]string{
		{"identity", "add", "integrator:Bad.Name", dir},
		{"identity", "add", "integrator:projector", "-durable", "config", dir}, // projector-config is Facho's
		{"identity", "add", "observer", dir},
		{"keys", "-integrator", "a.b", dir},
	} {
		if out, err := nats(bad...); err == nil {
			t.Errorf("facho nats %v: accepted\n%s", bad, out)
		}
	}
	out, err := nats("keys", dir) // a plain regeneration keeps them
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"integrator:acme", "integrator:globex"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not list %s:\n%s", want, out)
		}
	}
	ids, _, err := natsauth.EnsureIdentities(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, id := range ids {
		if strings.HasPrefix(id.Name, natsauth.IntegratorPrefix) {
			got[id.Name] = id.Durables
		}
	}
	want := map[string][]string{
		"integrator:acme":   {"acme-1", "acme-2", "acme-3", "acme-4"},
		"integrator:globex": {"globex-alerts", "globex-billing", "globex-crm"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("integrators %v, want %v", got, want)
	}
	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte("listen: 127.0.0.1:-1\ninclude \""+AuthConfFile+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server does not read %s: %v", AuthConfFile, err)
	}
	if len(opts.Nkeys) != len(natsauth.Names())+2 {
		t.Fatalf("%d users in the authorization block, want %d", len(opts.Nkeys), len(natsauth.Names())+2)
	}
	auth, err := os.ReadFile(filepath.Join(dir, AuthConfFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(auth), `"$JS.API.CONSUMER.CREATE.FACHO_ONU.globex-billing"`) {
		t.Error("the authorization block does not grant globex-billing")
	}
}
