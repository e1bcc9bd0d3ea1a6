package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

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
	p.m.disabled.Set(float64(p.state.disabledOLTs()))
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
		p.abortUnrestored(ctx)
		return
	}
	for _, c := range changes {
		p.touch(c.Key)
		reason := ""
		if c.Kind == streams.AuditTaskRemoved {
			reason = p.state.why(c.Key)
		}
		if c.Kind != streams.AuditPlanAdjusted {
			// A removed node, or one that starts over, loses its waiting
			// run and its dispatched one.
			p.abortNode(ctx, c, reason)
		}
		p.log.Info().Str(telemetry.KeyJob, c.Key.JobID).Str(telemetry.KeyOLT, c.Key.OLTID).
			Str("change", c.Kind).Str("reason", reason).Time("next_run_at", c.Next).Msg("plan changed")
		// Derived from the config sequence that caused it, so a second
		// planner's copy of the same decision is dropped.
		id := streams.MsgID("audit", "planner", c.Kind, c.Key.JobID, c.Key.OLTID, p.lastSeq)
		p.publishAudit(ctx, auditOf(c, reason), id)
	}
}

// queueDue moves every node due at now into its OLT's queue.
func (p *planner) queueDue(now time.Time) {
	for _, d := range p.sched.Due(now) {
		take := p.sched.Take
		if d.Retry > 0 {
			take = p.sched.TakeRetry
		}
		if take(d.Key, d.ScheduledAt) {
			p.queues.Push(d)
			p.touch(d.Key)
		}
	}
}

// dispatchReady dispatches the first waiting node of every free OLT, most
// urgent first, within the free slots of each queue class (ReadyIn). A node whose publish fails goes back to the head of its
// queue and is retried at the next tick with the same id, so a publish
// that did land is not doubled.
func (p *planner) dispatchReady(ctx context.Context, now time.Time) {
	ready := p.queues.ReadyIn(now, p.room(now))
	for i, d := range ready {
		if ctx.Err() != nil || p.dispatch(ctx, d, now) != nil {
			// JetStream is likely unreachable: the rest waits too.
			for _, r := range ready[i+1:] {
				p.queues.Unpop(r)
			}
			break
		}
	}
	p.gauges()
}

// dispatchOLT dispatches the next waiting node of one OLT, if it is free,
// whose class has a free slot (PopIn).
func (p *planner) dispatchOLT(ctx context.Context, olt string, now time.Time) {
	room := p.room(now)
	if len(room) > 0 {
		// Slots are counted: the freed slot goes to the most urgent node
		// of any free OLT (seed 004's order), not to this OLT's next one
		// first; inside a batch, once at its end (classgate.go).
		p.dispatchAll(ctx, now)
		return
	}
	if d, ok := p.queues.PopIn(olt, now, room); ok {
		_ = p.dispatch(ctx, d, now)
	}
	p.gauges()
}

