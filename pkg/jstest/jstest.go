// Package jstest gives each test its own embedded JetStream server with
// Facho's streams provisioned.
package jstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/natsembed"
	"github.com/facho-olt/facho/streams"
)

// Env is a running server with a client connection.
type Env struct {
	Server *natsembed.Server
	URL    string
	NC     *nats.Conn
	JS     jetstream.JetStream
}

// Start starts a server on a free port, connects and provisions the
// streams with opts. Everything stops when the test ends.
func Start(t testing.TB, opts streams.Options) *Env {
	t.Helper()
	srv, err := natsembed.Start(natsembed.Config{Port: -1, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := streams.Provision(ctx, js, opts); err != nil {
		t.Fatal(err)
	}
	return &Env{Server: srv, URL: srv.URL(), NC: nc, JS: js}
}
