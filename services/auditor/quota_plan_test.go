package auditor_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/auditor"
	"github.com/facho-olt/facho/streams"
)

// planned is one event of a simulated planner and poller.
type planned struct {
	subject string
	at      time.Time
	ev      streams.Event
}

// simulateRuns plays the planner's rule for a 5-minute poll of olt: the
// run due at next starts 30 ms later (or when an outage of the planner
// that covers that time ends), takes dur(i), and the next is due an
// interval after it ENDS; no run is scheduled from stop on. It returns the
// NodeDue, started and succeeded events of each run.
func simulateRuns(olt string, first, stop time.Time, dur func(int) time.Duration, outage [2]time.Time) []planned {
	const interval = 5 * time.Minute
	var out []planned
	for next, i := first, 0; next.Before(stop); i++ {
		exec := fmt.Sprintf("%s-%d", olt, i)
		start := next.Add(30 * time.Millisecond)
		if !start.Before(outage[0]) && start.Before(outage[1]) {
			start = outage[1]
		}
		d := dur(i)
		end := start.Add(d)
		nd := nodeDue(exec, olt, next)
		nd.JobID, nd.NodeID, nd.JobName, nd.IntervalSeconds = "poll", "poll:"+olt, "Poll", int(interval/time.Second)
		out = append(out,
			planned{streams.SubjectNodeDue(olt), next, nd},
			planned{streams.SubjectExec(olt, streams.PhaseStarted), start, streams.ExecutionStarted{ExecutionID: exec, JobID: "poll", OLTID: olt,
				PollerID: "p1", Attempt: 1, StartedAt: start}},
			planned{streams.SubjectExec(olt, streams.PhaseSucceeded), end, streams.ExecutionSucceeded{ExecutionID: exec, JobID: "poll", OLTID: olt,
				PollerID: "p1", Attempt: 1, StartedAt: start, FinishedAt: end, DurationMS: d.Milliseconds(), Varbinds: 10, Batches: 1}})
		next = end.Add(interval).Truncate(time.Millisecond)
	}
	return out
}

// TestQuotasFollowTheSchedule: over two simulated hours (a fake clock),
// OLTs whose 5-minute polls ran every time they were due, in 4 ms, 60 s,
// 7 minutes (longer than the interval) or 2 to 90 s, close every hour
// COMPLETED with no violation, although none of them ran 3600/300 = 12
// times in every hour; an OLT whose planner was down 20 minutes of the
// first hour and stopped at :30 of the second does not: both its hours are
// violations.
func TestQuotasFollowTheSchedule(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	h10 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	fixed := func(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }
	never := [2]time.Time{}
	healthy := map[string]func(int) time.Duration{
		"olt-fast":   fixed(4 * time.Millisecond),
		"olt-slow":   fixed(time.Minute),
		"olt-long":   fixed(7 * time.Minute),
		"olt-varied": func(i int) time.Duration { return time.Duration(2+(i*37)%89) * time.Second },
	}
	var evs []planned
	for olt, dur := range healthy {
		evs = append(evs, simulateRuns(olt, h10.Add(-7*time.Minute+3*time.Second), h10.Add(2*time.Hour), dur, never)...)
	}
	// olt-missed: down 10:20-10:40, then no run from 11:30.
	evs = append(evs, simulateRuns("olt-missed", h10.Add(-7*time.Minute+3*time.Second), h10.Add(90*time.Minute), fixed(4*time.Millisecond),
		[2]time.Time{h10.Add(20 * time.Minute), h10.Add(40 * time.Minute)})...)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	// runsIn counts olt's runs scheduled in the hour from start.
	runsIn := func(olt string, start time.Time) int {
		n := 0
		for _, e := range evs {
			if nd, ok := e.ev.(streams.NodeDue); ok && nd.OLTID == olt && !nd.ScheduledAt.Before(start) && nd.ScheduledAt.Before(start.Add(time.Hour)) {
				n++
			}
		}
		return n
	}

	clk := newClock(h10.Add(-time.Hour))
	stop := startAuditor(t, env.JS, db, auditor.Config{LogFile: "-", Quota: auditor.QuotaConfig{CheckEvery: 50 * time.Millisecond}}, clk.now)
	defer stop()
	published := 0
	// Each hour: the events up to the hourly check (its end plus the
	// grace), in time order, then the clock at the check.
	for _, hour := range []time.Time{h10, h10.Add(time.Hour)} {
		check := hour.Add(time.Hour + 5*time.Minute + time.Second)
		for ; published < len(evs) && evs[published].at.Before(check); published++ {
			publish(t, env.JS, evs[published].subject, evs[published].at, evs[published].ev)
		}
		waitQuotaConsumers(ctx, t, env.JS, db)
		clk.set(check)
		for olt := range healthy {
			waitFor(t, olt+"'s hour checked", func() bool { r, _ := trackerOf(t, db, olt, "poll", hour); return r.checked })
			r, _ := trackerOf(t, db, olt, "poll", hour)
			n := runsIn(olt, hour)
			if r.status != auditor.QuotaCompleted || r.required != n || r.completed != n {
				t.Errorf("%s %s: %+v, want COMPLETED %d of %d", olt, hour.Format("15:04"), r, n, n)
			}
		}
		waitFor(t, "olt-missed's hour checked", func() bool { r, _ := trackerOf(t, db, "olt-missed", "poll", hour); return r.checked })
		r, _ := trackerOf(t, db, "olt-missed", "poll", hour)
		if n := runsIn("olt-missed", hour); r.status == auditor.QuotaCompleted || r.completed != n || r.required <= n {
			t.Errorf("olt-missed %s: %+v (%d runs), want more required than run, not COMPLETED", hour.Format("15:04"), r, n)
		}
	}
	var bad, missed int
	waitFor(t, "olt-missed's violations", func() bool {
		_ = db.QueryRow(ctx, `SELECT count(*) FROM quota_violations WHERE olt_id = 'olt-missed' AND period_start >= $1`, h10).Scan(&missed)
		return missed == 2
	})
	if err := db.QueryRow(ctx, `SELECT count(*) FROM quota_violations WHERE olt_id <> 'olt-missed'`).Scan(&bad); err != nil || bad != 0 {
		t.Errorf("%d violations of healthy OLTs (%v)", bad, err)
	}
}