// dispatch publishes the NodeDue of a node Pop took; on failure the node
// goes back to its queue. Inside a batch (beginBatch) the publish is
// asynchronous: the flight is recorded at once and endBatch confirms it or
// puts the node back.
func (p *planner) dispatch(ctx context.Context, d DueNode, now time.Time) error {
	nd := nodeDue(d)
	nd.DispatchedAt = now.UTC()
	nd.Attempt = d.Retry + 1
	nd.Class = QueueClass(nd.Kind, nd.Attempt, d.Manual)
	if !d.Manual && p.unavailableOLT(d.Key.OLTID) {
		return p.skipUnavailable(ctx, d, nd, now)
	}
	id := dueMsgID(d.Key, d.ScheduledAt)
	if d.Manual {
		id = streams.MsgID("manual", nd.ExecutionID)
	}
	if d.Retry > 0 {
		// The same execution again: another message, another attempt.
		id = streams.MsgID(id, "retry", d.Retry)
	}
	b, err := streams.EncodeWithID(id, p.cfg.Source, now, nd)
	if err == nil && p.batching {
		var fut jetstream.PubAckFuture
		fut, err = p.js.PublishAsync(streams.SubjectNodeDueClass(d.Key.OLTID, nd.Class), b, jetstream.WithMsgID(id))
		if err == nil {
			p.queues.Dispatched(d.Key.OLTID, executionIDs(nd)...)
			p.queues.SetAttempt(d.Key.OLTID, p.firstAttempt(d, nd))
			p.pending = append(p.pending, pendingDispatch{d: d, nd: nd, fut: fut})
			return nil
		}
	} else if err == nil {
		pctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
		_, err = p.js.Publish(pctx, streams.SubjectNodeDueClass(d.Key.OLTID, nd.Class), b, jetstream.WithMsgID(id))
		cancel()
	}
	if err != nil {
		p.undispatch(d, nd, err)
		return fmt.Errorf("publish NodeDue %s: %w", id, err)
	}
	p.queues.Dispatched(d.Key.OLTID, executionIDs(nd)...)
	p.queues.SetAttempt(d.Key.OLTID, p.firstAttempt(d, nd))
	p.dispatched(ctx, d, nd)
	return nil
}

// firstAttempt is the lowest attempt number the dispatch nd of d can run:
// the planner's count (1 + the failed attempts), or past the attempt of
// the previous dispatch that was lost with its poller, if higher (a
// dispatch may run several attempts: each redelivery after a lost one
// starts the next).
func (p *planner) firstAttempt(d DueNode, nd streams.NodeDue) int {
	a := nd.Attempt
	if !d.Manual && d.Retry > 0 {
		a = max(a, p.nextAttempt[d.Key])
	}
	return a
}

// pendingDispatch is an asynchronous dispatch waiting for its ack.
type pendingDispatch struct {
	d   DueNode
	nd  streams.NodeDue
	fut jetstream.PubAckFuture
}

// beginBatch makes the dispatches that follow asynchronous, so a burst of
// finishes (many OLTs ending at once) is not served one round trip at a
// time; endBatch waits for their acks.
func (p *planner) beginBatch() { p.batching = true }

// endBatch confirms the batch's dispatches, or puts back in its queue a
// node whose publish failed (retried at the next tick with the same id: a
// publish that did land is dropped as a duplicate).
func (p *planner) endBatch(ctx context.Context) {
	p.batching = false
	pending := p.pending
	p.pending = nil
	timeout := time.NewTimer(p.cfg.PublishTimeout)
	defer timeout.Stop()
	for _, pd := range pending {
		select {
		case <-pd.fut.Ok():
			p.dispatched(ctx, pd.d, pd.nd)
		case err := <-pd.fut.Err():
			p.undispatch(pd.d, pd.nd, err)
		case <-timeout.C:
			p.undispatch(pd.d, pd.nd, errors.New("no publish ack"))
		case <-ctx.Done():
			return
		}
	}
	p.gauges()
}

func (p *planner) undispatch(d DueNode, nd streams.NodeDue, err error) {
	p.queues.Unpop(d)
	p.m.publishErrs.Inc()
	p.log.Warn().Err(err).Str(telemetry.KeyJob, d.Key.JobID).Str(telemetry.KeyOLT, d.Key.OLTID).Str(telemetry.KeyExecution, nd.ExecutionID).
		Msg("publish NodeDue; retry next tick")
}

