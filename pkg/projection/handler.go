package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/streams"
)

// Change is what one message does to a read model.
type Change struct {
	// Apply runs in the transaction that advances the checkpoint. Nil: the
	// consumer has nothing to do with the message, which is acked as
	// ignored without a transaction.
	Apply func(ctx context.Context, tx pgx.Tx) error
	// Committed, when set, runs after Apply's transaction committed (publish
	// what it wrote, write a file line); not when the checkpoint already
	// covered the message. It may refine the outcome with m.SetOutcome.
	Committed func(ctx context.Context)
}

// Decoder turns a message into its Change. An error wrapping
// streams.ErrMalformed sends the message to the dead letters.
type Decoder func(m jsrouter.Msg) (Change, error)

// SubjectChecked wraps dec so that a message whose envelope does not belong
// on its subject (streams.CheckSubject: the type must match the subject,
// the subject's ids those of the data) is refused as malformed before dec
// sees it: a forged or misrouted event is dead-lettered, not applied.
func SubjectChecked(dec Decoder) Decoder {
	return func(m jsrouter.Msg) (Change, error) {
		env, err := streams.DecodeEnvelope(m.Data)
		if err != nil {
			return Change{}, err
		}
		if err := streams.CheckSubject(m.Subject, env); err != nil {
			return Change{}, err
		}
		return dec(m)
	}
}

// Handler returns the jsrouter handler of a projection: each message is
// decoded and applied with the checkpoint of its consumer (Apply, with
// m.Consumer as the checkpoint name), so a redelivery or a replay changes
// nothing twice; outcomes are applied, skipped or ignored.
//
// Malformed messages and errors the database will always give (Permanent)
// are dead-lettered by the router. A message that failed to decode also
// moves the checkpoint past it, so the checkpoint says how far the consumer
// got; decoding is repeatable, so a redelivery is dead-lettered again, not
// skipped. A message the database refused leaves the checkpoint alone: if
// its dead letter cannot be published, the redelivery is refused again
// instead of being skipped as applied. Any other error is transient.
//
// The checkpoint skips what it covers, so the consumer needs MaxAckPending
// 1 (streams.ConsumerConfigs): a NAKed message must not be overtaken.
func Handler(pool *pgxpool.Pool, decode Decoder) jsrouter.Handler {
	return func(ctx context.Context, m jsrouter.Msg) error {
		ch, err := decode(m)
		if err != nil {
			if !errors.Is(err, streams.ErrMalformed) {
				return err
			}
			if _, cerr := Apply(ctx, pool, m.Consumer, m.Seq, func(context.Context, pgx.Tx) error { return nil }); cerr != nil {
				return fmt.Errorf("checkpoint past malformed message: %w", cerr)
			}
			return err
		}
		if ch.Apply == nil {
			m.SetOutcome(jsrouter.OutcomeIgnored)
			return nil
		}
		applied, err := Apply(ctx, pool, m.Consumer, m.Seq, ch.Apply)
		if err != nil {
			return AsMalformed(err)
		}
		if !applied {
			m.SetOutcome(jsrouter.OutcomeSkipped)
			return nil
		}
		m.SetOutcome(jsrouter.OutcomeApplied)
		if ch.Committed != nil {
			ch.Committed(ctx)
		}
		return nil
	}
}
