package planner

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// Manual runs (seed 004 POST /api/v1/pollers/nodes/{node_id}/run/): the API
// publishes a NodeRunRequested with the execution id it answered; the
// planner puts the run first in its OLT's queue (seed 001's high-priority
// class: it still waits for the node in flight, never runs beside it) and
// does not move the node's schedule.

// followManual forwards manual run requests from a little before start
// (so a request made while the planner restarted is not lost; a repeat is
// dropped by its Nats-Msg-Id "manual:<execution_id>").
func (p *planner) followManual(ctx context.Context, start time.Time, out chan<- streams.NodeRunRequested) (stop func(), err error) {
	from := start.Add(-time.Minute)
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.SubjectsManualRun}, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &from,
	}
	return follow(ctx, p, streams.StreamSchedule, "manual runs", cfg, decodeManual, out)
}

// decodeManual reads a manual run request; one without its ids is
// malformed.
func decodeManual(data []byte) (streams.NodeRunRequested, bool, error) {
	_, req, err := streams.Decode[streams.NodeRunRequested](data)
	if err == nil && (req.ExecutionID == "" || !streams.ValidID(req.OLTID) || req.JobID == "") {
		err = fmt.Errorf("manual run without execution, olt or job id")
	}
	return req, err == nil, err
}

// onManual queues a manual run first in its OLT's queue and dispatches it
// at once when the OLT is free.
func (p *planner) onManual(ctx context.Context, req streams.NodeRunRequested) {
	k := NodeKey{JobID: req.JobID, OLTID: req.OLTID}
	if _, seen := p.seenManual[req.ExecutionID]; seen {
		return
	}
	p.seenManual[req.ExecutionID] = p.now()
	n, ok := p.sched.Node(k)
	if !ok {
		p.abortExecution(ctx, k, req.ExecutionID, "node "+k.NodeID()+" is not plannable: "+p.state.why(k))
		return
	}
	now := p.now()
	p.queues.Push(DueNode{Key: k, Spec: n.Spec, ScheduledAt: req.RequestedAt, Manual: true, Delayed: true, ExecutionID: req.ExecutionID})
	p.log.Info().Str(telemetry.KeyJob, k.JobID).Str(telemetry.KeyOLT, k.OLTID).Str(telemetry.KeyExecution, req.ExecutionID).Msg("manual run queued")
	p.publishAudit(ctx, streams.AuditEvent{OLTID: k.OLTID, Kind: streams.AuditManualRun, Level: streams.LevelInfo,
		Message: fmt.Sprintf("manual run %s of task %q queued first", req.ExecutionID, n.Spec.JobName),
		Details: map[string]any{"node_id": k.NodeID(), "job_id": k.JobID, "execution_id": req.ExecutionID,
			"requested_at": req.RequestedAt.UTC().Format(time.RFC3339Nano)}},
		streams.MsgID("audit", "planner", streams.AuditManualRun, req.ExecutionID))
	p.dispatchOLT(ctx, k.OLTID, now)
}

// abortExecution ends an execution the planner will not run with its
// execution.aborted: a manual run it cannot make (the API has answered its
// execution id, so it must not stay PENDING), or a retry it drops before
// its dispatch (its last event is the failed or lost attempt before it,
// and no poller will see the retry's NodeDue to abort it: without this the
// execution would read FAILED or INTERRUPTED, retry pending, for ever). A
// failed publish is logged and counted.
func (p *planner) abortExecution(ctx context.Context, k NodeKey, executionID, reason string) {
	if err := p.publishAborted(ctx, k, executionID, reason); err != nil {
		p.m.publishErrs.Inc()
		p.log.Warn().Err(err).Str(telemetry.KeyJob, k.JobID).Str(telemetry.KeyOLT, k.OLTID).Str(telemetry.KeyExecution, executionID).
			Msg("publish execution aborted")
	}
}

// publishAborted publishes an execution's execution.aborted under the
// poller's Nats-Msg-Id "<execution_id>:aborted", so a restarted planner, a
// second replica or a poller aborting the same execution records it once.
func (p *planner) publishAborted(ctx context.Context, k NodeKey, executionID, reason string) error {
	id := streams.MsgID(executionID, streams.PhaseAborted)
	now := p.now().UTC()
	b, err := streams.EncodeWithID(id, p.cfg.Source, now, streams.ExecutionAborted{
		ExecutionID: executionID, JobID: k.JobID, OLTID: k.OLTID, PollerID: p.cfg.Source, Reason: reason, AbortedAt: now,
	})
	if err != nil {
		return fmt.Errorf("encode execution.aborted of %s: %w", executionID, err)
	}
	pctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
	defer cancel()
	if _, err := p.js.Publish(pctx, streams.SubjectExec(k.OLTID, streams.PhaseAborted), b, jetstream.WithMsgID(id)); err != nil {
		return fmt.Errorf("publish execution.aborted of %s: %w", executionID, err)
	}
	return nil
}