// dispatched records a dispatch the stream acknowledged.
func (p *planner) dispatched(ctx context.Context, d DueNode, nd streams.NodeDue) {
	p.touch(d.Key)
	for _, eid := range executionIDs(nd) {
		// Already ended: dispatched again after a takeover or restart,
		// the stream dropped the copy and the run's end was read before.
		if f, ended := p.orphans[eid]; ended {
			delete(p.orphans, eid)
			if earlierDispatch(f, nd.Attempt) {
				// The end of a dispatch before this one (a retry reuses
				// the execution id), read while no flight had it.
				p.log.Info().Str(telemetry.KeyExecution, eid).Int("attempt", f.Attempt).Int("dispatch_attempt", nd.Attempt).
					Str("status", f.Status).Msg("end of an earlier dispatch of the execution: ignored")
				continue
			}
			p.log.Info().Str(telemetry.KeyExecution, eid).Msg("re-dispatched run had already ended")
			defer p.onFinish(ctx, f)
		}
	}
	if d.Manual {
		p.m.manual.Inc()
	}
	p.m.dueEmitted.Inc()
	p.m.delay.Observe(d.Delay.Seconds())
	if d.Delayed {
		p.m.delayedTotal.Inc()
	}
	p.log.Debug().Str(telemetry.KeyJob, d.Key.JobID).Str(telemetry.KeyOLT, d.Key.OLTID).Str(telemetry.KeyExecution, nd.ExecutionID).
		Float64("delay_seconds", nd.DelaySeconds).Msg("node dispatched")
}

// lostAttempt is an attempt of the execution in flight lost with its
// poller: its number (0: unknown) and when.
type lostAttempt struct {
	Attempt int
	At      time.Time
}

// endsAttempt says whether f is the end of one attempt that a later
// dispatch of its execution (a retry) does not share: succeeded, failed or
// skipped, with its attempt number. An event of an attempt below the
// dispatch's own (NodeDue.Attempt, which every attempt of the dispatch
// reaches or passes; a skipped carries the NodeDue's) is an earlier
// dispatch's: a stale delivery of its NodeDue skipped by a poller, or its
// end read again (a restarted planner re-reads from a little before its
// oldest flight). Without an attempt (0: a skipped published before the
// field) it ends the execution in flight, as it always did.
func endsAttempt(f finish) bool {
	return !f.Lost && f.Attempt > 0 && (f.Status == statusSuccess || f.Status == statusFailed || f.Status == statusSkipped)
}

// earlierDispatch reports whether f ended a dispatch before the one whose
// NodeDue carries dispatchAttempt (see endsAttempt).
func earlierDispatch(f finish, dispatchAttempt int) bool {
	return endsAttempt(f) && f.Attempt < dispatchAttempt
}

// maxOrphans bounds the terminal events kept without a flight.
const maxOrphans = 100_000

// onFinish handles an execution's terminal event. When it ends the OLT's
// flight (the master of a plain node; the last open execution of a
// composite), the node's next run is planned from the end of the run (or
// its retry after the backoff) and the OLT's next waiting node is
// dispatched at once.
func (p *planner) onFinish(ctx context.Context, f finish) {
	if f.Lost {
		// An attempt lost with its poller: the execution goes on (a
		// redelivery). Noted for the flight's end, when it is the
		// master's of the OLT's flight and an attempt of this dispatch: a
		// retry runs under the same execution id, and a late event of an
		// attempt of the dispatch before it (read again after a restart,
		// or published late) must not mark the retry lost.
		fl, ok := p.queues.Flight(f.OLTID)
		if !ok || fl.ExecutionID != f.ExecutionID || fl.Manual {
			return
		}
		if f.Attempt > 0 && f.Attempt < fl.Attempt {
			p.log.Info().Str(telemetry.KeyOLT, f.OLTID).Str(telemetry.KeyExecution, f.ExecutionID).Int("attempt", f.Attempt).
				Int("flight_first_attempt", fl.Attempt).Msg("lost attempt of an earlier dispatch: ignored")
			return
		}
		if prev, had := p.lost[f.ExecutionID]; !had || f.Attempt >= prev.Attempt {
			p.lost[f.ExecutionID] = lostAttempt{Attempt: f.Attempt, At: f.End}
			p.touch(fl.Key)
		}
		return
	}
	if endsAttempt(f) && p.queues.Earlier(f.OLTID, f.ExecutionID, f.Attempt) {
		p.log.Info().Str(telemetry.KeyOLT, f.OLTID).Str(telemetry.KeyExecution, f.ExecutionID).Int("attempt", f.Attempt).
			Str("status", f.Status).Msg("end of an earlier dispatch of the execution in flight: ignored")
		return
	}
	if f.NoRetry {
		p.queues.MarkNoRetry(f.OLTID, f.ExecutionID)
	}
	fl, done, ok := p.queues.Finish(f.OLTID, f.ExecutionID, f.Status, f.End)
	if !ok {
		p.log.Debug().Str(telemetry.KeyOLT, f.OLTID).Str(telemetry.KeyExecution, f.ExecutionID).Str("status", f.Status).Msg("terminal event of no flight")
		if len(p.orphans) < maxOrphans {
			p.orphans[f.ExecutionID] = f
		}
		return
	}
	if f.ExecutionID != fl.ExecutionID {
		p.countOutcome(ctx, f) // a chained node's own outcome
	}
	if !done {
		return
	}
	p.completeFlight(ctx, fl, finish{OLTID: f.OLTID, JobID: fl.Key.JobID, ExecutionID: fl.ExecutionID, Status: fl.MasterStatus, End: fl.End, NoRetry: fl.MasterNoRetry})
	now := p.now()
	p.dispatchOLT(ctx, f.OLTID, now)
	if p.readyPending {
		p.freed = append(p.freed, f) // observed when the batch dispatches
		return
	}
	if _, busy := p.queues.Flight(f.OLTID); busy && !f.Published.IsZero() {
		p.m.finishToDispatch.Observe(max(now.Sub(f.Published), 0).Seconds())
	}
}

