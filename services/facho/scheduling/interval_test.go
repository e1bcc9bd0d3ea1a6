package scheduling_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

// A changed interval re-plans at once (PLAN_ADJUSTED) and the runs that
// follow come the new interval after the end of the previous one.
func TestIntervalChangeReplans(t *testing.T) {
	e := newEnv(t, 2, oltsim.Faults{})
	job := streams.JobUpserted{ID: "status", Name: "status", BrandID: "huawei", Kind: streams.KindBulkWalk,
		OIDIDs: []string{"hw-status"}, IntervalSeconds: 1, Priority: 40, Enabled: true}
	e.job(job)
	e.brand()
	e.startPoller("p1", prometheus.NewRegistry())
	e.startPlanner(planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond, FirstRunSpread: -1})
	node := "status." + e.olts[0]
	waitFor(t, 30*time.Second, "2 runs at 1 s", func() bool { return len(byNode(e.runs())[node]) >= 2 })

	job.IntervalSeconds = 3
	e.publish(streams.SubjectJob(job.ID), job)
	waitFor(t, 30*time.Second, "PLAN_ADJUSTED", func() bool {
		for _, a := range e.audits() {
			if a.Kind == streams.AuditPlanAdjusted && a.OLTID == e.olts[0] && a.Details["interval_seconds"] == float64(3) && a.Details["old_interval_seconds"] == float64(1) {
				return true
			}
		}
		return false
	})
	// Runs that ended from now on were planned with the new interval.
	applied := time.Now()
	var after int
	waitFor(t, 60*time.Second, "2 runs planned after the change", func() bool {
		rs := byNode(e.runs())[node]
		after = 0
		for i := 1; i < len(rs); i++ {
			if rs[i-1].succeeded != nil && rs[i-1].succeeded.FinishedAt.After(applied) {
				after++
			}
		}
		return after >= 2
	})
	rs := byNode(e.runs())[node]
	checked := 0
	for i := 1; i < len(rs); i++ {
		prev := rs[i-1]
		if prev.succeeded == nil || !prev.succeeded.FinishedAt.After(applied) {
			continue
		}
		if want := prev.succeeded.FinishedAt.Add(3 * time.Second).Truncate(time.Millisecond); !rs[i].due.ScheduledAt.Equal(want) {
			t.Errorf("run %d scheduled at %s, want the previous end + the new 3 s interval %s", i, rs[i].due.ScheduledAt, want)
		}
		checked++
	}
	if checked < 2 {
		t.Fatalf("only %d runs after the change checked", checked)
	}
}
