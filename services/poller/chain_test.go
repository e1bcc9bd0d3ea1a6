package poller

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// A composite NodeDue runs its master, then its chain in order, under one
// lease, each as its own execution; a failure stops the chain only with
// stop_on_failure (the rest are then skipped, so every execution ends).
func TestCompositeNodeRunsItsChainUnderOneLease(t *testing.T) {
	for _, tc := range []struct {
		name          string
		masterKind    string
		stopOnFailure bool
		want          map[string]string // execution -> terminal phase
	}{
		{"all succeed", streams.KindBulkWalk, false, map[string]string{"m": "succeeded", "c1": "succeeded", "c2": "succeeded"}},
		{"master fails, the chain goes on", "bogus", false, map[string]string{"m": "failed", "c1": "succeeded", "c2": "succeeded"}},
		{"master fails, stop on failure", "bogus", true, map[string]string{"m": "failed", "c1": "skipped", "c2": "skipped"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{Latency: 5 * time.Millisecond}))
			node := e.nodeDue("olt-a", "m", "job-m")
			node.Kind = tc.masterKind
			node.StopOnFailure = tc.stopOnFailure
			node.Attempt = 1
			node.Chain = []streams.ChainedNode{
				{ExecutionID: "c1", JobID: "job-c1", Kind: streams.KindBulkWalk, OIDs: huaweiColumns[2:3], TimeoutSeconds: 30},
				{ExecutionID: "c2", JobID: "job-c2", Kind: streams.KindBulkWalk, OIDs: huaweiColumns[:1], TimeoutSeconds: 30},
			}
			e.publishNodeDue(t, node)
			e.startPoller(t, Config{PollerID: "p1", Workers: 2})
			ended := func(ev execEvents) string {
				switch {
				case len(ev.succeeded) > 0:
					return "succeeded"
				case len(ev.failed) > 0:
					return "failed"
				case len(ev.skipped) > 0:
					return "skipped"
				}
				return ""
			}
			got := map[string]execEvents{}
			waitFor(t, 30*time.Second, "every execution of the composite ended", func() bool {
				for id := range tc.want {
					got[id] = e.execEvents(t, "olt-a", id)
					if ended(got[id]) == "" {
						return false
					}
				}
				return true
			})
			for id, want := range tc.want {
				if g := ended(got[id]); g != want {
					t.Errorf("%s ended %s, want %s", id, g, want)
				}
			}
			// One lease for the whole composite: every attempt carries the
			// same revision, and the chain ran after the master, in order.
			var rev uint64
			var prevEnd time.Time
			for _, id := range []string{"m", "c1", "c2"} {
				ev := got[id]
				if len(ev.started) == 0 {
					if ev.skipped == nil || !strings.Contains(ev.skipped[0].Reason, "chain stopped") {
						t.Errorf("%s did not start and has no chain-stopped skip: %+v", id, ev)
					} else if ev.skipped[0].Attempt != 1 || ev.skippedMsgIDs[0] != id+":1:skipped" {
						t.Errorf("%s skipped as attempt %d, Nats-Msg-Id %q; want the NodeDue's attempt 1, %s:1:skipped", id, ev.skipped[0].Attempt, ev.skippedMsgIDs[0], id)
					}
					continue
				}
				s := ev.started[0]
				if rev == 0 {
					rev = s.LeaseRevision
				}
				if s.LeaseRevision != rev {
					t.Errorf("%s ran under lease revision %d, the master under %d", id, s.LeaseRevision, rev)
				}
				if s.StartedAt.Before(prevEnd) {
					t.Errorf("%s started at %s before the previous node ended at %s", id, s.StartedAt, prevEnd)
				}
				switch {
				case len(ev.succeeded) > 0:
					prevEnd = ev.succeeded[0].FinishedAt
				case len(ev.failed) > 0:
					prevEnd = ev.failed[0].FinishedAt
				}
			}
			// The poller releases the lease after it publishes the last
			// node's end: the release may come just after that event.
			waitFor(t, 10*time.Second, "the lease released after the composite", func() bool {
				_, held := e.leaseHolder(t, "olt-a")
				return !held
			})
			if mc := e.fleet.OLT("olt-a").Record().MaxConcurrent; mc > 1 {
				t.Fatalf("%d concurrent requests", mc)
			}
			e.waitPollerQueueEmpty(t)
		})
	}
}