// completeFlight plans what follows an ended flight: the retry of a failed
// or interrupted master (per the job's max_retries, after the backoff; the
// OLT is free meanwhile) or the node's next run at the end + interval. A
// manual run moves nothing.
//
// Interrupted: an attempt of the master was lost with its poller (killed:
// its lease expired, execution.interrupted without cancelled) and no later
// attempt ended the execution: its redelivered NodeDue came too late and
// was skipped as stale (or on the OLT busy on every delivery), or no
// terminal event came at all. The execution ended INTERRUPTED and is
// retried like a failed one, in the retry class, but at once (retryAt:
// the lease is free, nothing failed on the OLT), and counted in the same n.Attempts against the node's max_retries (the
// job's, else its class's, never above the retry class's ceiling; -1 and
// manual runs: none). So an execution is dispatched at most 1 +
// max_retries times whatever mix of failures and interruptions it meets.
// An interruption the planner asked for (its OLT disabled or deleted, its
// job deleted: execution.interrupted with cancelled) is final: the node
// has left the plan and the execution stays INTERRUPTED.
func (p *planner) completeFlight(ctx context.Context, fl Flight, f finish) {
	la, lost := p.lost[fl.ExecutionID]
	delete(p.lost, fl.ExecutionID)
	if fl.Manual {
		return
	}
	delete(p.nextAttempt, fl.Key)
	p.touch(fl.Key)
	if f.Status == "" {
		f.Status = statusUnknown // the master's own event never came
	}
	if lost && (f.Status == statusSkipped || f.Status == statusUnknown) {
		f.Status = statusInterrupted
		if f.End.IsZero() {
			f.End = la.At
		}
	}
	// A failure the poller judged not worth a retry (the OLT answered but
	// read nothing worth a success) is not retried: the next run is at
	// end + interval, and it counts as a failure like the others.
	retry := (f.Status == statusFailed && !f.NoRetry) || (lost && f.Status == statusInterrupted)
	if n, ok := p.sched.Node(fl.Key); ok && retry && n.Attempts < n.Spec.MaxRetries {
		at := p.retryAt(n.Spec, n.Attempts+1, f, lost)
		p.sched.Retry(fl.Key, fl.ScheduledAt, at)
		if lost && la.Attempt > 0 {
			// The retry runs past the lost attempt: a late event of that
			// attempt is not the retry's.
			p.nextAttempt[fl.Key] = la.Attempt + 1
		}
		p.m.retried.Inc()
		p.log.Info().Str(telemetry.KeyJob, fl.Key.JobID).Str(telemetry.KeyOLT, fl.Key.OLTID).Str(telemetry.KeyExecution, f.ExecutionID).
			Int("retry", n.Attempts+1).Time("retry_at", at).Str("status", f.Status).Msg("failed attempt: retry planned")
		return
	}
	p.sched.Finish(fl.Key, fl.ScheduledAt, f.End, f.Status)
	p.countOutcome(ctx, f)
}

