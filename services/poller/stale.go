package poller

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// staleAt is the instant after which a NodeDue is stale: its ScheduledAt
// plus its interval. By then the planner has emitted the node's next run,
// so running this one would replay a missed run (no catch-up, seeds
// 002/003). ok is false when the NodeDue cannot go stale: no interval, or
// no ScheduledAt to count from.
func staleAt(node streams.NodeDue) (at time.Time, ok bool) {
	if node.IntervalSeconds <= 0 || node.ScheduledAt.IsZero() {
		return time.Time{}, false
	}
	return node.ScheduledAt.Add(time.Duration(node.IntervalSeconds) * time.Second), true
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

// skip records a stale NodeDue as skipped and acknowledges it, without
// taking the lease or sending any SNMP request. The event's id
// "<execution_id>:skipped" makes a re-send after a failed ack a duplicate
// the stream drops.
func (p *poller) skip(work context.Context, msg jetstream.Msg, node streams.NodeDue, now time.Time, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(work), finalPublishTimeout)
	defer cancel()
	reason := staleReason(node)
	id := streams.MsgID(node.ExecutionID, streams.PhaseSkipped)
	subject := streams.SubjectExec(node.OLTID, streams.PhaseSkipped)
	b, err := streams.EncodeWithID(id, p.cfg.Source, now, streams.ExecutionSkipped{
		ExecutionID: node.ExecutionID, JobID: node.JobID, OLTID: node.OLTID, PollerID: p.cfg.PollerID,
		ScheduledAt: node.ScheduledAt.UTC(), SkippedAt: now.UTC(), Reason: reason,
	})
	if err == nil {
		_, err = p.js.Publish(ctx, subject, b, jetstream.WithMsgID(id))
	}
	if err != nil {
		log.Warn().Err(err).Str(telemetry.KeySubject, subject).Msg("publish execution skipped")
		nak(msg, p.cfg.TransientDelay, log)
		return
	}
	p.metrics.skipped.Inc()
	at, _ := staleAt(node)
	log.Warn().Time("scheduled_at", node.ScheduledAt).Int("interval_seconds", node.IntervalSeconds).
		Dur("late_by", now.Sub(at)).Msg("stale node due skipped: a newer run supersedes it")
	if err := msg.DoubleAck(ctx); err != nil {
		log.Warn().Err(err).Msg("ack skipped node due")
	}
}
