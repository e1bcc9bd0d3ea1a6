package poller

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

func (e *testEnv) cancel(t *testing.T, ec streams.ExecutionCancel) {
	t.Helper()
	kv, err := e.JS.KeyValue(e.ctx, streams.BucketCancel)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ec)
	if _, err := kv.Put(e.ctx, streams.CancelKey(ec.ExecutionID), b); err != nil {
		t.Fatal(err)
	}
}

// A NodeDue the planner cancelled before it started ends ABORTED: no
// SNMP request, the lease free again, the NodeDue acknowledged.
func TestCancelledNodeDueIsAborted(t *testing.T) {
	for _, mode := range []string{streams.CancelPending, streams.CancelAll} {
		t.Run(mode, func(t *testing.T) {
			e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, huaweiOLT("olt-a", oltsim.Faults{}))
			node := e.nodeDue("olt-a", "exec-1", "job-disc")
			e.cancel(t, streams.ExecutionCancel{ExecutionID: "exec-1", OLTID: "olt-a", JobID: "job-disc", Mode: mode, Reason: "job disabled"})
			e.publishNodeDue(t, node)
			e.startPoller(t, Config{PollerID: "p1", Workers: 1})
			var ev execEvents
			waitFor(t, 30*time.Second, "execution.aborted", func() bool {
				ev = e.execEvents(t, "olt-a", "exec-1")
				return len(ev.aborted) > 0
			})
			if len(ev.aborted) != 1 || ev.aborted[0].Reason != "job disabled" || len(ev.started)+len(ev.succeeded)+len(ev.failed) != 0 {
				t.Fatalf("events %+v", ev)
			}
			if n := e.fleet.OLT("olt-a").Record().Requests; n != 0 {
				t.Fatalf("an aborted node sent %d SNMP requests", n)
			}
			if h, held := e.leaseHolder(t, "olt-a"); held {
				t.Fatalf("lease still held by %s", h)
			}
			e.waitPollerQueueEmpty(t)
		})
	}
}

// Cancelling a running execution with mode "all" (its OLT was disabled)
// stops the walk between two requests, releases the lease and ends the
// execution INTERRUPTED; mode "pending" (a disabled task) lets it finish.
func TestCancelInterruptsARunningWalk(t *testing.T) {
	for _, tc := range []struct {
		mode        string
		interrupted bool
	}{{streams.CancelAll, true}, {streams.CancelPending, false}} {
		t.Run(tc.mode, func(t *testing.T) {
			slow := huaweiOLT("olt-a", oltsim.Faults{Latency: 60 * time.Millisecond})
			e := newTestEnv(t, streams.Options{Storage: jetstream.MemoryStorage}, slow)
			node := e.nodeDue("olt-a", "exec-1", "job-disc")
			e.publishNodeDue(t, node)
			e.startPoller(t, Config{PollerID: "p1", Workers: 1, MaxRepetitions: 2})
			waitFor(t, 30*time.Second, "started", func() bool { return len(e.execEvents(t, "olt-a", "exec-1").started) > 0 })
			e.cancel(t, streams.ExecutionCancel{ExecutionID: "exec-1", OLTID: "olt-a", JobID: "job-disc", Mode: tc.mode, Reason: "OLT disabled"})

			var ev execEvents
			waitFor(t, 60*time.Second, "the end", func() bool {
				ev = e.execEvents(t, "olt-a", "exec-1")
				return len(ev.interrupted)+len(ev.succeeded)+len(ev.failed) > 0
			})
			if !tc.interrupted {
				if len(ev.succeeded) != 1 || len(ev.interrupted) != 0 {
					t.Fatalf("a running execution of a disabled task must finish: %+v", ev)
				}
				return
			}
			if len(ev.interrupted) != 1 || len(ev.succeeded)+len(ev.failed) != 0 {
				t.Fatalf("events %+v", ev)
			}
			in := ev.interrupted[0]
			if in.Attempt != 1 || in.PollerID != "p1" || !in.Cancelled || !strings.Contains(in.Reason, "OLT disabled") || in.LeaseRevision == 0 {
				t.Fatalf("interrupted %+v", in)
			}
			// The lease is released after the interrupted event is
			// published: the release may come just after it.
			waitFor(t, 10*time.Second, "the lease released after the interruption", func() bool {
				_, held := e.leaseHolder(t, "olt-a")
				return !held
			})
			// The walk stopped: no request after the interruption.
			before := e.fleet.OLT("olt-a").Record().Requests
			time.Sleep(500 * time.Millisecond)
			if after := e.fleet.OLT("olt-a").Record().Requests; after != before {
				t.Fatalf("%d SNMP requests after the interruption", after-before)
			}
			for _, b := range e.batches(t, "olt-a", "exec-1") {
				if b.Last {
					t.Fatal("an interrupted walk published a Last batch")
				}
			}
			e.waitPollerQueueEmpty(t)
		})
	}
}
