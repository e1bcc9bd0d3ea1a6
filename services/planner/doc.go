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
//   - disable.go: consecutive failures per OLT and the auto-disable (an
//     olt.auto_enabled of the availability service ends it and resets the
//     count);
//   - availability.go: the OLTs' availability (ordered consumer on
//     FACHO_OLT, last state per OLT then the changes): a due node of an
//     unavailable OLT is not dispatched but ends as execution.skipped
//     "olt unavailable" (published by the planner, read back like a
//     poller's skip: next run an interval later, no retry spent, the
//     failure count untouched); when the OLT answers again its skipped
//     nodes are due at once and its queue is dispatched;
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