// A composite the planner cancelled before it started (its task
// disabled) ends whole: one execution.aborted for the master and one for
// each chained node, each with its own Nats-Msg-Id <execution>:aborted, so
// a second delivery of the NodeDue records none twice. The planner's
// flight of the composite waits for every one of them; without the
// chained ones the OLT's queue waited for the stuck timeout.
func TestCancelledCompositeAbortsEveryExecution(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	node := e.nodeDue("olt-a", "m", "job-m")
	node.Attempt = 1
	node.Chain = []streams.ChainedNode{
		{ExecutionID: "c1", JobID: "job-c1", Kind: streams.KindBulkWalk, OIDs: huaweiColumns[2:3], TimeoutSeconds: 30},
		{ExecutionID: "c2", JobID: "job-c2", Kind: streams.KindBulkWalk, OIDs: huaweiColumns[:1], TimeoutSeconds: 30},
	}
	e.cancel(t, streams.ExecutionCancel{ExecutionID: "m", OLTID: "olt-a", JobID: "job-m", Mode: streams.CancelPending, Reason: "job disabled"})
	e.publishNodeDue(t, node)
	e.publishNodeDue(t, node) // a duplicate delivery: aborted again, recorded once
	e.startPoller(t, Config{PollerID: "p1", Workers: 1})
	jobs := map[string]string{"m": "job-m", "c1": "job-c1", "c2": "job-c2"}
	got := map[string]execEvents{}
	waitFor(t, 30*time.Second, "every execution of the composite aborted", func() bool {
		for id := range jobs {
			got[id] = e.execEvents(t, "olt-a", id)
			if len(got[id].aborted) == 0 {
				return false
			}
		}
		return true
	})
	e.waitPollerQueueEmpty(t)
	for id, job := range jobs {
		ev := e.execEvents(t, "olt-a", id)
		if len(ev.aborted) != 1 || len(ev.started)+len(ev.succeeded)+len(ev.failed)+len(ev.skipped) != 0 {
			t.Errorf("%s: events %+v; want one execution.aborted and nothing else", id, ev)
			continue
		}
		a := ev.aborted[0]
		if a.JobID != job || a.OLTID != "olt-a" || a.PollerID != "p1" || !strings.Contains(a.Reason, "job disabled") || a.AbortedAt.IsZero() {
			t.Errorf("%s: execution.aborted %+v", id, a)
		}
		if want := id + ":aborted"; ev.abortedMsgIDs[0] != want {
			t.Errorf("%s: Nats-Msg-Id %q, want %q", id, ev.abortedMsgIDs[0], want)
		}
	}
	if n := e.fleet.OLT("olt-a").Record().Requests; n != 0 {
		t.Fatalf("an aborted composite sent %d SNMP requests", n)
	}
	if h, held := e.leaseHolder(t, "olt-a"); held {
		t.Fatalf("lease still held by %s", h)
	}
}

// A composite NodeDue that comes stale (a poller outage) ends whole: one
// execution.skipped for the master and one for each chained node, each
// with the NodeDue's attempt and its own Nats-Msg-Id
// <execution>:<attempt>:skipped, so a second delivery records none twice.
// The planner's flight of the composite waits for every one of them;
// without the chained ones the OLT's queue waited for the stuck timeout.
func TestStaleCompositeSkipsEveryExecution(t *testing.T) {
	e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
	node := e.nodeDue("olt-a", "m", "job-m")
	node.ScheduledAt = time.Now().UTC().Add(-2 * time.Duration(node.IntervalSeconds) * time.Second)
	node.Attempt = 2 // a retry's NodeDue: every skip says which dispatch it was
	node.Chain = []streams.ChainedNode{
		{ExecutionID: "c1", JobID: "job-c1", Kind: streams.KindBulkWalk, OIDs: huaweiColumns[2:3], TimeoutSeconds: 30},
		{ExecutionID: "c2", JobID: "job-c2", Kind: streams.KindBulkWalk, OIDs: huaweiColumns[:1], TimeoutSeconds: 30},
	}
	e.publishNodeDue(t, node)
	e.publishNodeDue(t, node) // a duplicate delivery: skipped again, recorded once
	_, reg := e.startPoller(t, Config{PollerID: "p1", Workers: 1})
	jobs := map[string]string{"m": "job-m", "c1": "job-c1", "c2": "job-c2"}
	waitFor(t, 30*time.Second, "every execution of the composite skipped", func() bool {
		for id := range jobs {
			if len(e.execEvents(t, "olt-a", id).skipped) == 0 {
				return false
			}
		}
		return true
	})
	e.waitPollerQueueEmpty(t)
	for id, job := range jobs {
		ev := e.execEvents(t, "olt-a", id)
		if len(ev.skipped) != 1 || len(ev.started)+len(ev.succeeded)+len(ev.failed)+len(ev.aborted)+len(ev.interrupted) != 0 {
			t.Errorf("%s: events %+v; want one execution.skipped and nothing else", id, ev)
			continue
		}
		s := ev.skipped[0]
		if s.JobID != job || s.OLTID != "olt-a" || s.PollerID != "p1" || s.Attempt != 2 || !s.ScheduledAt.Equal(node.ScheduledAt) ||
			s.SkippedAt.Before(node.ScheduledAt) || !strings.Contains(s.Reason, "stale: scheduled at ") {
			t.Errorf("%s: execution.skipped %+v", id, s)
		}
		if want := id + ":2:skipped"; ev.skippedMsgIDs[0] != want {
			t.Errorf("%s: Nats-Msg-Id %q, want %q", id, ev.skippedMsgIDs[0], want)
		}
	}
	if n := e.fleet.OLT("olt-a").Record().Requests; n != 0 {
		t.Fatalf("a stale composite sent %d SNMP requests", n)
	}
	if h, held := e.leaseHolder(t, "olt-a"); held {
		t.Fatalf("lease held by %s", h)
	}
	// One skipped NodeDue per delivery: the metric counts nodes, not
	// executions.
	if n := counter(t, reg, "facho_poller_nodes_skipped_total"); n != 2 {
		t.Fatalf("facho_poller_nodes_skipped_total = %v, want 2 (two deliveries)", n)
	}
}
