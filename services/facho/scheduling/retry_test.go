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

func fastFailPoller(id string) poller.Config {
	return poller.Config{PollerID: id, Workers: 2, Classes: anyClass(2), SNMPTimeout: 200 * time.Millisecond, SNMPRetries: -1}
}

// A failed attempt is retried after the job's retry delay, as another
// attempt of the same execution; the retry succeeds and the next run is
// planned from its end.
func TestRetryThenSucceed(t *testing.T) {
	e := newEnv(t, 1, oltsim.Faults{NoAnswer: true})
	olt := e.olts[0]
	e.job(streams.JobUpserted{ID: "disc", Name: "discovery", BrandID: "huawei", Kind: streams.KindDiscovery,
		OIDIDs: []string{"hw-serial"}, IntervalSeconds: 5, Priority: 90, Enabled: true, MaxRetries: 2, RetryDelaySeconds: 1})
	e.brand()
	e.startPollerCfg(fastFailPoller("p1"), prometheus.NewRegistry())
	e.startPlanner(planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond, FirstRunSpread: -1})

	var first *run
	waitFor(t, 30*time.Second, "the first attempt to fail", func() bool {
		for _, r := range e.runs() {
			if len(r.failed) > 0 {
				first = r
				return true
			}
		}
		return false
	})
	e.fleet.OLT(olt).SetFaults(oltsim.Faults{})
	var r *run
	waitFor(t, 30*time.Second, "the retry to succeed", func() bool {
		r = e.runs()[first.due.ExecutionID]
		return r.succeeded != nil
	})
	if len(r.failed) != 1 || r.failed[0].Attempt != 1 || r.failed[0].Redelivered || r.succeeded.Attempt != 2 || len(r.started) != 2 {
		t.Fatalf("attempts: failed %+v, succeeded %+v, %d started", r.failed, r.succeeded, len(r.started))
	}
	// The retry came after the job's retry delay (1 s), not before.
	if gap := r.started[1].StartedAt.Sub(r.failed[0].FinishedAt); gap < time.Second {
		t.Fatalf("retry started %s after the failure, want >= 1s", gap)
	}
	waitFor(t, 60*time.Second, "the next run", func() bool { return len(byNode(e.runs())["disc."+olt]) >= 2 })
	next := byNode(e.runs())["disc."+olt][1]
	if want := r.succeeded.FinishedAt.Add(5 * time.Second).Truncate(time.Millisecond); !next.due.ScheduledAt.Equal(want) {
		t.Fatalf("next run at %s, want the retry's end + interval %s", next.due.ScheduledAt, want)
	}
}

// Three failed executions in a row disable the OLT: an olt.auto_disabled
// with the reason, an OLT_DISABLED audit, nothing dispatched
// after; re-enabling it resets the count and runs resume.
func TestThreeFailuresDisableTheOLT(t *testing.T) {
	e := newEnv(t, 2, oltsim.Faults{})
	bad := e.olts[0]
	e.fleet.OLT(bad).SetFaults(oltsim.Faults{NoAnswer: true})
	e.job(streams.JobUpserted{ID: "disc", Name: "discovery", BrandID: "huawei", Kind: streams.KindDiscovery,
		OIDIDs: []string{"hw-serial"}, IntervalSeconds: 1, Priority: 90, Enabled: true, MaxRetries: -1}) // no retries (0: the class's 3)
	e.brand()
	e.startPollerCfg(fastFailPoller("p1"), prometheus.NewRegistry())
	e.startPlanner(planner.Config{Tick: 50 * time.Millisecond, FirstRunDelay: 100 * time.Millisecond, FirstRunSpread: -1})

	var disabled streams.OLTAutoDisabled
	waitFor(t, 60*time.Second, "the OLT disabled", func() bool {
		for _, env := range e.read(streams.StreamConfig, streams.SubjectOLTDisabled(bad)) {
			if streams.DecodeData(env, &disabled) == nil {
				return true
			}
		}
		return false
	})
	if !strings.Contains(disabled.Reason, "3 consecutive failed executions") || disabled.DisabledAt.IsZero() || disabled.Failures != 3 || disabled.ID != bad {
		t.Fatalf("auto-disable event %+v", disabled)
	}
	var audit streams.AuditEvent
	waitFor(t, 30*time.Second, "OLT_DISABLED audit", func() bool {
		for _, a := range e.audits() {
			if a.Kind == streams.AuditOLTDisabled && a.OLTID == bad {
				audit = a
				return true
			}
		}
		return false
	})
	if audit.Level != streams.LevelCritical || audit.Details["reason"] != disabled.Reason {
		t.Fatalf("audit %+v", audit)
	}
	failed := 0
	for _, r := range e.runs() {
		if r.due.OLTID == bad && r.finalFailure() != nil {
			failed++
		}
	}
	if failed != 3 {
		t.Fatalf("%d failed executions on %s, want exactly 3 before it was disabled", failed, bad)
	}
	// Nothing more on the bad OLT; the good one goes on.
	dues := len(byNode(e.runs())["disc."+bad])
	good := len(byNode(e.runs())["disc."+e.olts[1]])
	waitFor(t, 30*time.Second, "two more runs on the good OLT", func() bool { return len(byNode(e.runs())["disc."+e.olts[1]]) >= good+2 })
	if n := len(byNode(e.runs())["disc."+bad]); n != dues {
		t.Fatalf("%d NodeDue for the disabled OLT", n-dues)
	}

	// Re-enabled by a person (and fixed): OLT_ENABLED, and it runs again.
	e.fleet.OLT(bad).SetFaults(oltsim.Faults{})
	e.publish(streams.SubjectOLT(bad), e.olt(bad, true))
	waitFor(t, 30*time.Second, "a success on the re-enabled OLT", func() bool {
		for _, r := range e.runs() {
			if r.due.OLTID == bad && r.succeeded != nil {
				return true
			}
		}
		return false
	})
	enabled := false
	for _, a := range e.audits() {
		enabled = enabled || (a.Kind == streams.AuditOLTEnabled && a.OLTID == bad)
	}
	if !enabled {
		t.Fatal("no OLT_ENABLED audit")
	}
}
