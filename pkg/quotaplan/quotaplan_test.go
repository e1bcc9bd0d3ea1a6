package quotaplan

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var h0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

// schedule plays the planner's rule: a run due at next starts late after
// it (or when an outage that covers its start ends) and takes dur(i); the
// next is due at its start + its duration + interval. Runs are scheduled
// from first until until.
func schedule(interval, late time.Duration, dur func(i int) time.Duration, first, until time.Time, outage [2]time.Time) []Run {
	var runs []Run
	for next, i := first, 0; next.Before(until); i++ {
		start := next.Add(late)
		if !start.Before(outage[0]) && start.Before(outage[1]) {
			start = outage[1]
		}
		d := dur(i)
		runs = append(runs, Run{ScheduledAt: next, Duration: d, Timed: true})
		next = start.Add(d + interval).Truncate(time.Millisecond)
	}
	return runs
}

func inHour(runs []Run, start time.Time) int {
	n := 0
	for _, r := range runs {
		if !r.ScheduledAt.Before(start) && r.ScheduledAt.Before(start.Add(time.Hour)) {
			n++
		}
	}
	return n
}

func fixed(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }

// TestExpectedHealthy: a task that ran every time it was due owes exactly
// the runs it had, every hour, whatever its run time (0 to more than the
// interval), lateness and phase; the hour it starts in owes the runs from
// its first.
func TestExpectedHealthy(t *testing.T) {
	for _, tc := range []struct {
		interval time.Duration
		dur      func(int) time.Duration
		name     string
	}{
		{5 * time.Minute, fixed(0), "0"},
		{5 * time.Minute, fixed(3 * time.Millisecond), "3ms"},
		{5 * time.Minute, fixed(2 * time.Second), "2s"},
		{5 * time.Minute, fixed(time.Minute), "60s"},
		{5 * time.Minute, fixed(150 * time.Second), "150s"},
		{5 * time.Minute, fixed(299 * time.Second), "299s"},
		{5 * time.Minute, fixed(5 * time.Minute), "300s"},
		{5 * time.Minute, fixed(7 * time.Minute), "420s"},
		{5 * time.Minute, fixed(20 * time.Minute), "1200s"},
		{5 * time.Minute, func(i int) time.Duration { return time.Duration(i%7) * 10 * time.Second }, "0-60s varying"},
		{15 * time.Minute, fixed(40 * time.Second), "40s"},
		{15 * time.Minute, fixed(16 * time.Minute), "16m"},
		{time.Minute, fixed(61 * time.Second), "61s"},
		{30 * time.Second, fixed(0), "0"},
		{30 * time.Second, fixed(45 * time.Second), "45s"},
		{2 * time.Hour, fixed(time.Second), "1s"},
	} {
		for _, late := range []time.Duration{0, 40 * time.Millisecond, 2 * time.Second} {
			for _, phase := range []time.Duration{0, 1 * time.Millisecond, 17 * time.Second, 2*time.Minute + 31*time.Second} {
				name := fmt.Sprintf("interval %s run %s late %s phase %s", tc.interval, tc.name, late, phase)
				first := h0.Add(-3*time.Hour + phase)
				runs := schedule(tc.interval, late, tc.dur, first, h0.Add(4*time.Hour), [2]time.Time{})
				for h := -3; h < 3; h++ {
					start := h0.Add(time.Duration(h) * time.Hour)
					n := inHour(runs, start)
					if n == 0 {
						continue // an interval over an hour: no tracker that hour
					}
					ranBefore := h > -3 && inHour(runs, start.Add(-time.Hour)) > 0
					p := Expected(tc.interval, start, ranBefore, runs)
					if p.Expected != n || p.Missed != 0 {
						t.Errorf("%s, hour %d: expected %d (missed %d), want the %d it ran", name, h, p.Expected, p.Missed, n)
					}
				}
			}
		}
	}
}

