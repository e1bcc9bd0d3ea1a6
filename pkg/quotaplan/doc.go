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
//   - after a run, the next one is due at its start plus its duration plus
//     the interval; the rows hold the scheduled time, not the start, so the
//     gap to the next run shows how late the run started. Lateness up to
//     Slack is forgiven; beyond it, the time is lost to the schedule;
//   - at the start of the hour: a task that is new in the hour (no run in the
//     hour before) starts with its first run; one that ran the hour before
//     had its first run due at the latest at the hour plus the interval plus
//     the longest run seen in the hour (plus Slack): any later is lost too;
//   - at the end: from the last run's next due time, made earlier by the
//     time lost, every cycle (interval plus mean run time) that begins more
//     than Slack before the hour's end is an opportunity: owed and missed,
//     once the hour is over; still possible, while it runs.
//
// So an hour that ran every time it was due owes exactly its runs; one
// whose runs were not dispatched (the planner down, a saturated queue) owes
// the runs the lost time would have held.
//
// The auditor stores Expected as quota_required (its live and rebuild paths
// both call Expected), NextDue and Cycle on the tracker; the API calls
// Remaining with the clock to show a running hour's risk.
package quotaplan
