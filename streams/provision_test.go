package streams

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func startJS(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func TestProvisionIdempotentAndUpdates(t *testing.T) {
	js := startJS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 2; i++ {
		if err := Provision(ctx, js, Options{}); err != nil {
			t.Fatalf("provision #%d: %v", i+1, err)
		}
	}
	for _, sc := range StreamConfigs(Options{}) {
		s, err := js.Stream(ctx, sc.Name)
		if err != nil {
			t.Fatalf("stream %s: %v", sc.Name, err)
		}
		if s.CachedInfo().Config.Retention != jetstream.LimitsPolicy {
			t.Errorf("stream %s is not replayable (retention %v)", sc.Name, s.CachedInfo().Config.Retention)
		}
	}
	for _, cd := range ConsumerConfigs(Options{}) {
		if _, err := js.Consumer(ctx, cd.Stream, cd.Config.Durable); err != nil {
			t.Errorf("consumer %s: %v", cd.Config.Durable, err)
		}
	}
	// A changed option is applied by the next provisioning.
	if err := Provision(ctx, js, Options{VarbindsMaxAge: time.Hour, LeaseTTL: 5 * time.Second, PollersTTL: 7 * time.Second}); err != nil {
		t.Fatal(err)
	}
	s, _ := js.Stream(ctx, StreamVarbinds)
	if got := s.CachedInfo().Config.MaxAge; got != time.Hour {
		t.Errorf("varbinds max age = %s after update", got)
	}
	kv, err := js.KeyValue(ctx, BucketLeases)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != 5*time.Second {
		t.Errorf("lease ttl = %s after update", st.TTL())
	}
	pkv, err := js.KeyValue(ctx, BucketPollers)
	if err != nil {
		t.Fatal(err)
	}
	if pst, err := pkv.Status(ctx); err != nil || pst.TTL() != 7*time.Second {
		t.Errorf("pollers bucket: %v, ttl after update want 7s", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		o  Options
		ok bool
	}{
		"defaults":     {Options{}, true},
		"replicas 7":   {Options{Replicas: 7}, false},
		"lease 100ms":  {Options{LeaseTTL: 100 * time.Millisecond}, false},
		"ackwait tiny": {Options{PollerAckWait: time.Millisecond}, false},
	} {
		err := tc.o.WithDefaults().Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
