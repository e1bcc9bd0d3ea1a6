package quotaplan

import (
	"sort"
	"time"
)

// Run is one execution of a task scheduled in the hour.
type Run struct {
	// ScheduledAt is when the planner had the run due (NodeDue.scheduled_at).
	ScheduledAt time.Time
	// Duration is the run's time (execution succeeded or failed); Timed
	// false when the run has none (pending, running, skipped, interrupted,
	// aborted): the mean of the timed runs stands in for it.
	Duration time.Duration
	Timed    bool
}

// Plan is what Expected says of an hour.
type Plan struct {
	// Expected is the number of runs the hour owes: the runs scheduled in it
	// plus the missed opportunities (at least 1).
	Expected int
	// Missed is the opportunities with no run (Expected minus the runs).
	Missed int
	// NextDue is the next opportunity after the hour's last run: its next
	// due time, earlier by the time the hour lost to late starts (the zero
	// time when the hour has no run).
	NextDue time.Time
	// Cycle is interval + the mean duration of the hour's timed runs: the
	// step between two opportunities.
	Cycle time.Duration
}

// Slack is the lateness forgiven: how late a run may start after its due
// time without losing the schedule time, and how close to the end of the
// hour a due time may be and still not be owed by the hour: a tenth of the
// interval, at most 30 s.
func Slack(interval time.Duration) time.Duration {
	return min(interval/10, 30*time.Second)
}

// Expected applies the rule (see the package doc) to the hour starting at
// start of a task with this interval; ranBefore says whether the task had
// a run scheduled in the hour before. runs need not be sorted; runs
// outside the hour are ignored. An interval of 0 or less owes one run.
func Expected(interval time.Duration, start time.Time, ranBefore bool, runs []Run) Plan {
	end := start.Add(time.Hour)
	in := make([]Run, 0, len(runs))
	var (
		sum     time.Duration
		timed   int
		longest time.Duration
	)
	for _, r := range runs {
		if r.ScheduledAt.Before(start) || !r.ScheduledAt.Before(end) {
			continue
		}
		in = append(in, r)
		if r.Timed {
			d := max(r.Duration, 0)
			sum += d
			timed++
			longest = max(longest, d)
		}
	}
	if interval <= 0 {
		return Plan{Expected: max(1, len(in))}
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].ScheduledAt.Before(in[j].ScheduledAt) })
	mean := time.Duration(0)
	if timed > 0 {
		mean = sum / time.Duration(timed)
	}
	p := Plan{Cycle: interval + mean}
	if len(in) == 0 {
		// Nothing scheduled in the hour: a task that ran before owes the
		// hour's cycles from its latest first due time; one that did not
		// (a row without runs does not exist) owes one.
		if ranBefore {
			p.NextDue = start
			p.Missed = Remaining(start, start, end, p.Cycle, Slack(interval))
		}
		p.Expected = max(1, p.Missed)
		return p
	}
	// A run's next is due at its scheduled time + its duration + the
	// interval + the time from its scheduled time to its start (its
	// lateness), which the rows do not hold: the gap to the next run shows
	// it. Lateness up to Slack is forgiven (the planner's tick, a busy
	// moment); beyond it, the time is lost to the schedule, and the hour
	// owes the opportunities that time would have held.
	slack := Slack(interval)
	dues := make([]time.Time, len(in))
	for i, r := range in {
		d := mean
		if r.Timed {
			d = max(r.Duration, 0)
		}
		dues[i] = r.ScheduledAt.Add(d + interval)
	}
	var lost, late time.Duration
	for i := 0; i+1 < len(in); i++ {
		switch l := in[i+1].ScheduledAt.Sub(dues[i]); {
		case l > slack:
			lost += l - slack
		case l > late:
			late = l
		}
	}
	if ranBefore {
		// Its first run was due at the latest at the hour + the interval +
		// the longest run (the hour before's last run, on time).
		if l := in[0].ScheduledAt.Sub(start.Add(interval + longest + slack)); l > 0 {
			lost += l
		}
	}
	// The next opportunity: the last run's next due time (with the
	// forgiven lateness seen), earlier by the time lost.
	p.NextDue = dues[len(dues)-1].Add(late - lost)
	p.Missed = Remaining(p.NextDue, p.NextDue, end, p.Cycle, slack)
	p.Expected = len(in) + p.Missed
	return p
}

// Remaining is how many opportunities, one every cycle from nextDue, begin
// from now (or nextDue, if later) to more than slack before end. A nextDue
// up to slack in the past counts from itself: its run is late, not gone.
func Remaining(nextDue, now, end time.Time, cycle, slack time.Duration) int {
	if nextDue.IsZero() || cycle <= 0 {
		return 0
	}
	t := nextDue
	if now.After(nextDue.Add(slack)) {
		// The opportunities before now are gone: the first left is the
		// first of the grid nextDue + k*cycle not before now.
		k := (now.Sub(nextDue) + cycle - 1) / cycle
		t = nextDue.Add(k * cycle)
	}
	last := end.Add(-slack)
	if !t.Before(last) {
		return 0
	}
	return int((last.Sub(t)-1)/cycle) + 1
}
