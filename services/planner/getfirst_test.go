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
	r := startGetFirst(t)
	env, get, seen := r.env, r.get, r.seen
	disc := seen()[0]
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

// getFirstRig is a planner with an hourly get and an hourly discovery of
// olt-a, and the NodeDue it dispatched.
type getFirstRig struct {
	env  *jstest.Env
	get  streams.JobUpserted
	reg  *prometheus.Registry
	mu   sync.Mutex
	dues []streams.NodeDue
}

func startGetFirst(t *testing.T) *getFirstRig {
	t.Helper()
	r := &getFirstRig{env: jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}), reg: prometheus.NewRegistry()}
	ctx, cancel := context.WithCancel(context.Background())
	seedConfig(t, r.env.JS, "v1:sealed-placeholder")
	r.get = job(true, 3600)
	publish(t, r.env.JS, streams.SubjectJob(r.get.ID), r.get)
	publish(t, r.env.JS, streams.SubjectJob("disc"), streams.JobUpserted{ID: "disc", Name: "discovery", BrandID: "huawei", Kind: streams.KindDiscovery,
		OIDIDs: []string{"hw-serial"}, IntervalSeconds: 3600, Priority: 90, Enabled: true})
	publish(t, r.env.JS, streams.SubjectAssignment("disc", "olt-a"), streams.JobOLTAssigned{JobID: "disc", OLTID: "olt-a", Enabled: true})
	onNodeDue(t, ctx, r.env.JS, func(nd streams.NodeDue) {
		r.mu.Lock()
		r.dues = append(r.dues, nd)
		r.mu.Unlock()
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The default first-run spread (15 min): the discovery must not
		// get an offset. Retries 100 ms apart.
		err := planner.Run(ctx, planner.Config{Tick: 20 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond,
			RetryBackoff: []time.Duration{100 * time.Millisecond}, ONUKnownRecheck: 50 * time.Millisecond},
			planner.Deps{JS: r.env.JS, Log: zerolog.Nop(), Registry: r.reg})
		if err != nil {
			t.Errorf("planner.Run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitUntil(t, 20*time.Second, "the discovery dispatched", func() bool { return len(r.seen()) >= 1 })
	if d := r.seen()[0]; d.JobID != "disc" {
		t.Fatalf("first dispatch %s (%s), want the discovery", d.JobID, d.Kind)
	}
	return r
}

func (r *getFirstRig) seen() []streams.NodeDue {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]streams.NodeDue(nil), r.dues...)
}

func (r *getFirstRig) counter(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// A discovery skipped (stale behind a backlog: nothing read) leaves the
// OLT's ONUs to come: its get stays held instead of failing
// no_onus_known, a failure that would count towards the auto-disable of
// an OLT that answers, and is dispatched once an ONU is known.
func TestGetHeldPastASkippedDiscovery(t *testing.T) {
	r := startGetFirst(t)
	disc := r.seen()[0]
	publish(t, r.env.JS, streams.SubjectExec("olt-a", streams.PhaseSkipped), streams.ExecutionSkipped{ExecutionID: disc.ExecutionID,
		JobID: "disc", OLTID: "olt-a", PollerID: "stub", Attempt: disc.Attempt, ScheduledAt: disc.ScheduledAt, SkippedAt: time.Now().UTC(),
		Reason: "stale: a newer run supersedes it"})
	time.Sleep(1500 * time.Millisecond) // the get is due, the skip is projected
	if n := len(r.seen()); n != 1 {
		t.Fatalf("the get was dispatched after its OLT's discovery was skipped, with no ONU known: %+v", r.seen()[1:])
	}
	// Nothing but a discovery brings ONUs: the held get's lookups (a few
	// JetStream requests each) are 30 rechecks apart, not one a recheck
	// (50 ms: 30 in this wait), so a fleet's backlog does not flood NATS.
	if n := r.counter(t, "facho_planner_onu_lookups_total"); n < 1 || n > 2 {
		t.Errorf("%v lookups of the OLT's ONUs in 1.5 s while no discovery is coming soon, want 1 or 2", n)
	}
	publish(t, r.env.JS, streams.SubjectONU("olt-a", streams.ONUDiscovered), streams.ONUChanged{OLTID: "olt-a", PonIndex: 1, ONUID: 1,
		Change: streams.ONUDiscovered, ExecutionID: disc.ExecutionID, ObservedAt: time.Now().UTC()})
	waitUntil(t, 20*time.Second, "the get dispatched once an ONU is known", func() bool { return len(r.seen()) >= 2 })
	if g := r.seen()[1]; g.JobID != r.get.ID {
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
