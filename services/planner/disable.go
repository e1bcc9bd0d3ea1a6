package planner

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// countOutcome counts consecutive failed executions per OLT (after their
// retries): a success resets the count, Config.DisableAfterFailures
// failures in a row disable the OLT. Skipped, aborted and interrupted runs
// say nothing of the OLT's health and leave the count as it is.
func (p *planner) countOutcome(ctx context.Context, f finish) {
	switch f.Status {
	case statusSuccess:
		if p.failures[f.OLTID] > 0 {
			p.failuresDirty[f.OLTID] = true
		}
		delete(p.failures, f.OLTID)
	case statusFailed:
		p.failures[f.OLTID]++
		p.failuresDirty[f.OLTID] = true
		if n := p.failures[f.OLTID]; p.cfg.DisableAfterFailures > 0 && n >= p.cfg.DisableAfterFailures {
			p.autoDisable(ctx, f, n)
		}
	}
}

// autoDisable publishes olt.auto_disabled (the planner then removes the
// OLT's nodes like any disabled OLT's) and an OLT_DISABLED audit event.
// Their ids derive from the execution that tipped the count, so a second
// planner's copy is dropped.
func (p *planner) autoDisable(ctx context.Context, f finish, n int) {
	if !p.state.oltEnabled(f.OLTID) {
		return
	}
	reason := fmt.Sprintf("%d consecutive failed executions (last %s of job %s)", n, f.ExecutionID, f.JobID)
	ev := streams.OLTAutoDisabled{ID: f.OLTID, Reason: reason, Failures: n, ExecutionID: f.ExecutionID, DisabledAt: f.End.UTC()}
	id := streams.MsgID("auto-disable", f.OLTID, f.ExecutionID)
	b, err := streams.EncodeWithID(id, p.cfg.Source, p.now(), ev)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
		_, err = p.js.Publish(pctx, streams.SubjectOLTDisabled(f.OLTID), b, jetstream.WithMsgID(id))
		cancel()
	}
	if err != nil {
		p.m.publishErrs.Inc()
		p.log.Error().Err(err).Str(telemetry.KeyOLT, f.OLTID).Msg("publish auto-disable of the OLT; retried at its next failure")
		return
	}
	delete(p.failures, f.OLTID)
	p.failuresDirty[f.OLTID] = true
	p.m.disabledOLTs.Inc()
	p.log.Warn().Str(telemetry.KeyOLT, f.OLTID).Str("reason", reason).Msg("OLT disabled")
	p.publishAudit(ctx, streams.AuditEvent{OLTID: f.OLTID, Kind: streams.AuditOLTDisabled, Level: streams.LevelCritical,
		Message: fmt.Sprintf("OLT %s disabled: %s", f.OLTID, reason),
		Details: map[string]any{"reason": reason, "failures": n, "execution_id": f.ExecutionID, "job_id": f.JobID,
			"disabled_at": ev.DisabledAt.Format(time.RFC3339Nano), "automatic": true}},
		streams.MsgID("audit", "planner", streams.AuditOLTDisabled, f.OLTID, f.ExecutionID))
}

// oltTransition audits an OLT enabled or disabled by its configuration,
// live (not during the replay), and resets the failure count of a
// re-enabled OLT.
func (p *planner) oltTransition(ctx context.Context, olt string, was, is bool) {
	switch {
	case !was && is:
		delete(p.failures, olt)
		p.failuresDirty[olt] = true
		p.publishAudit(ctx, streams.AuditEvent{OLTID: olt, Kind: streams.AuditOLTEnabled, Level: streams.LevelInfo,
			Message: fmt.Sprintf("OLT %s enabled; its failure count is reset", olt)},
			streams.MsgID("audit", "planner", streams.AuditOLTEnabled, olt, p.lastSeq))
	case was && !is:
		p.forgetONUs(olt)
		p.publishAudit(ctx, streams.AuditEvent{OLTID: olt, Kind: streams.AuditOLTDisabled, Level: streams.LevelWarning,
			Message: fmt.Sprintf("OLT %s disabled by configuration", olt), Details: map[string]any{"reason": "disabled by configuration", "automatic": false}},
			streams.MsgID("audit", "planner", streams.AuditOLTDisabled, olt, p.lastSeq))
	}
}
