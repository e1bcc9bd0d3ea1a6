package scheduling_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/services/poller"
	"github.com/facho-olt/facho/streams"
)

// Disabling an OLT mid-walk: its walk stops (no SNMP request after the
// interruption), its lease is released, the execution ends INTERRUPTED and
// nothing more is dispatched on it; the other OLTs are untouched.
func TestDisableOLTMidWalk(t *testing.T) {
	e := newEnvShape(t, 4, oltsim.Faults{Latency: 50 * time.Millisecond}, oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 16})
	e.job(streams.JobUpserted{ID: "disc", Name: "discovery", BrandID: "huawei", Kind: streams.KindDiscovery,
		OIDIDs: []string{"hw-serial", "hw-status"}, IntervalSeconds: 2, Priority: 90, Enabled: true})
	e.brand()
	e.startPollerCfg(poller.Config{PollerID: "p1", Workers: 4, Classes: anyClass(4), MaxRepetitions: 2}, prometheus.NewRegistry())
	e.startPlanner(planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 200 * time.Millisecond, FirstRunSpread: -1})

	victim := e.olts[0]
	var running *run
	waitFor(t, 60*time.Second, "a walk running on "+victim, func() bool {
		for _, r := range e.runs() {
			if r.due.OLTID == victim && len(r.started) > 0 && !r.ended() {
				running = r
				return true
			}
		}
		return false
	})
	disabledAt := time.Now()
	e.publish(streams.SubjectOLT(victim), e.olt(victim, false))
	var got *run
	waitFor(t, 30*time.Second, "the walk to end", func() bool {
		got = e.runs()[running.due.ExecutionID]
		return got.ended()
	})
	if got.interrupt == nil || got.succeeded != nil || !strings.Contains(got.interrupt.Reason, "OLT disabled") {
		t.Fatalf("execution %s: interrupted %+v, succeeded %+v", running.due.ExecutionID, got.interrupt, got.succeeded)
	}
	if e.leaseHeld(victim) {
		t.Fatal("the disabled OLT's lease is still held")
	}
	requests := e.fleet.OLT(victim).Record().Requests
	dues := 0
	for _, r := range e.runs() {
		if r.due.OLTID == victim {
			dues++
		}
	}
	// The others go on: each gets two more successful runs.
	count := func() map[string]int {
		out := map[string]int{}
		for _, r := range e.runs() {
			if r.succeeded != nil {
				out[r.due.OLTID]++
			}
		}
		return out
	}
	before := count()
	waitFor(t, 60*time.Second, "two more runs on every other OLT", func() bool {
		now := count()
		for _, o := range e.olts[1:] {
			if now[o] < before[o]+2 {
				return false
			}
		}
		return true
	})
	for _, r := range e.runs() {
		if r.due.OLTID != victim && r.interrupt != nil {
			t.Errorf("%s on another OLT interrupted", r.due.NodeID)
		}
	}
	after := 0
	for _, r := range e.runs() {
		if r.due.OLTID == victim {
			after++
		}
	}
	if after != dues {
		t.Fatalf("%d NodeDue for the disabled OLT after it was disabled", after-dues)
	}
	if n := e.fleet.OLT(victim).Record().Requests; n != requests {
		t.Fatalf("%d SNMP requests to the disabled OLT after its walk ended", n-requests)
	}
	var audited bool
	for _, a := range e.audits() {
		audited = audited || (a.Kind == streams.AuditExecAborted && a.OLTID == victim && a.Details["execution_id"] == running.due.ExecutionID)
	}
	if !audited {
		t.Error("no EXECUTION_ABORTED audit for the cancelled execution")
	}
	t.Logf("OLT disabled -> execution.interrupted published after %s", got.endPublished.Sub(disabledAt))
}

// Disabling a task: its run dispatched but not started yet (PENDING) ends
// ABORTED, and it is not dispatched again.
func TestDisableTaskAbortsItsPendingExecution(t *testing.T) {
	e := newEnv(t, 2, oltsim.Faults{})
	job := streams.JobUpserted{ID: "status", Name: "status", BrandID: "huawei", Kind: streams.KindBulkWalk,
		OIDIDs: []string{"hw-status"}, IntervalSeconds: 60, Priority: 40, Enabled: true}
	e.job(job)
	e.brand()
	// No poller yet: the dispatched NodeDue stay PENDING.
	e.startPlanner(planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond, FirstRunSpread: -1})
	waitFor(t, 30*time.Second, "both NodeDue dispatched", func() bool { return len(e.runs()) == 2 })
	job.Enabled = false
	e.publish(streams.SubjectJob(job.ID), job)
	waitFor(t, 30*time.Second, "two EXECUTION_ABORTED audits", func() bool {
		n := 0
		for _, a := range e.audits() {
			if a.Kind == streams.AuditExecAborted {
				n++
			}
		}
		return n == 2
	})
	e.startPoller("p1", prometheus.NewRegistry())
	waitFor(t, 30*time.Second, "both executions ended", func() bool {
		for _, r := range e.runs() {
			if !r.ended() {
				return false
			}
		}
		return true
	})
	for id, r := range e.runs() {
		if r.aborted == nil || r.aborted.Reason != "job disabled" || len(r.started) != 0 {
			t.Errorf("%s: aborted %+v, started %d", id, r.aborted, len(r.started))
		}
	}
	for _, o := range e.olts {
		if n := e.fleet.OLT(o).Record().Requests; n != 0 {
			t.Errorf("%s got %d SNMP requests from an aborted execution", o, n)
		}
	}
}