// TestExpectedMissed: runs the planner could not start (it was down) are
// owed, at the start, in the middle and at the end of the hour: a run due
// in an outage is scheduled at its due time and starts when the planner
// is back, late; the time beyond the forgiven lateness is lost, and the
// opportunities it would have held are owed. Runs that always start
// minutes late (a saturated queue) owe the runs the delays cost.
func TestExpectedMissed(t *testing.T) {
	iv := 5 * time.Minute
	for _, tc := range []struct {
		name       string
		dur        time.Duration
		outage     [2]time.Time
		stop       time.Time // no run scheduled from then
		wantMissed int
	}{
		{"20 min down mid-hour", 3 * time.Millisecond, [2]time.Time{h0.Add(20 * time.Minute), h0.Add(40 * time.Minute)}, h0.Add(2 * time.Hour), 4},
		{"20 min down mid-hour, 60 s runs", time.Minute, [2]time.Time{h0.Add(20 * time.Minute), h0.Add(40 * time.Minute)}, h0.Add(2 * time.Hour), 2},
		{"down across the hour's start", 0, [2]time.Time{h0.Add(-2 * time.Minute), h0.Add(25 * time.Minute)}, h0.Add(2 * time.Hour), 5},
		{"stopped at :30", 0, [2]time.Time{}, h0.Add(30 * time.Minute), 6},
		{"stopped at :30, 60 s runs", time.Minute, [2]time.Time{}, h0.Add(30 * time.Minute), 5},
		{"down the last 12 minutes", 0, [2]time.Time{h0.Add(48 * time.Minute), h0.Add(70 * time.Minute)}, h0.Add(2 * time.Hour), 1},
		{"every run 4 min late", 0, [2]time.Time{}, h0.Add(2 * time.Hour), 4},
	} {
		late := 5 * time.Millisecond
		if strings.HasPrefix(tc.name, "every run") {
			late = 4 * time.Minute
		}
		runs := schedule(iv, late, fixed(tc.dur), h0.Add(-time.Hour+7*time.Second), tc.stop, tc.outage)
		n := inHour(runs, h0)
		p := Expected(iv, h0, true, runs)
		if p.Missed != tc.wantMissed || p.Expected != n+tc.wantMissed {
			t.Errorf("%s: expected %d missed %d, want %d missed %d (%d runs)", tc.name, p.Expected, p.Missed, n+tc.wantMissed, tc.wantMissed, n)
		}
	}
}

// TestExpectedFirstHour: a task new in the hour owes the runs from its
// first one; untimed runs (pending, skipped) use the timed ones' mean.
func TestExpectedFirstHour(t *testing.T) {
	at := func(m float64) time.Time { return h0.Add(time.Duration(m * float64(time.Minute))) }
	for _, tc := range []struct {
		name     string
		interval time.Duration
		runs     []Run
		want     Plan
	}{
		{"enabled at :50, 15 min", 15 * time.Minute, []Run{{ScheduledAt: at(50)}}, Plan{Expected: 1, NextDue: at(65), Cycle: 15 * time.Minute}},
		{"enabled at :40, one run pending, 5 min", 5 * time.Minute, []Run{{ScheduledAt: at(40)}},
			Plan{Expected: 4, Missed: 3, NextDue: at(45), Cycle: 5 * time.Minute}},
		{"skipped run uses the mean", 5 * time.Minute, []Run{{ScheduledAt: at(40), Duration: time.Minute, Timed: true}, {ScheduledAt: at(46)}},
			Plan{Expected: 4, Missed: 2, NextDue: at(52), Cycle: 6 * time.Minute}},
		{"no interval", 0, []Run{{ScheduledAt: at(1)}, {ScheduledAt: at(2)}}, Plan{Expected: 2}},
		{"runs outside the hour ignored", 30 * time.Minute, []Run{{ScheduledAt: at(-1)}, {ScheduledAt: at(10)}, {ScheduledAt: at(60)}},
			Plan{Expected: 2, Missed: 1, NextDue: at(40), Cycle: 30 * time.Minute}},
	} {
		if got := Expected(tc.interval, h0, false, tc.runs); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestRemaining(t *testing.T) {
	end := h0.Add(time.Hour)
	at := func(m float64) time.Time { return h0.Add(time.Duration(m * float64(time.Minute))) }
	cyc, slack := 5*time.Minute, 30*time.Second
	for _, tc := range []struct {
		name         string
		nextDue, now time.Time
		want         int
	}{
		{"from :40 at :30", at(40), at(30), 4},
		{"from :40 at :40", at(40), at(40), 4},
		{"due 10 s ago: late, not gone", at(40), at(40).Add(10 * time.Second), 4},
		{"due 2 min ago: gone", at(40), at(42), 3},
		{"due :59:40 (within the slack)", at(59.67), at(50), 0},
		{"due :59:20", at(59.33), at(50), 1},
		{"hour over", at(55), at(61), 0},
		{"no next due", time.Time{}, at(10), 0},
	} {
		if got := Remaining(tc.nextDue, tc.now, end, cyc, slack); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