// retryAt is when retry number n of an ended master is due: a failed
// attempt's after the job's retry delay (the OLT or the poller may need
// the pause); an attempt lost with its poller (interrupted: its lease
// expired, which is what published the interruption, so the lease is free)
// at once: nothing failed on the OLT, and waiting the retry delay only
// leaves the OLT unpolled.
func (p *planner) retryAt(spec NodeSpec, n int, f finish, lost bool) time.Time {
	if lost && f.Status == statusInterrupted {
		return f.End.Truncate(time.Millisecond)
	}
	return f.End.Add(p.cfg.retryDelay(spec, n)).Truncate(time.Millisecond)
}

// checkStuck ends flights whose terminal events never came, so their OLT's
// queue moves on (the lease still keeps the OLT safe if the run is alive).
func (p *planner) checkStuck(ctx context.Context, now time.Time) {
	cutoff := func(f Flight) time.Time {
		n, _ := p.sched.Node(f.Key)
		chain := 0
		for _, c := range n.Spec.Chain {
			chain += c.TimeoutSeconds
		}
		return now.Add(-(n.Spec.Interval() + time.Duration(n.Spec.TimeoutSeconds+chain)*time.Second + p.cfg.StuckGrace))
	}
	for _, f := range p.queues.Stuck(cutoff, now) {
		p.m.stuck.Inc()
		p.log.Warn().Str(telemetry.KeyJob, f.Key.JobID).Str(telemetry.KeyOLT, f.Key.OLTID).Str(telemetry.KeyExecution, f.ExecutionID).
			Time("dispatched_at", f.DispatchedAt).Msg("no terminal event for the flight: freeing the OLT's queue")
		if fl, _, ok := p.queues.Abandon(f.Key.OLTID); ok {
			p.completeFlight(ctx, fl, finish{OLTID: f.Key.OLTID, JobID: f.Key.JobID, ExecutionID: f.ExecutionID, Status: statusUnknown, End: now})
			p.dispatchOLT(ctx, f.Key.OLTID, now)
		}
	}
}

