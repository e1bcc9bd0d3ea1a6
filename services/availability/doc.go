// Package availability tells whether each OLT answers, Zabbix-style, and
// publishes it as events: available, unreachable, unavailable.
//
// Data flow (one active replica, the holder of the leader lease in KV
// facho_availability_leader; the others stand by):
//
//	FACHO_OLT facho.olt.*.availability (last per subject) --> restored states
//	FACHO_CONFIG olt.upserted/deleted, olt.auto_disabled/auto_enabled --> OLTs to probe
//	FACHO_EXEC execution.failed (no answer) / succeeded (read something) --> observations
//	probe workers (sysUpTime.0 GET, gosnmp, bounded pool) --> observations
//	observations + ticks --> Tracker (tracker.go: the pure state machine)
//	    --> facho.olt.<olt_id>.availability (OLTAvailability, on each change)
//	    --> facho.audit.availability (OLT_UNREACHABLE, OLT_UNAVAILABLE, OLT_AVAILABLE)
//	    --> facho.config.olt_disabled.<olt_id> olt.auto_enabled + OLT_ENABLED audit
//
// Rules: the first unanswered request (a probe, or an execution attempt
// whose error says the OLT did not answer) makes the OLT unreachable at
// once; it is rechecked every Recheck (15 s); unreachable for
// UnavailableAfter (45 s) it is unavailable (the planner dispatches
// nothing to it); the first answer makes it available. An available OLT
// is probed every ProbeInterval (60 s), a new, re-enabled or re-addressed
// OLT at once (one known available when a term starts: at an offset of
// the interval by its id, so a restart does not burst into every OLT), so one that never answers (a typo in its address or
// community) is unavailable within about 50 s. A probe is one GET with its
// own gosnmp client, ProbeTimeout (2 s) and ProbeRetries (1); Workers
// bound the probes in flight and each OLT has at most one. Probes do not
// take the per-OLT lease: they are one small request.
//
// Exactly once: a state is published only when it differs from the last
// one published for the OLT, with Nats-Msg-Id avail:<olt>:<state>:<since>;
// a new term first reads the last message of each OLT's subject and starts
// from it, so a restart or a fail-over never publishes a state again. A
// failed publish is retried at the next tick under the same id.
//
// Recovery of an auto-disabled OLT: an OLT the planner auto-disabled
// (olt.auto_disabled: consecutive failed executions) keeps being probed,
// every Recheck. After RecoverProbes (3) consecutive answered probes
// counted from the disable, this service publishes olt.auto_enabled on the
// same subject as the disable (so that subject's last message says whether
// the OLT is auto-disabled) with Nats-Msg-Id
// auto-enable:<olt>:<the disable's execution>, once per disable, and an
// OLT_ENABLED audit event (the auditor writes the coordinator log and
// sends the olt_enabled notification). The planner folds it like the end
// of the disable and plans the OLT again. The service publishes it itself,
// rather than asking the planner, because it holds the evidence (the
// probes) and the planner need not learn a probe count: the planner
// publishes the disable, the prober the recovery, each what it knows. An
// OLT a person disabled (olt.upserted enabled=false) is not probed and is
// never re-enabled: an olt.upserted ends the auto-disable in both
// services' state.
package availability
