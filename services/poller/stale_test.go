package poller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/lease"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

func TestIsStale(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	node := func(interval int, scheduled time.Time) streams.NodeDue {
		return streams.NodeDue{ExecutionID: "e", JobID: "j", OLTID: "o", IntervalSeconds: interval, ScheduledAt: scheduled}
	}
	for _, tc := range []struct {
		name  string
		node  streams.NodeDue
		now   time.Time
		stale bool
	}{
		{"on time", node(300, at), at, false},
		{"late, within the interval", node(300, at), at.Add(299 * time.Second), false},
		{"exactly at scheduled + interval", node(300, at), at.Add(300 * time.Second), false},
		{"just past scheduled + interval", node(300, at), at.Add(300*time.Second + time.Nanosecond), true},
		{"two intervals late (poller outage)", node(300, at), at.Add(600 * time.Second), true},
		{"interval 0 never goes stale", node(0, at), at.Add(24 * time.Hour), false},
		{"negative interval never goes stale", node(-5, at), at.Add(24 * time.Hour), false},
		{"no scheduled_at never goes stale", node(300, time.Time{}), at, false},
		{"scheduled in the future", node(60, at.Add(time.Minute)), at, false},
		{"other time zone, same instant", node(60, at.In(time.FixedZone("ART", -3*3600))), at.Add(61 * time.Second), true},
		// Time in the planner's per-OLT queue does not count: staleness
		// runs from the dispatch.
		{"waited in the OLT queue, fresh since dispatch", dispatched(node(60, at), at.Add(5*time.Minute)), at.Add(5*time.Minute + 30*time.Second), false},
		{"dispatched, then an interval in the poller queue", dispatched(node(60, at), at.Add(5*time.Minute)), at.Add(6*time.Minute + time.Nanosecond), true},
		{"dispatched without scheduled_at", dispatched(node(60, time.Time{}), at), at.Add(61 * time.Second), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isStale(tc.node, tc.now); got != tc.stale {
				t.Fatalf("isStale = %v, want %v", got, tc.stale)
			}
		})
	}
}

func dispatched(n streams.NodeDue, at time.Time) streams.NodeDue {
	n.DispatchedAt = at
	return n
}

func TestStaleReasonNamesScheduleAndInterval(t *testing.T) {
	n := streams.NodeDue{IntervalSeconds: 300, ScheduledAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.FixedZone("ART", -3*3600))}
	want := "stale: scheduled at 2026-11-21T13:00:00Z, interval 300s; a newer run supersedes it"
	if got := staleReason(n); got != want {
		t.Fatalf("reason %q, want %q", got, want)
	}
}

// After a poller outage the NodeDue queued meanwhile are not replayed: one
// scheduled two intervals ago is skipped (an execution.skipped event, no
// lease, not one SNMP request), while a fresh one on another OLT runs.
func TestStaleNodeDueIsSkippedNotRun(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage},
		huaweiOLT("olt-stale", oltsim.Faults{}), huaweiOLT("olt-fresh", oltsim.Faults{}))

	stale := e.nodeDue("olt-stale", "exec-stale", "job-disc")
	stale.ScheduledAt = time.Now().UTC().Add(-2 * time.Duration(stale.IntervalSeconds) * time.Second)
	stale.Attempt = 2 // a retry's NodeDue: the skip says which dispatch it was
	fresh := e.nodeDue("olt-fresh", "exec-fresh", "job-disc")
	// Both are queued before any poller runs, as during an outage.
	e.publishNodeDue(t, stale)
	e.publishNodeDue(t, fresh)
	_, reg := e.startPoller(t, Config{PollerID: "p1", Workers: 1})

	ev := e.waitEnded(t, "olt-fresh", "exec-fresh", 30*time.Second)
	if len(ev.succeeded) != 1 || len(ev.failed) != 0 || len(ev.skipped) != 0 {
		t.Fatalf("fresh node: %d succeeded, %d failed, %d skipped", len(ev.succeeded), len(ev.failed), len(ev.skipped))
	}
	var sk execEvents
	waitFor(t, 30*time.Second, "execution.skipped of exec-stale", func() bool {
		sk = e.execEvents(t, "olt-stale", "exec-stale")
		return len(sk.skipped) > 0
	})
	if len(sk.skipped) != 1 || len(sk.started)+len(sk.succeeded)+len(sk.failed) != 0 {
		t.Fatalf("stale node: %d skipped, %d started, %d succeeded, %d failed", len(sk.skipped), len(sk.started), len(sk.succeeded), len(sk.failed))
	}
	s := sk.skipped[0]
	if s.JobID != "job-disc" || s.OLTID != "olt-stale" || s.PollerID != "p1" || s.Attempt != 2 || !s.ScheduledAt.Equal(stale.ScheduledAt) ||
		s.SkippedAt.Before(stale.ScheduledAt) || !strings.HasPrefix(s.Reason, "stale: scheduled at ") {
		t.Fatalf("skipped event %+v", s)
	}
	if id := sk.skippedMsgIDs[0]; id != "exec-stale:2:skipped" {
		t.Fatalf("Nats-Msg-Id %q, want exec-stale:2:skipped", id)
	}
	if n := e.fleet.OLT("olt-stale").Record().Requests; n != 0 {
		t.Fatalf("the stale node sent %d SNMP requests", n)
	}
	if e.fleet.OLT("olt-fresh").Record().Requests == 0 {
		t.Fatal("the fresh node sent no SNMP request")
	}
	// No lease was ever taken: not even a delete marker of a released one.
	if holder, held := e.leaseHolder(t, "olt-stale"); held {
		t.Fatalf("lease of olt-stale held by %s", holder)
	}
	kvStream, err := e.JS.Stream(e.ctx, "KV_"+streams.BucketLeases)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kvStream.GetLastMsgForSubject(e.ctx, "$KV."+streams.BucketLeases+"."+lease.Key("olt-stale")); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("lease bucket has a record for olt-stale (err %v)", err)
	}
	e.waitPollerQueueEmpty(t)
	if n := counter(t, reg, "facho_poller_nodes_skipped_total"); n != 1 {
		t.Fatalf("facho_poller_nodes_skipped_total = %v, want 1", n)
	}
	if n := counter(t, reg, "facho_poller_executions_total"); n != 1 {
		t.Fatalf("facho_poller_executions_total = %v, want 1 (the fresh node only)", n)
	}
}

