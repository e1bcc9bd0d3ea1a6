// Package integrator is an integrator's example consumer of Facho's
// ONU-change events (facho.onu.<olt_id>.<discovered|status|updated>, stream
// FACHO_ONU; see streams/CATALOGUE.md): a durable JetStream consumer that
// survives restarts with no gap and no duplicate.
//
// The recipe, in three rules:
//
//  1. A durable pull consumer with explicit acks (EnsureConsumer): the
//     server remembers what was acknowledged across restarts of the
//     integrator and of the server.
//  2. The integrator stores the stream sequence of the last event it
//     applied in the same transaction as the effect (Sink.Apply): a crash
//     between the effect and the ack redelivers the event, and the stored
//     sequence says it was applied already, so it is acked and skipped.
//     Acks alone cannot give "no duplicate"; the sequence can.
//  3. One event in flight (MaxAckPending 1) and stop at the first failure:
//     nothing is applied after an event that was not, so there is no gap.
//     A jump in sequences (events expired by the stream's retention while
//     the integrator was down longer than FACHO_ONU_MAX_AGE) is reported
//     to Sink.Gap, not hidden.
//
// Creating a durable consumer needs the admin identity (or an identity of
// your own in pkg/natsauth's table); reading needs only the observer's.
package integrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// Sink is where an integrator's effects go.
type Sink interface {
	// Last returns the stream sequence of the last event applied (0: none).
	Last(ctx context.Context) (uint64, error)
	// Apply applies ev and records seq as the last sequence, atomically
	// (one database transaction).
	Apply(ctx context.Context, seq uint64, ev streams.ONUChanged) error
	// Gap is told when events between from and to (inclusive) are no
	// longer in the stream.
	Gap(from, to uint64)
}

// EnsureConsumer creates or updates the durable consumer name on
// facho.onu.> (admin identity). ackWait is how soon an event a crashed
// integrator did not ack is delivered again.
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, name string, ackWait time.Duration) (jetstream.Consumer, error) {
	c, err := js.CreateOrUpdateConsumer(ctx, streams.StreamONU, jetstream.ConsumerConfig{
		Durable:       name,
		Description:   "integrator example: ONU changes, no gap, no duplicate",
		FilterSubject: streams.SubjectsONU,
		AckPolicy:     jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckWait:       ackWait,
		MaxAckPending: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", name, err)
	}
	return c, nil
}

// Run applies the consumer's events to sink until ctx ends (nil) or the
// sink fails (the error; the event is delivered again on the next Run).
func Run(ctx context.Context, cons jetstream.Consumer, sink Sink) error {
	last, err := sink.Last(ctx)
	if err != nil {
		return fmt.Errorf("last applied: %w", err)
	}
	for ctx.Err() == nil {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		for m := range batch.Messages() {
			if last, err = handle(ctx, m, last, sink); err != nil {
				return err
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("fetch: %w", err)
		}
	}
	return nil
}

// handle applies one event unless the sink has it already, then acks it.
func handle(ctx context.Context, m jetstream.Msg, last uint64, sink Sink) (uint64, error) {
	meta, err := m.Metadata()
	if err != nil {
		return last, fmt.Errorf("metadata: %w", err)
	}
	seq := meta.Sequence.Stream
	if seq <= last {
		return last, m.Ack() // applied before a crash: not again
	}
	_, ev, err := streams.DecodeOn[streams.ONUChanged](m.Subject(), m.Data())
	if err != nil {
		// Not an ONU change of this contract version: never apply it, and
		// do not block on it.
		return last, m.TermWithReason(err.Error())
	}
	if last > 0 && seq > last+1 {
		sink.Gap(last+1, seq-1)
	}
	if err := sink.Apply(ctx, seq, ev); err != nil {
		_ = m.Nak()
		return last, fmt.Errorf("apply seq %d: %w", seq, err)
	}
	return seq, m.Ack()
}
