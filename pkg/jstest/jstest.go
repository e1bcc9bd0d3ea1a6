// Package jstest gives each test its own embedded JetStream server with
// Facho's streams provisioned.
//
// With WithAuth the server runs with Facho's NATS identities and
// permissions (pkg/natsauth): anonymous connections are refused, Env.NC is
// the admin identity that provisioned the streams, and Env.Connect
// connects as any identity of the table. WithTLS serves clients over TLS
// with a certificate authority of the test's own.
package jstest

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/natsembed"
	"github.com/facho-olt/facho/streams"
)

// Env is a running server with a client connection.
type Env struct {
	Server *natsembed.Server
	URL    string
	NC     *nats.Conn
	JS     jetstream.JetStream
	// KeysDir holds a seed per identity (<name>.nk) with WithAuth, and
	// TLS the files of WithTLS; both are empty otherwise.
	KeysDir string
	TLS     TLSFiles

	verifyClients bool
}

// Option changes how Start runs the server.
type Option func(*settings)

type settings struct {
	auth, tls, verifyClients bool
	integrators              []natsauth.IntegratorRecord
}

// WithIntegrator adds identity integrator:<name> with its durables
// (natsauth.AddIntegrator) to a server WithAuth.
func WithIntegrator(name string, durables ...string) Option {
	return func(s *settings) {
		s.integrators = append(s.integrators, natsauth.IntegratorRecord{Name: name, Durables: durables})
	}
}

// WithAuth runs the server with Facho's identities and permissions.
func WithAuth() Option { return func(s *settings) { s.auth = true } }

// WithTLS serves clients over TLS; with verifyClients clients must present
// a certificate of the test's CA (Env.TLS.ClientCert).
func WithTLS(verifyClients bool) Option {
	return func(s *settings) { s.tls, s.verifyClients = true, verifyClients }
}

// Start starts a server on a free port, connects and provisions the
// streams with opts. Everything stops when the test ends.
func Start(t testing.TB, opts streams.Options, options ...Option) *Env {
	t.Helper()
	var set settings
	for _, o := range options {
		o(&set)
	}
	env := &Env{}
	cfg := natsembed.Config{Port: -1, StoreDir: t.TempDir()}
	if set.auth {
		env.KeysDir = t.TempDir()
		for _, r := range set.integrators {
			if _, err := natsauth.AddIntegrator(env.KeysDir, r.Name, r.Durables); err != nil {
				t.Fatal(err)
			}
		}
		ids, keys, err := natsauth.EnsureIdentities(env.KeysDir)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Users, err = natsauth.ServerUsersOf(ids, keys); err != nil {
			t.Fatal(err)
		}
	}
	if set.tls {
		env.TLS = WriteTLSFiles(t, t.TempDir(), "127.0.0.1", "localhost")
		env.verifyClients = set.verifyClients
		cfg.TLS = env.TLS.ServerConfig(t, set.verifyClients)
	}
	srv, err := natsembed.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	env.Server, env.URL = srv, srv.URL()
	admin := ""
	if set.auth {
		admin = natsauth.Admin
	}
	env.NC, env.JS = env.Connect(t, admin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := streams.Provision(ctx, env.JS, opts); err != nil {
		t.Fatal(err)
	}
	return env
}

// Client is how identity connects to this server: its seed file (none
// without WithAuth or for identity "") and the TLS files.
func (e *Env) Client(identity string) natsauth.Client {
	var c natsauth.Client
	if e.KeysDir != "" && identity != "" {
		c.NkeySeedFile = natsauth.SeedFile(e.KeysDir, identity)
	}
	if e.TLS.CA != "" {
		c.TLSCA = e.TLS.CA
		if e.verifyClients {
			c.TLSCert, c.TLSKey = e.TLS.ClientCert, e.TLS.ClientKey
		}
	}
	return c
}

// Connect connects as identity (anonymously when identity is "") and
// returns the connection, closed when the test ends.
func (e *Env) Connect(t testing.TB, identity string, extra ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := e.Dial(identity, extra...)
	if err != nil {
		t.Fatalf("connect as %q: %v", identity, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	return nc, js
}

// Dial connects as identity and returns the error instead of failing the
// test: for tests of refused connections.
func (e *Env) Dial(identity string, extra ...nats.Option) (*nats.Conn, error) {
	inbox := identity
	if identity == natsauth.Admin {
		inbox = ""
	}
	opts, err := e.Client(identity).Options(inbox)
	if err != nil {
		return nil, err
	}
	opts = append(opts, nats.Name("jstest "+identity))
	return nats.Connect(e.URL, append(opts, extra...)...)
}

// ServerConfig is the server side of the files: the server certificate,
// and the CA verifying clients when verifyClients.
func (f TLSFiles) ServerConfig(t testing.TB, verifyClients bool) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(f.ServerCert, f.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if verifyClients {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = f.pool(t)
	}
	return cfg
}
