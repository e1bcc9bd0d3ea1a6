// Package planner knows every brand, OID, OLT, job and job-OLT assignment
// (replayed from the FACHO_CONFIG stream) and emits a NodeDue event when a
// node, one job on one OLT, is due (Zabbix style: due when next_run_at <=
// now, no catch-up, delayed nodes first, then priority).
//
// Layout, one job per file:
//   - state.go: the configuration as the stream says it is, and which nodes
//     are plannable (and since when);
//   - schedule.go: the pure scheduling rules (next run, missed runs, interval
//     changes, ordering) driven by an injected clock;
//   - nodedue.go: NodeDue payloads and their deterministic ids;
//   - planner.go: Run, wiring the stream, the tick loop and the publishers.
//
// Seams for the full scheduling issue:
//   - Composite nodes (master + chain, seed 004): Node carries one job; a
//     composite becomes a Node whose Spec lists the chained jobs after the
//     master (state.nodeSpec builds it, NodeDue grows a Chain field). Only the
//     master's interval and next run live in Scheduler, which already treats
//     a Node as one unit.
//   - "Next waiting node of an OLT starts at once": Scheduler.Due returns
//     every due node; a per-OLT queue that holds back all but one per OLT and
//     releases the next when an execution event (FACHO_EXEC succeeded/failed)
//     arrives plugs in between Scheduler.Due and publishDue in planner.go
//     (a second ordered consumer on FACHO_EXEC feeding the same loop).
//   - Persisted schedule / failover: Scheduler.Sync restores a node's next run
//     from the grid anchored at the time the node became plannable (from the
//     stream), so two planners compute the same scheduled times and the
//     NodeDue Nats-Msg-Id drops the second copy. A persisted schedule (a KV
//     bucket of next_run_at per node, written after each emission) would
//     replace restoreNext in schedule.go; a leader lease in KV would gate
//     publishDue.
package planner