func (p *planner) gauges() {
	p.m.queued.Set(float64(p.queues.Waiting()))
	p.m.inFlight.Set(float64(p.queues.InFlight()))
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

// abortNode drops the waiting run of a node that left the plan (or starts
// over) and cancels its dispatched one: a disabled task's execution is
// aborted if it has not started; a disabled or deleted OLT's is also
// interrupted if it runs (the poller watches facho_cancel, stops between
// two requests and releases the lease). A retry not dispatched yet (in
// its backoff, or waiting in the OLT's queue) and a first run waiting in
// the OLT's queue are ended by the planner's own execution.aborted
// (abortExecution). Each is an EXECUTION_ABORTED
// audit event.
func (p *planner) abortNode(ctx context.Context, c Change, reason string) {
	if reason == "" {
		reason = "task restarted"
	}
	// The node's retry, if any, is dropped below: a later node of the same
	// key counts its attempts afresh.
	delete(p.nextAttempt, c.Key)
	if c.Backoff.Attempts > 0 {
		p.m.aborted.Inc()
		id := ExecutionID(c.Key, c.Backoff.ScheduledAt)
		p.abortExecution(ctx, c.Key, id, retryCancelled+reason)
		p.auditAbort(ctx, c, id, "retry-pending", reason)
	}
	for _, d := range p.queues.Drop(c.Key) {
		p.m.aborted.Inc()
		id := d.ExecutionID
		switch {
		case id != "":
			// A manual run: the API told its id, so it must end.
			p.abortExecution(ctx, d.Key, id, reason)
		case d.Retry > 0:
			id = ExecutionID(d.Key, d.ScheduledAt)
			p.abortExecution(ctx, d.Key, id, retryCancelled+reason)
		default:
			// A first run never dispatched: no event of its execution
			// exists yet, but the audit event names it, so it is ended
			// too (the executions read model gets its ABORTED row, which
			// the API opens; the quotas count it nowhere without its
			// NodeDue).
			id = ExecutionID(d.Key, d.ScheduledAt)
			p.abortExecution(ctx, d.Key, id, reason)
		}
		p.auditAbort(ctx, c, id, "waiting", reason)
	}
	f, ok := p.queues.Flight(c.Key.OLTID)
	if !ok || f.Key != c.Key || f.ExecutionID == "" {
		return
	}
	mode := streams.CancelPending
	if strings.HasPrefix(reason, "OLT ") {
		mode = streams.CancelAll
	}
	ec := streams.ExecutionCancel{ExecutionID: f.ExecutionID, OLTID: c.Key.OLTID, JobID: c.Key.JobID, Mode: mode, Reason: reason, At: p.now().UTC()}
	b, err := json.Marshal(ec)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
		_, err = p.cancelKV.Put(pctx, streams.CancelKey(f.ExecutionID), b)
		cancel()
	}
	if err != nil {
		p.m.publishErrs.Inc()
		p.log.Error().Err(err).Str(telemetry.KeyOLT, c.Key.OLTID).Str(telemetry.KeyExecution, f.ExecutionID).Msg("cancel execution")
		return
	}
	p.m.aborted.Inc()
	p.auditAbort(ctx, c, f.ExecutionID, "dispatched ("+mode+")", reason)
}

// retryCancelled begins the reason of a dropped retry's execution.aborted.
const retryCancelled = "pending retry cancelled: "

// abortUnrestored ends the retries a new term found pending in the
// persisted schedule for nodes that left the plan (or started over) while
// no planner ran: the configuration change that dropped them was replayed
// without abortNode (the initial plan restores, it does not compare).
func (p *planner) abortUnrestored(ctx context.Context) {
	for k, r := range p.sched.Unrestored() {
		if !r.Taken || r.RetryAt.IsZero() {
			continue // no retry pending: no execution event to end
		}
		reason := "task restarted"
		if _, planned := p.sched.Node(k); !planned {
			reason = p.state.why(k)
		}
		c := Change{Kind: streams.AuditTaskRemoved, Key: k, Spec: NodeSpec{JobName: k.JobID}}
		if j, ok := p.state.jobs[k.JobID]; ok {
			c.Spec.JobName = j.Name
		}
		p.m.aborted.Inc()
		id := ExecutionID(k, r.Next)
		p.abortExecution(ctx, k, id, retryCancelled+reason)
		p.auditAbort(ctx, c, id, "retry-pending", reason)
		p.touch(k) // its entry no longer says retry: a later term does not abort it again
	}
}

func (p *planner) auditAbort(ctx context.Context, c Change, executionID, what, reason string) {
	p.log.Info().Str(telemetry.KeyJob, c.Key.JobID).Str(telemetry.KeyOLT, c.Key.OLTID).Str(telemetry.KeyExecution, executionID).
		Str("what", what).Str("reason", reason).Msg("execution aborted")
	ev := streams.AuditEvent{OLTID: c.Key.OLTID, Kind: streams.AuditExecAborted, Level: streams.LevelWarning,
		Message: fmt.Sprintf("%s execution %s of task %q aborted: %s", what, executionID, c.Spec.JobName, reason),
		Details: map[string]any{"node_id": c.Key.NodeID(), "job_id": c.Key.JobID, "execution_id": executionID, "reason": reason, "what": what}}
	p.publishAudit(ctx, ev, streams.MsgID("audit", "planner", streams.AuditExecAborted, executionID, p.lastSeq))
}
