package scheduling_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/services/poller"
	"github.com/facho-olt/facho/streams"
)

// A manual run goes ahead of the OLT's waiting work (never beside the node
// in flight), under the execution id the API answered, and does not move
// the node's schedule.
func TestManualRunAheadOfTheQueue(t *testing.T) {
	e := newEnvShape(t, 1, oltsim.Faults{Latency: 30 * time.Millisecond}, oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 16})
	olt := e.olts[0]
	e.job(streams.JobUpserted{ID: "disc", Name: "discovery", BrandID: "huawei", Kind: streams.KindDiscovery,
		OIDIDs: []string{"hw-serial", "hw-status"}, IntervalSeconds: 3600, Priority: 90, Enabled: true})
	e.job(streams.JobUpserted{ID: "status", Name: "status", BrandID: "huawei", Kind: streams.KindBulkWalk,
		OIDIDs: []string{"hw-status"}, IntervalSeconds: 3600, Priority: 40, Enabled: true})
	e.brand()
	reg := prometheus.NewRegistry()
	e.startPollerCfg(poller.Config{PollerID: "p1", Workers: 2, Classes: anyClass(2), MaxRepetitions: 2}, reg)
	e.startPlanner(planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond, FirstRunSpread: -1})

	// The discovery runs; the status walk waits behind it.
	waitFor(t, 30*time.Second, "the discovery running", func() bool {
		for _, r := range e.runs() {
			if r.due.JobID == "disc" && len(r.started) > 0 {
				return !r.ended()
			}
		}
		return false
	})
	const manualID = "0b7e2f9e-3c1d-4a57-9d0e-6f1f7b2c9a10"
	e.publish(streams.SubjectManualRun(olt), streams.NodeRunRequested{ExecutionID: manualID, NodeID: "status." + olt, JobID: "status", OLTID: olt, RequestedAt: time.Now().UTC()})
	waitFor(t, 60*time.Second, "the three runs ended", func() bool {
		rs := e.runs()
		return len(rs) == 3 && rs[manualID] != nil && rs[manualID].ended() && rs[manualID].due.ExecutionID != "" &&
			func() bool {
				for _, r := range rs {
					if !r.ended() {
						return false
					}
				}
				return true
			}()
	})
	rs := e.runs()
	manual := rs[manualID]
	disc := byNode(rs)["disc."+olt][0]
	var regular *run
	for _, r := range byNode(rs)["status."+olt] {
		if r.due.ExecutionID != manualID {
			regular = r
		}
	}
	if manual.succeeded == nil || disc.succeeded == nil || regular == nil || regular.succeeded == nil {
		t.Fatalf("runs: manual %+v, disc %+v, regular %+v", manual, disc, regular)
	}
	// Order: discovery, then the manual run, then the waiting status walk.
	if manual.due.DispatchedAt.Before(disc.succeeded.FinishedAt) {
		t.Fatalf("manual run dispatched at %s while the discovery ran until %s", manual.due.DispatchedAt, disc.succeeded.FinishedAt)
	}
	if !regular.due.DispatchedAt.After(manual.succeeded.FinishedAt) {
		t.Fatalf("the waiting status walk (dispatched %s) went before the manual run (ended %s)", regular.due.DispatchedAt, manual.succeeded.FinishedAt)
	}
	// The schedule did not move: the regular run kept its first-run time.
	if !regular.due.ScheduledAt.Equal(disc.due.ScheduledAt) {
		t.Fatalf("regular status run scheduled at %s, want its first run %s", regular.due.ScheduledAt, disc.due.ScheduledAt)
	}
	if busy := counter(t, reg, "facho_poller_lease_busy_total"); busy != 0 {
		t.Fatalf("lease busy %v times: the manual run was dispatched onto a busy OLT", busy)
	}
	audited := false
	for _, a := range e.audits() {
		audited = audited || (a.Kind == streams.AuditManualRun && a.Details["execution_id"] == manualID)
	}
	if !audited {
		t.Fatal("no MANUAL_RUN audit")
	}
}
