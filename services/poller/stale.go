package poller

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/streams"
)

// staleAt is the instant after which a NodeDue is stale: when the planner
// dispatched it (DispatchedAt, or ScheduledAt for older events) plus its
// interval. A NodeDue that sat that long in the poller queue (a poller
// outage) is not run: the planner plans the node's next run from the end of
// this one, so running it late would replay a missed run (no catch-up,
// seeds 002/003). Time spent in the planner's per-OLT queue does not count:
// the planner dispatches a node only when its OLT is free. ok is false when
// the NodeDue cannot go stale: no interval, or no time to count from.
func staleAt(node streams.NodeDue) (at time.Time, ok bool) {
	from := node.DispatchedAt
	if from.IsZero() {
		from = node.ScheduledAt
	}
	if node.IntervalSeconds <= 0 || from.IsZero() {
		return time.Time{}, false
	}
	return from.Add(time.Duration(node.IntervalSeconds) * time.Second), true
}

// isStale reports whether node comes too late to run at now. Exactly at
// ScheduledAt + interval it is still on time.
func isStale(node streams.NodeDue, now time.Time) bool {
	at, ok := staleAt(node)
	return ok && now.After(at)
}

// staleReason says why a stale NodeDue was not run.
func staleReason(node streams.NodeDue) string {
	return fmt.Sprintf("stale: scheduled at %s, interval %ds; a newer run supersedes it",
		node.ScheduledAt.UTC().Format(time.RFC3339Nano), node.IntervalSeconds)
}

// busyReason says why a NodeDue that found its OLT busy on every delivery
// was not run.
func busyReason(deliveries uint64) string {
	return fmt.Sprintf("olt busy on all %d deliveries: the planner plans the next run", deliveries)
}

// skippedMsgID is the Nats-Msg-Id of the skip of node:
// "<execution_id>:<attempt>:skipped" with the NodeDue's attempt, so the
// skip of a retry (the same execution id re-dispatched with a higher
// attempt) is not dropped as a duplicate of an earlier dispatch's;
// "<execution_id>:skipped" for a NodeDue without an attempt.
func skippedMsgID(node streams.NodeDue) string {
	if node.Attempt > 0 {
		return streams.MsgID(node.ExecutionID, node.Attempt, streams.PhaseSkipped)
	}
	return streams.MsgID(node.ExecutionID, streams.PhaseSkipped)
}

// skip records a stale NodeDue as skipped and acknowledges it, without
// taking the lease or sending any SNMP request. The event carries the
// NodeDue's attempt: a stale delivery of an earlier dispatch then does not
// end the planner's retry of the execution. Its id (skippedMsgID) makes a
// re-send after a failed ack a duplicate the stream drops. A composite's
// chained executions are skipped too, with the same attempt
// (publishNotRunWhole).
func (p *poller) skip(work context.Context, msg jetstream.Msg, node streams.NodeDue, now time.Time, reason string, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(work), finalPublishTimeout)
	defer cancel()
	if p.interrupts != nil {
		// An earlier attempt of this execution may have started and lost
		// its lease without a terminal event (its poller could not
		// publish, or died): end it now rather than at the next sweep, so
		// the execution does not stay RUNNING behind the skip.
		if _, err := p.interrupts.checkOLT(ctx, node.OLTID, node.ScheduledAt.Add(-interruptSlack), time.Time{}); err != nil {
			log.Warn().Err(err).Msg("check open attempts before skipping")
		}
	}
	if err := p.publishNotRunWhole(ctx, node, streams.PhaseSkipped, reason, now); err != nil {
		log.Warn().Err(err).Msg("publish execution skipped")
		nak(msg, p.cfg.TransientDelay, log)
		return
	}
	p.metrics.skipped.Inc()
	log.Warn().Time("scheduled_at", node.ScheduledAt).Int("interval_seconds", node.IntervalSeconds).
		Str("reason", reason).Int("chained", len(node.Chain)).Msg("node due skipped")
	if err := msg.DoubleAck(ctx); err != nil {
		log.Warn().Err(err).Msg("ack skipped node due")
	}
}
