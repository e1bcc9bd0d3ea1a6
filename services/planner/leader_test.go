package planner_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/lease"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

func startReplica(t *testing.T, ctx context.Context, js jetstream.JetStream, instance string) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// A crashed replica's errors are expected: only a hang would fail.
		_ = planner.Run(ctx, planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond, Instance: instance},
			planner.Deps{JS: js, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
	}()
	return wg.Wait
}

func leaderHolder(t *testing.T, js jetstream.JetStream) string {
	t.Helper()
	kv, err := js.KeyValue(context.Background(), streams.BucketPlannerLeader)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), lease.Key(streams.LeaderKey))
	if err != nil {
		return ""
	}
	var r lease.Record
	_ = json.Unmarshal(e.Value(), &r)
	return r.Holder
}

// Two planner replicas: one plans, the other stands by; when the active one
// dies (its connection cut, its lease left to expire) the other takes over
// and the node's runs go on, each planned from the end of the previous one:
// no run twice, none lost.
func TestStandbyTakesOverFromADeadLeader(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage, LeaderTTL: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fin := startFinisher(t, ctx, env.JS, 200*time.Millisecond)
	seedConfig(t, env.JS, "v1:sealed-placeholder")

	ncA, err := nats.Connect(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	jsA, _ := jetstream.New(ncA)
	waitA := startReplica(t, ctx, jsA, "planner-a")
	collect(t, env.JS, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-a", "*"), func(e []streams.Envelope) bool { return len(e) >= 1 })
	waitB := startReplica(t, ctx, env.JS, "planner-b")
	defer func() { cancel(); waitA(); waitB() }()
	if h := leaderHolder(t, env.JS); h != "planner-a" {
		t.Fatalf("leader %q, want planner-a", h)
	}
	collect(t, env.JS, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-a", "*"), func(e []streams.Envelope) bool { return len(e) >= 3 })

	crashed := time.Now()
	ncA.Close() // planner-a dies: no renewal, no release
	audits := waitAudit(t, env.JS, func(ev streams.AuditEvent) bool {
		return ev.Kind == streams.AuditTakeover && ev.Details["instance"] == "planner-b"
	})
	for _, a := range audits {
		if a.Kind == streams.AuditTakeover && a.Details["instance"] == "planner-b" && a.Details["previous"] != "planner-a" {
			t.Errorf("takeover audit %+v, want previous planner-a", a)
		}
	}
	before := len(collect(t, env.JS, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-a", "*"), func(e []streams.Envelope) bool { return len(e) >= 3 }))
	dues := collect(t, env.JS, streams.StreamSchedule, streams.SubjectNodeDueClass("olt-a", "*"), func(e []streams.Envelope) bool { return len(e) >= before+3 })
	var prev streams.NodeDue
	var firstAfter time.Time
	for i, d := range dues {
		var nd streams.NodeDue
		if err := streams.DecodeData(d, &nd); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			end := fin.ended(prev.ExecutionID)
			if end.IsZero() || nd.DispatchedAt.Before(end) {
				t.Fatalf("run %d dispatched at %s before run %d ended (%s)", i, nd.DispatchedAt, i-1, end)
			}
			if !nd.ScheduledAt.Equal(end.Add(time.Second)) {
				t.Fatalf("run %d scheduled at %s, want the previous end %s + 1s: a run was lost or planned twice", i, nd.ScheduledAt, end)
			}
		}
		if firstAfter.IsZero() && nd.DispatchedAt.After(crashed) {
			firstAfter = nd.DispatchedAt
		}
		prev = nd
	}
	if h := leaderHolder(t, env.JS); h != "planner-b" {
		t.Fatalf("leader %q, want planner-b", h)
	}
	t.Logf("leader TTL 1s: first dispatch %s after the leader died", firstAfter.Sub(crashed))
}
