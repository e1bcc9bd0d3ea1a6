package planner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// The OLTs' availability (published by the availability service on
// FACHO_OLT): nothing is dispatched to an unavailable OLT. Its due nodes
// end as execution.skipped with the reason "olt unavailable", published by
// the planner in place of their NodeDue (the same Nats-Msg-Id a poller's
// skip of that attempt has); the skip comes back on FACHO_EXEC and ends
// the flight like a poller's skip: the next run is planned an interval
// later, no retry is spent and the failure count does not move. When the
// OLT is available again, its nodes whose last run was skipped are due at
// once and its queue is dispatched.

// availabilityLoadTimeout bounds the start-up read of the OLTs' last
// availability (one message per OLT): past it the planner starts with
// what it read and follows the rest as changes.
const availabilityLoadTimeout = 15 * time.Second

// loadAvailability reads the last availability of every OLT before the
// planner's loop starts, so its first dispatch already knows which OLTs
// are unavailable (read asynchronously, a restart could dispatch once to
// an OLT known to be down). It returns the stream sequence to follow the
// changes from.
func (p *planner) loadAvailability(ctx context.Context) (next uint64, err error) {
	ctx, cancel := context.WithTimeout(ctx, availabilityLoadTimeout)
	defer cancel()
	cons, err := p.js.OrderedConsumer(ctx, streams.StreamOLT, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.SubjectsOLTAvailability},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	})
	if err != nil {
		return 0, fmt.Errorf("planner: read OLT availability: %w", err)
	}
	pending := cons.CachedInfo().NumPending
	if pending == 0 {
		return 0, nil
	}
	it, err := cons.Messages()
	if err != nil {
		return 0, fmt.Errorf("planner: read OLT availability: %w", err)
	}
	defer it.Stop()
	stopAtDeadline := context.AfterFunc(ctx, it.Stop) // Next returns when the time is up
	defer stopAtDeadline()
	var last uint64
	for pending > 0 {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.Canceled) {
				p.log.Warn().Uint64("availability_read_seq", last).Msg("OLT availability not read in full at start: the rest follows as changes")
				break
			}
			return 0, fmt.Errorf("planner: read OLT availability: %w", err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return 0, fmt.Errorf("planner: read OLT availability: %w", err)
		}
		last, pending = md.Sequence.Stream, md.NumPending
		ev, ok, err := decodeAvailability(msg.Data())
		if err != nil {
			p.log.Warn().Err(err).Str(telemetry.KeySubject, msg.Subject()).Msg("skip malformed OLT availability")
			continue
		}
		if ok {
			p.onAvailability(ctx, ev)
		}
	}
	return last + 1, nil
}

// followAvailability reads the OLTs' availability changes from stream
// sequence from (loadAvailability read the state before it) into out.
func (p *planner) followAvailability(ctx context.Context, from uint64, out chan<- streams.OLTAvailability) (stop func(), err error) {
	return follow(ctx, p, streams.StreamOLT, "OLT availability", jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.SubjectsOLTAvailability},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    max(from, 1),
	}, decodeAvailability, out)
}

func decodeAvailability(data []byte) (streams.OLTAvailability, bool, error) {
	_, ev, err := streams.Decode[streams.OLTAvailability](data)
	if err != nil {
		return ev, false, err
	}
	if ev.OLTID == "" || !streams.ValidAvailability(ev.State) {
		return ev, false, fmt.Errorf("%w: olt.availability without olt_id or with state %q", streams.ErrMalformed, ev.State)
	}
	return ev, true, nil
}

// unavailableOLT tells whether no work may be dispatched to olt.
func (p *planner) unavailableOLT(olt string) bool {
	_, ok := p.unavailable[olt]
	return ok
}

// onAvailability folds an OLT's availability; an OLT that leaves
// unavailable gets its skipped nodes dispatched at once.
func (p *planner) onAvailability(ctx context.Context, ev streams.OLTAvailability) {
	_, was := p.unavailable[ev.OLTID]
	if ev.State == streams.AvailabilityUnavailable {
		if !was {
			p.unavailable[ev.OLTID] = ev.Since
			p.log.Warn().Str(telemetry.KeyOLT, ev.OLTID).Time("since", ev.Since).Msg("OLT unavailable: its due nodes are skipped")
		}
		p.m.unavailable.Set(float64(len(p.unavailable)))
		return
	}
	if !was {
		return
	}
	delete(p.unavailable, ev.OLTID)
	p.m.unavailable.Set(float64(len(p.unavailable)))
	if !p.caughtUp || p.initialPending {
		return // the plan is not built yet: its first tick dispatches
	}
	now := p.now()
	n := 0
	for _, k := range p.state.nodesOfOLT(ev.OLTID) {
		if p.sched.Expedite(k, now) {
			p.touch(k)
			n++
		}
	}
	p.log.Info().Str(telemetry.KeyOLT, ev.OLTID).Str("state", ev.State).Int("nodes_resumed", n).Msg("OLT answers again: its skipped nodes are due now")
	p.queueDue(now)
	p.dispatchOLT(ctx, ev.OLTID, now)
}

// skipUnavailable ends a due node of an unavailable OLT without running
// it: execution.skipped for each of its executions (the master and its
// chained nodes), read back like a poller's skip. The flight stays until
// then (at most one per OLT, as always).
func (p *planner) skipUnavailable(ctx context.Context, d DueNode, nd streams.NodeDue, now time.Time) error {
	attempt := p.firstAttempt(d, nd)
	type one struct{ exec, job string }
	all := []one{{nd.ExecutionID, nd.JobID}}
	for _, c := range nd.Chain {
		all = append(all, one{c.ExecutionID, c.JobID})
	}
	for _, e := range all {
		ev := streams.ExecutionSkipped{ExecutionID: e.exec, JobID: e.job, OLTID: nd.OLTID, PollerID: p.cfg.Instance,
			Attempt: attempt, ScheduledAt: nd.ScheduledAt.UTC(), SkippedAt: now.UTC(), Reason: streams.SkipReasonOLTUnavailable}
		id := streams.MsgID(e.exec, attempt, streams.PhaseSkipped)
		b, err := streams.EncodeWithID(id, p.cfg.Source, now, ev)
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, p.cfg.PublishTimeout)
			_, err = p.js.Publish(pctx, streams.SubjectExec(nd.OLTID, streams.PhaseSkipped), b, jetstream.WithMsgID(id))
			cancel()
		}
		if err != nil {
			p.undispatch(d, nd, err)
			return fmt.Errorf("publish skip %s: %w", id, err)
		}
	}
	p.queues.Dispatched(d.Key.OLTID, executionIDs(nd)...)
	p.queues.SetAttempt(d.Key.OLTID, attempt)
	p.touch(d.Key)
	p.m.skippedUnavailable.Inc()
	p.log.Info().Str(telemetry.KeyJob, d.Key.JobID).Str(telemetry.KeyOLT, d.Key.OLTID).Str(telemetry.KeyExecution, nd.ExecutionID).
		Msg("node of an unavailable OLT skipped")
	return nil
}
