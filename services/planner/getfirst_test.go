package planner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

// A new OLT's get waits for its first discovery: the discovery (not spread:
// one OLT's jobs coming together are no burst) is dispatched first, the get
// is held while the discovery runs and while the projector has not
// published a discovered ONU, and dispatched right after one is known.
// A get failing with a read cause (empty_read) is not retried.
func TestGetWaitsForFirstDiscovery(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seedConfig(t, env.JS, "v1:sealed-placeholder")
	// seedConfig's get every second, made hourly (the hold is bounded by
	// the get's interval), and an hourly discovery.
	get := job(true, 3600)
	publish(t, env.JS, streams.SubjectJob(get.ID), get)
	publish(t, env.JS, streams.SubjectJob("disc"), streams.JobUpserted{ID: "disc", Name: "discovery", BrandID: "huawei", Kind: streams.KindDiscovery,
		OIDIDs: []string{"hw-serial"}, IntervalSeconds: 3600, Priority: 90, Enabled: true})
	publish(t, env.JS, streams.SubjectAssignment("disc", "olt-a"), streams.JobOLTAssigned{JobID: "disc", OLTID: "olt-a", Enabled: true})

	var mu sync.Mutex
	var dues []streams.NodeDue
	onNodeDue(t, ctx, env.JS, func(nd streams.NodeDue) {
		mu.Lock()
		dues = append(dues, nd)
		mu.Unlock()
	})
	seen := func() []streams.NodeDue {
		mu.Lock()
		defer mu.Unlock()
		return append([]streams.NodeDue(nil), dues...)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The default first-run spread (15 min): the discovery must not
		// get an offset. Retries 100 ms apart.
		err := planner.Run(ctx, planner.Config{Tick: 20 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond,
			RetryBackoff: []time.Duration{100 * time.Millisecond}, ONUKnownRecheck: 50 * time.Millisecond},
			planner.Deps{JS: env.JS, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Errorf("planner.Run: %v", err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	waitUntil(t, 20*time.Second, "the discovery dispatched", func() bool { return len(seen()) >= 1 })
	disc := seen()[0]
	if disc.JobID != "disc" {
		t.Fatalf("first dispatch %s (%s), want the discovery", disc.JobID, disc.Kind)
	}
	time.Sleep(time.Second) // the get would be due by now
	if n := len(seen()); n != 1 {
		t.Fatalf("%d dispatches while the discovery runs, want only the discovery: %+v", n, seen())
	}

	now := time.Now().UTC()
	publish(t, env.JS, streams.SubjectExec("olt-a", streams.PhaseSucceeded), streams.ExecutionSucceeded{ExecutionID: disc.ExecutionID,
		JobID: "disc", OLTID: "olt-a", PollerID: "stub", Attempt: 1, StartedAt: now, FinishedAt: now, Varbinds: 3})
	time.Sleep(time.Second) // the projector has not folded the discovery yet
	if n := len(seen()); n != 1 {
		t.Fatalf("the get was dispatched before any ONU was known: %+v", seen())
	}

	publish(t, env.JS, streams.SubjectONU("olt-a", streams.ONUDiscovered), streams.ONUChanged{OLTID: "olt-a", PonIndex: 1, ONUID: 1,
		Change: streams.ONUDiscovered, ExecutionID: disc.ExecutionID, ObservedAt: time.Now().UTC()})
	waitUntil(t, 20*time.Second, "the get dispatched", func() bool { return len(seen()) >= 2 })
	g := seen()[1]
	if g.JobID != get.ID || g.Attempt != 1 {
		t.Fatalf("second dispatch %+v, want the get's first attempt", g)
	}

	now = time.Now().UTC()
	publish(t, env.JS, streams.SubjectExec("olt-a", streams.PhaseFailed), streams.ExecutionFailed{ExecutionID: g.ExecutionID,
		JobID: get.ID, OLTID: "olt-a", PollerID: "stub", Attempt: 1, StartedAt: now, FinishedAt: now,
		Error: "get read no value", Cause: streams.ExecCauseEmptyRead})
	time.Sleep(1500 * time.Millisecond) // a retry would come 100 ms later
	if n := len(seen()); n != 2 {
		t.Fatalf("a get failed empty_read was retried: %+v", seen()[2:])
	}
}

// A discovery skipped (stale behind a backlog: nothing read) leaves the
// OLT's ONUs to come: its get stays held instead of failing
// no_onus_known, a failure that would count towards the auto-disable of
// an OLT that answers.
func TestGetHeldPastASkippedDiscovery(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seedConfig(t, env.JS, "v1:sealed-placeholder")
	get := job(true, 3600)
	publish(t, env.JS, streams.SubjectJob(get.ID), get)
	publish(t, env.JS, streams.SubjectJob("disc"), streams.JobUpserted{ID: "disc", Name: "discovery", BrandID: "huawei", Kind: streams.KindDiscovery,
		OIDIDs: []string{"hw-serial"}, IntervalSeconds: 3600, Priority: 90, Enabled: true})
	publish(t, env.JS, streams.SubjectAssignment("disc", "olt-a"), streams.JobOLTAssigned{JobID: "disc", OLTID: "olt-a", Enabled: true})

	var mu sync.Mutex
	var dues []streams.NodeDue
	onNodeDue(t, ctx, env.JS, func(nd streams.NodeDue) {
		mu.Lock()
		dues = append(dues, nd)
		mu.Unlock()
	})
	seen := func() []streams.NodeDue {
		mu.Lock()
		defer mu.Unlock()
		return append([]streams.NodeDue(nil), dues...)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := planner.Run(ctx, planner.Config{Tick: 20 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond,
			RetryBackoff: []time.Duration{100 * time.Millisecond}, ONUKnownRecheck: 50 * time.Millisecond},
			planner.Deps{JS: env.JS, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Errorf("planner.Run: %v", err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	waitUntil(t, 20*time.Second, "the discovery dispatched", func() bool { return len(seen()) >= 1 })
	disc := seen()[0]
	if disc.JobID != "disc" {
		t.Fatalf("first dispatch %s (%s), want the discovery", disc.JobID, disc.Kind)
	}
	now := time.Now().UTC()
	publish(t, env.JS, streams.SubjectExec("olt-a", streams.PhaseSkipped), streams.ExecutionSkipped{ExecutionID: disc.ExecutionID,
		JobID: "disc", OLTID: "olt-a", PollerID: "stub", Attempt: disc.Attempt, ScheduledAt: disc.ScheduledAt, SkippedAt: now,
		Reason: "stale: a newer run supersedes it"})
	time.Sleep(1500 * time.Millisecond) // the get is due, the skip is projected
	if n := len(seen()); n != 1 {
		t.Fatalf("the get was dispatched after its OLT's discovery was skipped, with no ONU known: %+v", seen()[1:])
	}
	publish(t, env.JS, streams.SubjectONU("olt-a", streams.ONUDiscovered), streams.ONUChanged{OLTID: "olt-a", PonIndex: 1, ONUID: 1,
		Change: streams.ONUDiscovered, ExecutionID: disc.ExecutionID, ObservedAt: time.Now().UTC()})
	waitUntil(t, 20*time.Second, "the get dispatched once an ONU is known", func() bool { return len(seen()) >= 2 })
	if g := seen()[1]; g.JobID != get.ID {
		t.Fatalf("second dispatch %+v, want the get", g)
	}
}

func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
