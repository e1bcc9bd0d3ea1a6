// Package planner knows every brand, OID, OLT, job, job-OLT assignment and
// workflow (replayed from the FACHO_CONFIG stream) and dispatches a NodeDue
// when a node, one job on one OLT (or a composite node: a workflow's master
// and its chain), is due: Zabbix style (seed 004), due when next_run_at <=
// now, no catch-up, delayed nodes first, then by delay, then priority.
//
// Layout, one job per file:
//   - state.go: the configuration as the stream says it is, which nodes
//     are plannable (and since when), workflows as composite nodes;
//   - schedule.go: the pure scheduling rules (first run, next run = end of
//     the run + interval, retries, interval changes) on an injected clock;
//   - queue.go: one queue per OLT, at most one (composite) node in flight
//     per OLT, seed 004's order;
//   - emit.go: queueing due nodes, dispatching, the end of a flight
//     (retry or next run), aborting a removed node's work;
//   - exec.go: the terminal execution events (an ordered consumer on
//     FACHO_EXEC) that end flights;
//   - persist.go: the persisted schedule (KV facho_schedule), written
//     after each step, restored by a new term;
//   - disable.go: consecutive failures per OLT and the auto-disable;
//   - getfirst.go: a get waits for its OLT's first known ONU (below);
//   - manual.go: manual runs (node.run_requested from the API);
//   - report.go: the queue report (KV facho_planner_leader, key queue);
//   - class.go: the queue class of a dispatch (seed 001: high_priority for
//     a manual run, retry for attempt > 1, discovery for kind discovery,
//     polling for the other kinds), the last token of the NodeDue's
//     subject facho.schedule.due.<olt>.<class>, picking the poller
//     consumer;
//   - planner.go: Run: the leader lease, terms, the loop.
//
// The loop (one goroutine owns all state): configuration events re-plan at
// once (Scheduler.Sync, audited); every Tick the due nodes move into their
// OLT's queue and every free OLT dispatches its first waiting node; a
// terminal event (succeeded, failed and not redelivered, skipped, aborted,
// interrupted) of the execution in flight frees its OLT and dispatches the
// next waiting node at once (a few ms, not the poller's 1 s busy NAK loop,
// which stays as the safety net). A composite's flight ends with the last
// of its executions; its next run counts from that end.
//
// A new OLT's first readings: a get reads the ONUs its OLT's discoveries
// found, so a get run before any is known reads nothing (it fails
// no_onus_known). The rule: while an OLT has no ONU known (its ONU set in
// facho_olt_snmp, or a discovered event in FACHO_ONU) and one is coming
// (the OLT has a discovery node whose first run has not ended, or whose
// last run succeeded less than Config.ONUFoldWait ago), its get nodes are
// held in its queue (Queues.SetHold): its other nodes, the discovery
// first, go ahead; the get is dispatched at the first tick after the
// first ONU is known (looked up at most every Config.ONUKnownRecheck),
// that is right after the discovery succeeded and the projector folded
// it. A hold never lasts more than the get's interval past its scheduled
// time, a manual run is never held, and an OLT without a discovery node,
// or whose discovery failed, holds nothing (its gets fail visibly). The
// nodes of one OLT that become plannable together (a new OLT and its
// jobs) are no burst: their first runs are not spread, so a new OLT's
// discovery runs FirstRunDelay after it is added and its first Rx
// readings follow within the first minute or so.
//
// Failures that are not retried: a failed execution whose cause says the
// OLT answered but read nothing worth a success (oid_not_increasing,
// empty_read, no_onus_known, profile_mismatch: streams.ExecCauseRead)
// ends its flight at once (no retry with backoff: the OLT would answer
// the same); it counts towards the OLT's consecutive failures like any
// other, and the node's next run is its end + interval.
//
// Restart and fail-over: replicas compete for a KV leader lease; the holder
// runs a term: it replays the configuration, restores the persisted
// schedule (next runs, flights, retries) and reads terminal events from a
// little before its oldest restored flight. Dispatch ids derive from (job,
// OLT, scheduled time), so a run the previous leader dispatched without
// persisting it is dispatched again under the same id, dropped by the
// stream, and recognised as ended from its terminal event. A flight whose
// terminal event never comes is freed after interval + timeout +
// StuckGrace.
//
// Cancellation: a node that leaves the plan (its task or OLT disabled or
// deleted) loses its dispatched run through facho_cancel (the poller
// aborts or interrupts it) and its runs not dispatched yet: a retry still
// in its backoff or waiting in the OLT's queue, whose execution's last
// event is the failed or lost attempt before it, is ended by the planner's
// own execution.aborted (Nats-Msg-Id "<execution_id>:aborted", the
// poller's, so it is recorded once), also when the change came while no
// planner ran; a first run never dispatched has no event to end.
package planner
