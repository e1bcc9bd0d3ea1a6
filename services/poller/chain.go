package poller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/lease"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// runChain runs the chained nodes of a composite NodeDue after its master
// (seed 004), in order, under the master's lease, each as its own
// execution with its own events. A chained node's failure does not stop
// the chain unless StopOnFailure; then, and when the planner interrupted
// the composite, the rest end without running (skipped or aborted), so
// every execution of the composite ends. The caller releases the lease
// after the last terminal event (a holder publishes its terminal events
// before it releases: the interrupt sweep relies on it).
func (p *poller) runChain(work context.Context, node streams.NodeDue, master *execution, deliveredAt time.Time, log zerolog.Logger) (redeliver bool, delay time.Duration) {
	failed := master.outcome == outcomeFailed
	// discovered: a discovery of this composite succeeded with rows, so a
	// get after it may wait for its ONUs (execution.awaitONUs).
	discovered := node.Kind == streams.KindDiscovery && master.outcome == outcomeSuccess && master.values > 0
	stop, stopPhase := "", ""
	if master.outcome == outcomeInterrupted {
		stop, stopPhase = "composite interrupted: "+interruptReason(work), streams.PhaseAborted
	}
	for _, c := range node.Chain {
		sub := chainedNode(node, c)
		clog := log.With().Str(telemetry.KeyJob, c.JobID).Str(telemetry.KeyExecution, c.ExecutionID).Str("chained_to", node.ExecutionID).Logger()
		if stop == "" && interruption(work) != nil {
			stop, stopPhase = "composite interrupted: "+interruptReason(work), streams.PhaseAborted
		}
		if stop == "" && failed && node.StopOnFailure {
			stop, stopPhase = "chain stopped: a previous node of the composite failed", streams.PhaseSkipped
		}
		if stop != "" {
			if err := p.endUnrun(work, sub, master.lease, stopPhase, stop, clog); err != nil {
				return true, p.cfg.TransientDelay
			}
			continue
		}
		ex := &execution{p: p, node: sub, lease: master.lease, log: clog, kind: c.Kind}
		if c.Kind == streams.KindGet && discovered {
			// The projector may not have folded the discovery yet.
			ex.awaitONUs = p.cfg.ChainONUWait
		}
		if r, d := ex.run(work, deliveredAt); r {
			return r, d
		}
		failed = ex.outcome == outcomeFailed
		discovered = discovered || (c.Kind == streams.KindDiscovery && ex.outcome == outcomeSuccess && ex.values > 0)
		if ex.outcome == outcomeInterrupted {
			stop, stopPhase = "composite interrupted: "+interruptReason(work), streams.PhaseAborted
		}
	}
	return false, 0
}

// endUnrun publishes the end of a chained node that did not run: skipped
// (the chain stopped on a failure) or aborted (the composite was
// interrupted). Nothing started for it, so releasing the lease first
// (no more SNMP work follows) leaves the interrupt sweep nothing to see.
func (p *poller) endUnrun(work context.Context, node streams.NodeDue, l *lease.Lease, phase, reason string, log zerolog.Logger) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(work), finalPublishTimeout)
	defer cancel()
	if err := l.Release(ctx); err != nil && !errors.Is(err, lease.ErrLost) {
		log.Warn().Err(err).Msg("release lease")
	}
	if err := p.publishNotRun(ctx, node, phase, reason, time.Now().UTC()); err != nil {
		log.Warn().Err(err).Str("phase", phase).Msg("publish end of an unrun chained node")
		return err
	}
	log.Info().Str("phase", phase).Str("reason", reason).Msg("chained node not run")
	return nil
}

// chainedNode is c, a chained node of the composite node, as the NodeDue
// runChain runs it under: the composite's OLT, target, schedule and
// attempt, c's execution, job and work.
func chainedNode(node streams.NodeDue, c streams.ChainedNode) streams.NodeDue {
	sub := node
	sub.ExecutionID, sub.JobID, sub.JobName, sub.Kind, sub.OIDs, sub.TimeoutSeconds = c.ExecutionID, c.JobID, c.JobName, c.Kind, c.OIDs, c.TimeoutSeconds
	sub.Chain, sub.StopOnFailure = nil, false
	return sub
}

// publishNotRun publishes the end of node, an execution this poller did
// not run: skipped (phase PhaseSkipped; its Nats-Msg-Id skippedMsgID, per
// attempt) or aborted (PhaseAborted; <execution_id>:aborted), at now.
func (p *poller) publishNotRun(ctx context.Context, node streams.NodeDue, phase, reason string, now time.Time) error {
	var ev streams.Event = streams.ExecutionSkipped{ExecutionID: node.ExecutionID, JobID: node.JobID, OLTID: node.OLTID, PollerID: p.cfg.PollerID,
		Attempt: node.Attempt, ScheduledAt: node.ScheduledAt.UTC(), SkippedAt: now.UTC(), Reason: reason}
	id := skippedMsgID(node)
	if phase == streams.PhaseAborted {
		ev = streams.ExecutionAborted{ExecutionID: node.ExecutionID, JobID: node.JobID, OLTID: node.OLTID, PollerID: p.cfg.PollerID, Reason: reason, AbortedAt: now.UTC()}
		id = streams.MsgID(node.ExecutionID, phase)
	}
	b, err := streams.EncodeWithID(id, p.cfg.Source, now, ev)
	if err == nil {
		_, err = p.js.Publish(ctx, streams.SubjectExec(node.OLTID, phase), b, jetstream.WithMsgID(id))
	}
	if err != nil {
		return fmt.Errorf("publish %s of execution %s: %w", phase, node.ExecutionID, err)
	}
	return nil
}

// publishNotRunWhole is publishNotRun of node and, for a composite, of
// each of its chained nodes (reason "composite <phase>: ..."), in that
// order, stopping at the first failure: the planner's flight of a
// composite ends only when every execution of it has ended (else the
// OLT's queue waits for the stuck timeout), and each execution gets its
// row in the read model (a NodeDue records only its master's). The
// Nats-Msg-Ids make a redelivery's events already published duplicates.
func (p *poller) publishNotRunWhole(ctx context.Context, node streams.NodeDue, phase, reason string, now time.Time) error {
	if err := p.publishNotRun(ctx, node, phase, reason, now); err != nil {
		return err
	}
	for _, c := range node.Chain {
		if err := p.publishNotRun(ctx, chainedNode(node, c), phase, "composite "+phase+": "+reason, now); err != nil {
			return err
		}
	}
	return nil
}

func interruptReason(ctx context.Context) string {
	if ie := interruption(ctx); ie != nil {
		return ie.reason
	}
	return "cancelled"
}
