package poller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// attemptSlack widens the search for earlier attempts to cover clock skew
// between the planner (ScheduledAt) and the server (stream timestamps).
const attemptSlack = 5 * time.Minute

// attemptNumber returns the attempt number of the execution about to start:
// one more than the highest attempt of its ExecutionStarted events already
// in FACHO_EXEC.
//
// A NodeDue carrying the planner's Attempt whose OLT saw no start since the
// NodeDue was stored takes that number without a scan (the common case
// with the planner's per-OLT queue, where the last start on the OLT is the
// previous node's).
//
// Why not the NodeDue's NumDelivered: a NodeDue NAKed because its OLT was
// busy is redelivered without any attempt having run, so deliveries
// overcount. Counting started events is recomputable (a crash after
// publishing "started" is seen by the next attempt) and exact because the
// caller holds the OLT's lease: no other poller can publish a started event
// for this OLT meanwhile. The search starts at the earlier of the NodeDue's
// ScheduledAt (kept by the planner across re-emissions of one execution)
// and the NodeDue message's own timestamp, minus attemptSlack.
func attemptNumber(ctx context.Context, js jetstream.JetStream, exec jetstream.Stream, node streams.NodeDue, deliveredAt time.Time) (int, error) {
	subject := streams.SubjectExec(node.OLTID, streams.PhaseStarted)
	since := deliveredAt
	if !node.ScheduledAt.IsZero() && node.ScheduledAt.Before(since) {
		since = node.ScheduledAt
	}
	since = since.Add(-attemptSlack)

	last, err := exec.GetLastMsgForSubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return 1, nil
	case err != nil:
		return 0, fmt.Errorf("last started event of olt %s: %w", node.OLTID, err)
	case last.Time.Before(since):
		return 1, nil // nothing started on this OLT since the execution was planned
	}
	if highest, ok := startedAttempt(last.Subject, last.Data, node.ExecutionID); ok {
		// The last start on this OLT was ours: attempts only grow.
		return highest + 1, nil
	}
	if node.Attempt > 0 && last.Time.Before(deliveredAt) {
		// Nothing started on this OLT since the planner dispatched this
		// NodeDue (both times are the server's): the planner's count is
		// exact, no scan needed.
		return node.Attempt, nil
	}

	cons, err := js.OrderedConsumer(ctx, streams.StreamExec, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &since,
	})
	if err != nil {
		return 0, fmt.Errorf("scan started events of olt %s: %w", node.OLTID, err)
	}
	defer func() {
		// Ordered consumers are ephemeral; delete now rather than leave it
		// to the inactivity threshold.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = js.DeleteConsumer(dctx, streams.StreamExec, cons.CachedInfo().Name)
	}()
	highest := 0
	for {
		batch, err := cons.FetchNoWait(256)
		if err != nil {
			return 0, fmt.Errorf("scan started events of olt %s: %w", node.OLTID, err)
		}
		var seq uint64
		got := 0
		for msg := range batch.Messages() {
			got++
			if meta, err := msg.Metadata(); err == nil {
				seq = meta.Sequence.Stream
			}
			if n, ok := startedAttempt(msg.Subject(), msg.Data(), node.ExecutionID); ok && n > highest {
				highest = n
			}
		}
		if err := batch.Error(); err != nil {
			return 0, fmt.Errorf("scan started events of olt %s: %w", node.OLTID, err)
		}
		if seq >= last.Sequence || got == 0 {
			return highest + 1, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("scan started events of olt %s: %w", node.OLTID, err)
		}
	}
}

// startedAttempt returns the attempt of a started event of executionID;
// one on a subject not its own (streams.CheckSubject) does not count.
func startedAttempt(subject string, data []byte, executionID string) (int, bool) {
	_, ev, err := streams.DecodeOn[streams.ExecutionStarted](subject, data)
	if err != nil || ev.ExecutionID != executionID {
		return 0, false
	}
	return ev.Attempt, true
}
