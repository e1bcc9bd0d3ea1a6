// Package poller takes NodeDue events, holds the OLT's lease, runs the SNMP
// work and publishes raw varbind batches and the execution's lifecycle.
//
// Queue classes (seed 001): NodeDue come from one durable pull consumer per
// class (streams.ConsumerPollerClass: discovery, polling, retry,
// high_priority), each served by as many workers as the class's
// Config.Classes concurrency, so one class at its limit never holds back
// another; a node without a timeout gets its class's (ClassLimits). The
// planner dispatches a class's NodeDue only into a free slot of the class
// (it follows the slots each process publishes, see Stats below, and
// counts its dispatches not ended), so a NodeDue normally finds a worker
// of its class waiting for it; the stale check (2.) stays the safety net
// for capacity the planner does not know (no poller published yet, a
// poller from before classes) or a process that died with slots counted.
// The
// polling workers also drain the pre-class durable streams.ConsumerPoller
// (NodeDue published on facho.schedule.due.<olt> before classes).
//
// One NodeDue, from its class's consumer:
//
//  1. Decode; a malformed one goes to facho.dlq.poller (pkg/deadletter).
//  2. Stale (now > DispatchedAt (or ScheduledAt) + interval, see isStale):
//     it waited that long in the poller queue (an outage), so it is not run
//     (no catch-up). Publish ExecutionSkipped with the NodeDue's attempt
//     ("<execution_id>:<attempt>:skipped") and ACK; no lease, no SNMP
//     request. A composite's chained executions are skipped with it, each
//     with its own event and the same attempt (the planner's flight ends
//     only when every execution of the composite has ended).
//  3. Acquire the OLT's lease (pkg/lease). Held by someone else: NAK with
//     Config.LeaseBusyDelay (the planner dispatches one node per OLT at a
//     time, so this is the safety net); on the consumer's last delivery,
//     end it as skipped (a composite whole, as in 2) instead of letting it
//     vanish at MaxDeliver.
//  4. Cancelled by the planner (KV facho_cancel, checked under the lease):
//     release the lease, publish ExecutionAborted (one per execution of a
//     composite), ACK. While it runs, a cancellation of mode "all" (its
//     OLT disabled or deleted) stops the walk between two requests: the
//     lease is released and the execution ends with ExecutionInterrupted.
//  5. Attempt number: one more than the execution's ExecutionStarted
//     events already on the OLT's started subject (see attemptNumber).
//  6. Publish ExecutionStarted, then walk each OID's subtree (walk:
//     GETNEXT; discovery and bulkwalk: GETBULK; the node's SNMP tuning may
//     say otherwise, see snmpOp.tuned) or, for a get, read the job's
//     columns at every discovered ONU in adaptive batches (getonus.go,
//     getbatch.go: progressive subdivision, per-ONU failures in the
//     succeeded event and an ONU_READ_FAILED audit event, the PDU size
//     remembered per OLT in streams.BucketOLTSNMP). A request still unanswered
//     after Config.SNMPRetries is sent again with backoff, up to
//     Config.PDURetries times and Config.PDURetryBudget per execution; a
//     walk resumes from the last OID received (see snmpOp.exchange). An
//     agent error ends the walk as a failure, never as a short table.
//     The varbinds are buffered and, when the operation ends, published
//     grouped by table row (rows.go: every column of an ONU in one
//     VarbindBatch row, batches of whole rows of at most Config.BatchSize
//     varbinds, encoded by encode.go), while marking the NodeDue in
//     progress; a buffer of Config.RowBufferVarbinds is published at once.
//     The final batch of a successful walk carries Last=true (an empty one
//     when the buffer was published early and nothing was left, or when
//     the walk found nothing): it tells the projector that every column
//     was walked to its end. A failed or aborted attempt, and a get, never
//     publish one.
//  7. Judge the outcome (verdict.go): an operation that ended without an
//     error but read nothing worth a success is a failure with its own
//     cause, not retried: a get with no ONU known (no_onus_known) or no
//     value read (empty_read), a discovery that found no row in any of
//     its profile's tables (profile_mismatch, and no Last batch, so the
//     OLT's ONUs are not marked removed); a walk whose agent answers an
//     OID not after the one asked fails oid_not_increasing (snmp.go).
//     The poller judges, not the projector: it has the node's columns,
//     what each answered and the OLT's ONU set when the attempt ends,
//     and the verdict must be the terminal event the planner (consecutive
//     failures, retries) and the auditor (quotas) count, before any Last
//     batch is published. The projector's VARBINDS_UNPLACED warning stays
//     for what only decoding tells (rows read but not placeable).
//     Every ExecutionFailed carries its cause (streams.ExecCause*).
//     Every walk and get runs under its node's bounds (bounds.go: rows per
//     table, ONUs per PON and per OLT, varbinds and bytes per execution,
//     from the brand's vendor profile under Config.Bounds); the varbind
//     that would cross one is not buffered and the execution fails
//     bound_exceeded. Values longer than value_bytes are cut to it.
//  8. Publish ExecutionSucceeded or ExecutionFailed, release the lease
//     (the planner dispatches the OLT's next node when it reads the
//     terminal event; that node's poller waits a few ms for the release
//     rather than NAK for LeaseBusyDelay), ACK (or NAK when the RetryPolicy
//     asks for redelivery; ExecutionFailed.Redelivered says so).
//  9. A composite NodeDue (Chain) runs its chained nodes after the master,
//     in order, under the same lease, each as its own execution; with
//     StopOnFailure a failure skips the rest; an interruption aborts them.
//     A chained get right after a discovery of the composite that found
//     rows, on an OLT with no ONU known yet, waits (Config.ChainONUWait,
//     folding again every 200 ms) for the projector's first discovered
//     events instead of failing no_onus_known: a new OLT's workflow reads
//     its ONUs in its first run.
//
// Every event of an attempt carries the lease revision as a fencing token
// and has the Nats-Msg-Id "<execution_id>:<attempt>:<part>" (part =
// started, succeeded, failed or the batch number), so a re-publish of the
// same attempt is dropped by the stream and a newer attempt never collides
// with an older one. A lost lease aborts the walk at once; no batch is
// published after the loss.
//
// Every execution ends (interrupt.go): a poller killed mid-walk publishes
// no terminal event, so every poller watches the lease bucket and, when a
// lease expires by TTL (a limit marker, not a release), publishes
// execution.interrupted for the started attempt that held it, with the
// Nats-Msg-Id "<execution_id>:<attempt>:interrupted"; a sweep at start-up
// and every Config.InterruptSweepEvery catches expiries no watch saw.
//
// Retries: the RetryPolicy (Deps.Retry) decides after a failed attempt. The
// default acknowledges failures and leaves retries to the planner (which
// re-dispatches the same execution after the job's backoff, NodeDue.Attempt
// saying which attempt), except work interrupted by this poller's shutdown,
// which is NAKed for another poller.
//
// Stats (stats.go): each execution slot (one per unit of each class's
// concurrency, labelled with the class) is one of
// seed 004's pollers, FREE or BUSY while it runs a node under the lease;
// the process writes their state (streams.PollerProcess, with its
// Config.Workers cap) to the KV bucket
// streams.BucketPollers, which the API serves as GET /api/v1/pollers/ and
// GET /api/v1/pollers/stats/.
package poller
