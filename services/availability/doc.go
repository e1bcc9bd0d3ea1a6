// Package availability tells whether each OLT answers, Zabbix-style, and
// publishes it as events: available, unreachable, unavailable.
//
// Data flow (one active replica, the holder of the leader lease in KV
// facho_availability_leader; the others stand by):
//
//	FACHO_OLT facho.olt.*.availability (last per subject) --> restored states
//	FACHO_CONFIG olt.upserted/deleted, olt.auto_disabled/auto_enabled --> OLTs to probe
//	FACHO_EXEC execution.failed (no answer) / succeeded (read something) --> observations
//	KV facho_leases (the OLT's lease, tried without waiting) --> probe or skip
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
// bound the probes in flight and each OLT has at most one.
//
// A probe never overlaps a walk (probe.go, leasedProber): it tries the
// OLT's lease in KV facho_leases, the one a poller holds for a walk,
// without waiting, and releases it right after the GET. Held by another
// (a walk in progress: no evidence that the OLT does not answer), the
// probe is skipped, the OLT's state does not change and it is tried again
// a Recheck later; facho_availability_probes_skipped_total{reason} counts
// it (olt_busy, lease_error, lease_lost). A service that dies mid-probe
// leaves the key to expire after the bucket's TTL, as a dead poller's.
// A poller is not starved: a probe holds the lease for one GET (at most
// ProbeTimeout x (1+ProbeRetries)), at most once per Recheck per OLT, and
// a poller that finds it busy tries again within a second. When the
// bucket does not answer, probes are skipped (lease_error), never sent
// without the lease, and states stay as they are until it answers: a
// replica cut off from NATS loses its leader lease anyway, and with no
// OLT lease no poller walks either, so nothing is dispatched to the OLTs
// meanwhile.
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