// A NodeDue that waits on a busy OLT past its node's next run is stale on
// its next delivery: it is skipped, not run late, and the lease it waited
// for is never taken.
func TestNodeDueBusyPastItsIntervalIsSkipped(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	other, err := lease.Open(e.ctx, e.JS, streams.BucketLeases, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	held, err := other.Acquire(e.ctx, "olt-a", lease.Info{ExecutionID: "long-walk"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = held.Release(context.Background()) })

	node := e.nodeDue("olt-a", "exec-busy", "job-get")
	node.IntervalSeconds = 2
	node.ScheduledAt = time.Now().UTC()
	e.publishNodeDue(t, node)
	_, reg := e.startPoller(t, Config{PollerID: "p1", Workers: 1, LeaseBusyDelay: 100 * time.Millisecond})

	var ev execEvents
	waitFor(t, 30*time.Second, "execution.skipped of exec-busy", func() bool {
		ev = e.execEvents(t, "olt-a", "exec-busy")
		return len(ev.skipped) > 0
	})
	if counter(t, reg, "facho_poller_lease_busy_total") == 0 {
		// Only on a machine so loaded that the first delivery came two
		// seconds late; the outage test covers that path.
		t.Skip("the NodeDue was already stale at its first delivery")
	}
	if len(ev.skipped) != 1 || len(ev.started)+len(ev.succeeded)+len(ev.failed) != 0 {
		t.Fatalf("%d skipped, %d started, %d succeeded, %d failed", len(ev.skipped), len(ev.started), len(ev.succeeded), len(ev.failed))
	}
	if holder, ok := e.leaseHolder(t, "olt-a"); !ok || !strings.Contains(holder, "someone-else") {
		t.Fatalf("lease of olt-a: %q (held %v), want still someone-else's", holder, ok)
	}
	if held.Err() != nil {
		t.Fatalf("the other holder lost its lease: %v", held.Err())
	}
	if n := e.fleet.OLT("olt-a").Record().Requests; n != 0 {
		t.Fatalf("the skipped node sent %d SNMP requests", n)
	}
	e.waitPollerQueueEmpty(t)
	if n := counter(t, reg, "facho_poller_nodes_skipped_total"); n != 1 {
		t.Fatalf("facho_poller_nodes_skipped_total = %v, want 1", n)
	}
}

// waitPollerQueueEmpty waits until the poller consumer has nothing pending
// or unacknowledged: every NodeDue was acked.
func (e *testEnv) waitPollerQueueEmpty(t *testing.T) {
	t.Helper()
	waitFor(t, 30*time.Second, "poller consumer drained", func() bool {
		c, err := e.JS.Consumer(e.ctx, streams.StreamSchedule, streams.ConsumerPoller)
		if err != nil {
			return false
		}
		info, err := c.Info(e.ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
}

// A NodeDue whose OLT stays busy through every delivery ends as skipped on
// its last one instead of vanishing at MaxDeliver with its execution left
// PENDING: every NodeDue ends.
func TestNodeDueBusyOnEveryDeliveryEndsSkipped(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	c, err := e.JS.Consumer(e.ctx, streams.StreamSchedule, streams.ConsumerPoller)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.CachedInfo().Config
	cfg.MaxDeliver = 3
	if _, err := e.JS.UpdateConsumer(e.ctx, streams.StreamSchedule, cfg); err != nil {
		t.Fatal(err)
	}
	other, err := lease.Open(e.ctx, e.JS, streams.BucketLeases, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	held, err := other.Acquire(e.ctx, "olt-a", lease.Info{ExecutionID: "long-walk"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = held.Release(context.Background()) })

	node := e.nodeDue("olt-a", "exec-busy", "job-get")
	node.IntervalSeconds = 3600 // never stale within the test
	node.ScheduledAt = time.Now().UTC()
	e.publishNodeDue(t, node)
	_, reg := e.startPoller(t, Config{PollerID: "p1", Workers: 1, LeaseBusyDelay: 50 * time.Millisecond})

	var ev execEvents
	waitFor(t, 30*time.Second, "execution.skipped of exec-busy", func() bool {
		ev = e.execEvents(t, "olt-a", "exec-busy")
		return len(ev.skipped) > 0
	})
	if len(ev.skipped) != 1 || len(ev.started)+len(ev.succeeded)+len(ev.failed) != 0 {
		t.Fatalf("%d skipped, %d started, %d succeeded, %d failed", len(ev.skipped), len(ev.started), len(ev.succeeded), len(ev.failed))
	}
	if r := ev.skipped[0].Reason; !strings.Contains(r, "busy on all 3 deliveries") {
		t.Fatalf("reason %q", r)
	}
	if n := counter(t, reg, "facho_poller_lease_busy_total"); n != 3 {
		t.Fatalf("lease busy %v times, want 3 (one per delivery)", n)
	}
	e.waitPollerQueueEmpty(t)
}
