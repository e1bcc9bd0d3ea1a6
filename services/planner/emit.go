package planner

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// syncPlan makes the schedule match the configuration and audits what
// changed.
func (p *planner) syncPlan(ctx context.Context, initial bool) {
	now := p.now()
	changes := p.sched.Sync(p.state.desired(), now)
	p.dirty = false
	p.m.planned.Set(float64(p.sched.Len()))
	if initial {
		p.log.Info().Int("nodes", p.sched.Len()).Uint64(telemetry.KeyStreamSeq, p.lastSeq).Msg("plan built from the configuration stream")
		ev := streams.AuditEvent{
			Kind:    streams.AuditPlanAdjusted,
			Level:   streams.LevelInfo,
			Message: fmt.Sprintf("planner started: %d nodes planned", p.sched.Len()),
			Details: map[string]any{"nodes": p.sched.Len(), "config_seq": p.lastSeq},
		}
		p.publishAudit(ctx, ev, streams.MsgID("audit", "planner", "start", p.lastSeq, p.sched.Len()))
		return
	}
	for _, c := range changes {
		reason := ""
		if c.Kind == streams.AuditTaskRemoved {
			reason = p.state.why(c.Key)
		}
		p.log.Info().Str(telemetry.KeyJob, c.Key.JobID).Str(telemetry.KeyOLT, c.Key.OLTID).
			Str("change", c.Kind).Str("reason", reason).Time("next_run_at", c.Next).Msg("plan changed")
		// Derived from the config sequence that caused it, so a second
		// planner's copy of the same decision is dropped.
		id := streams.MsgID("audit", "planner", c.Kind, c.Key.JobID, c.Key.OLTID, p.lastSeq)
		p.publishAudit(ctx, auditOf(c, reason), id)
	}
}

// emitDue publishes a NodeDue for every due node, most urgent first. A node
// whose publish fails stays due and is retried at the next tick with the
// same id, so a publish that did land is not doubled.
func (p *planner) emitDue(ctx context.Context) {
	now := p.now()
	due := p.sched.Due(now)
	delayed := 0
	for _, d := range due {
		if d.Delayed {
			delayed++
		}
	}
	p.m.delayed.Set(float64(delayed))
	for _, d := range due {
		if ctx.Err() != nil {
			return
		}
		nd := nodeDue(d)
		id := dueMsgID(d.Key, d.ScheduledAt)
		b, err := streams.EncodeWithID(id, p.cfg.Source, now, nd)
		if err != nil {
			p.log.Error().Err(err).Str(telemetry.KeyJob, d.Key.JobID).Str(telemetry.KeyOLT, d.Key.OLTID).Msg("encode NodeDue")
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
		_, err = p.js.Publish(pctx, streams.SubjectNodeDue(d.Key.OLTID), b, jetstream.WithMsgID(id))
		cancel()
		if err != nil {
			p.m.publishErrs.Inc()
			p.log.Warn().Err(err).Str(telemetry.KeyJob, d.Key.JobID).Str(telemetry.KeyOLT, d.Key.OLTID).Msg("publish NodeDue; retry next tick")
			return // JetStream is likely unreachable: the rest waits too
		}
		p.sched.Done(d.Key, d.ScheduledAt, now)
		p.m.dueEmitted.Inc()
		p.m.delay.Observe(d.Delay.Seconds())
		if d.Delayed {
			p.m.delayedTotal.Inc()
		}
		p.log.Debug().Str(telemetry.KeyJob, d.Key.JobID).Str(telemetry.KeyOLT, d.Key.OLTID).
			Str(telemetry.KeyExecution, nd.ExecutionID).Float64("delay_seconds", nd.DelaySeconds).Msg("node due")
	}
}

// publishAudit publishes an audit event; a failure is logged, not fatal:
// the plan itself does not depend on it.
func (p *planner) publishAudit(ctx context.Context, ev streams.AuditEvent, id string) {
	b, err := streams.EncodeWithID(id, p.cfg.Source, p.now(), ev)
	if err != nil {
		p.log.Error().Err(err).Msg("encode audit event")
		return
	}
	pctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
	defer cancel()
	if _, err := p.js.Publish(pctx, streams.SubjectAudit("planner"), b, jetstream.WithMsgID(id)); err != nil {
		p.m.publishErrs.Inc()
		p.log.Warn().Err(err).Str("event_type", ev.Kind).Msg("publish audit event")
	}
}
