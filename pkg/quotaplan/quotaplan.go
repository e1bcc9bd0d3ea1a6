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
	// NextDue is when the run after the hour's last one is due (the zero
	// time when the hour has no run).
	NextDue time.Time
	// Cycle is interval + the mean duration of the hour's timed runs: the
	// step between two opportunities.
	Cycle time.Duration
}

// Slack is how close to the end of the hour a due time may be and still
// not be owed by the hour: a tenth of the interval, at most 30 s. It
// absorbs the time between a run's scheduled time and its start, which
// the hour's rows do not record.
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
	// interval + the time from its scheduled time to its start, which the
	// rows do not hold: the gaps between runs less than a cycle apart
	// show it (late), and the latest seen stands in for it where no next
	// run shows it (the hour's start and end).
	dues := make([]time.Time, len(in))
	var late time.Duration
	for i, r := range in {
		d := mean
		if r.Timed {
			d = max(r.Duration, 0)
		}
		dues[i] = r.ScheduledAt.Add(d + interval)
		if i > 0 {
			if l := r.ScheduledAt.Sub(dues[i-1]); l > late && l < p.Cycle {
				late = l
			}
		}
	}
	if ranBefore {
		p.Missed += gap(start.Add(interval+longest+late), in[0].ScheduledAt, p.Cycle)
	}
	for i := 0; i+1 < len(in); i++ {
		p.Missed += gap(dues[i], in[i+1].ScheduledAt, p.Cycle)
	}
	p.NextDue = dues[len(dues)-1].Add(late)
	p.Missed += Remaining(p.NextDue, p.NextDue, end, p.Cycle, Slack(interval))
	p.Expected = len(in) + p.Missed
	return p
}

// gap is the opportunities missed between a due time and the next run
// scheduled at next: the whole cycles between them (a run less than a
// cycle late took its opportunity).
func gap(due, next time.Time, cycle time.Duration) int {
	if cycle <= 0 || !next.After(due) {
		return 0
	}
	return int(next.Sub(due) / cycle)
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
