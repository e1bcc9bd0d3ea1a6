// Package quotaplan is the rule that says how many runs of a scheduled task
// an hour expects, and how many an hour still running can still get.
//
// The planner starts a task's next run one interval after its previous run
// ENDS (next = start + duration + interval), so an hour does not owe
// 3600/interval runs: it owes the runs that could start in it under that
// rule, given the run times seen. Expected walks the hour's runs in order
// of their scheduled time (the rule's steps are listed below):
//
//	hour's runs (scheduled_at, duration) ──► Expected ──► Plan{Expected, Missed, NextDue, Cycle}
//	                                                          │
//	tracker row (NextDue, Cycle) + now ──► Remaining ─────────┘ runs still possible
//
// The steps:
//
//   - every run that was scheduled in the hour (whatever its outcome) is one
//     opportunity;
//   - after a run, the next one is due at its scheduled time plus its
//     duration plus the interval; a run that starts late (less than one cycle, interval
//     plus mean run time, after that) was late, not missed; each whole cycle
//     between that due time and the next run is a missed opportunity;
//   - a run's start is its scheduled time plus the time it waited to be
//     started, which the rows do not hold: the gaps between runs less than
//     a cycle apart show it, and the longest such wait of the hour is added
//     where no next run shows it (the start and the end of the hour);
//   - at the start of the hour: a task that is new in the hour (no run in the
//     hour before) starts with its first run; one that ran the hour before
//     had its first run due at the latest hour + interval + the longest run
//     seen in the hour, and whole cycles between that and its first run are
//     missed;
//   - at the end: from the last run's next due time, every cycle that begins
//     more than Slack before the hour's end is an opportunity (missed, once
//     the hour is over; still possible, while it runs).
//
// The auditor stores Expected as quota_required (its live and rebuild paths
// both call Expected), NextDue and Cycle on the tracker; the API calls
// Remaining with the clock to show a running hour's risk.
package quotaplan
