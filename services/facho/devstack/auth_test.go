package devstack_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The local stack runs on its NATS identities: anonymous clients are
// refused, a service identity cannot forge another's events, and the
// services do all their work (ONUs polled and projected) without a single
// permissions violation.
func TestStackRunsOnIdentities(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var logBuf syncBuffer
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir:     t.TempDir(),
		NATSPort:    -1,
		DatabaseURL: pgtest.URL(t),
		APIAddr:     "127.0.0.1:0",
		APIToken:    token,
		Pollers:     2,
		Planner:     planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond},
		Fleet: oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{
			Name: "olt-a", Listen: "127.0.0.1:0", Community: "auth-community",
			Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 8}, Seed: 3,
		}}},
	}, zerolog.New(&logBuf).Level(zerolog.InfoLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})

	if nc, err := nats.Connect(s.NATSURL); err == nil {
		nc.Close()
		t.Fatal("anonymous connection accepted")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("anonymous connection: %v, want an authorization violation", err)
	}

	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	if _, err := devstack.ConfigureHuawei(ctx, client, s.Fleet.OLTs(), devstack.DemoOptions{Community: "auth-community", IntervalSeconds: 3600}); err != nil {
		t.Fatal(err)
	}
	want := len(s.Fleet.OLT("olt-a").ONUs())
	waitFor(t, "ONUs of olt-a", 60*time.Second, func() (bool, string) {
		var got onuList
		if err := client.Do(ctx, http.MethodGet, "/api/v1/olts/olt-a/onus", nil, &got); err != nil {
			return false, err.Error()
		}
		return len(got.ONUs) == want, "onus: " + itoa(len(got.ONUs))
	})

	// The api's identity forges a varbind batch: refused, nothing lands.
	_, apiJS, err := s.Connect(natsauth.API, "forger")
	if err != nil {
		t.Fatal(err)
	}
	before := streamMsgs(t, s.JS, streams.StreamVarbinds)
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	defer pcancel()
	if _, err := apiJS.Publish(pctx, streams.SubjectVarbinds("olt-a"), []byte(`{"forged":true}`)); err == nil {
		t.Fatal("forged varbind batch acknowledged")
	}
	if after := streamMsgs(t, s.JS, streams.StreamVarbinds); after != before {
		t.Fatalf("FACHO_VARBINDS: %d messages after the forged publish, %d before", after, before)
	}

	// The forgery is the only violation in the log.
	waitFor(t, "the forgery logged", 10*time.Second, func() (bool, string) {
		return strings.Contains(logBuf.String(), "facho.varbinds.olt-a"), "not yet"
	})
	for _, line := range strings.Split(logBuf.String(), "\n") {
		if strings.Contains(line, "Permissions Violation") && !strings.Contains(line, "forger") {
			t.Errorf("a service hit a permissions violation: %s", line)
		}
	}
}

func streamMsgs(t *testing.T, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}
