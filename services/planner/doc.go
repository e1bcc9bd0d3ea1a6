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
//   - getfirst.go: a get waits for its OLT's first known ONU (below);
//   - manual.go: manual runs (node.run_requested from the API);
//   - report.go: the queue report (KV facho_planner_leader, key queue);
//   - class.go: the queue class of a dispatch (seed 001: high_priority for
//     a manual run, retry for attempt > 1, discovery for kind discovery,
//     polling for the other kinds), the last token of the NodeDue's
//     subject facho.schedule.due.<olt>.<class>, picking the poller
//     consumer;
//   - capacity.go: the poller processes' slots per queue class, followed
//     in the KV bucket facho_pollers;
//   - classgate.go: dispatching within each class's free slots (Room,
//     ReadyIn, PopIn);
//   - classreport.go: the backlog per class in the queue report and its
//     gauges;
//   - planner.go: Run: the leader lease, terms, the loop.
//
// Queue classes, end to end: the planner dispatches a node only into a
// free slot of its class, so a dispatched node never waits in a poller
// for a slot (and never goes stale there), and a full class holds back
// neither another class nor another OLT:
//
//	facho_pollers KV (each process: its slots, each labelled with a class,
//	FREE/BUSY; its workers cap)  --watch-->  capacity per class C(c),
//	total T (sum over processes of min(workers, slots))
//	flights (dispatched, not ended) per class F(c), in all F
//	room(c) = C(c) - F(c); room(total) = T - F
//	due node -> its OLT's queue -> ReadyIn: every waiting node of every
//	free OLT in seed 004's order (manual, delayed, most delayed,
//	priority, due time); each OLT takes its first node whose class (and
//	the total) has room; an OLT whose best node's class is full gives its
//	next node of a class with room; the rest waits here, in the planner.
//	terminal event -> the flight's slot is free -> ReadyIn again (once per
//	batch of finishes): the freed slot goes to the most urgent node of its
//	class on any free OLT.
//
// One node in flight per OLT stays. Capacity unknown (no live poller
// reports a class, the bucket missing, pollers from before classes): that
// class is not limited, and the planner dispatches as it did before
// classes (the node waits in its class's consumer; a poller that takes it
// too late skips it as stale). A poller that dies: its in-flight runs end
// (execution.interrupted when its lease expires) and free their flights;
// its slots stay counted until its key is deleted or not rewritten for
// the bucket's TTL, so up to its slots' worth of nodes may meanwhile wait
// in a consumer for a live slot. A class's limit changed: the processes
// rewrite their slots, the next dispatch uses them; with fewer slots than
// flights the class dispatches nothing until its flights drop below. N
// pollers add up; a new leader rebuilds the flights per class from the
// restored schedule (each restored flight's class from its node's kind,
// attempt and manual flag) and the capacity from the bucket. Nothing
// starves inside a class: a waiting node only gets more delayed, and
// delayed nodes go first.
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
// (the OLT has a discovery node whose first run has not ended, whose last
// run was skipped, or whose last run succeeded less than
// Config.ONUFoldWait ago), its get nodes are
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
// planner ran; a first run waiting in the OLT's queue when its node leaves
// is aborted the same way (the audit event names its execution, which can
// then be opened).
//
// Retries: a failed attempt is retried after the job's retry delay (or the
// class backoff); an attempt lost with its poller (execution.interrupted
// after its lease expired: the lease is free) at once, in the retry class
// (retryAt).
package planner
