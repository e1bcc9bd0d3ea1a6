package projector

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/deadletter"
	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// The trap consumer's loop. Traps come in bursts (a PON cut is one per
// ONU, an unstable OLT floods), so the loop fetches what is waiting (up to
// trapsGroup messages; a lone trap at once) and applies it in one
// transaction, rather than a transaction and an acknowledgement round trip
// per message. Each trap event is idempotent on its own (the traps row by
// trap id, onu_history and the outbox by their keys, an ONU's status only
// from a trap newer than its last trap and its last poll), so a
// redelivery, a group applied twice or two projectors taking groups side
// by side change nothing twice, and no lock or connection is held between
// groups. The checkpoint records the highest sequence applied. A
// malformed message is dead-lettered after the commit; each message is
// applied under a savepoint, so one the schema refuses is dead-lettered
// without losing the others.

// trapsGroup bounds the messages applied in one transaction.
const trapsGroup = 256

func (p *projector) runTraps(ctx context.Context) error {
	cons, err := p.js.Consumer(ctx, streams.StreamTrap, streams.ConsumerProjectorTraps)
	for err != nil {
		if ctx.Err() != nil {
			return nil
		}
		p.log.Warn().Err(err).Msg("trap consumer")
		sleepCtx(ctx, p.cfg.NackDelay)
		cons, err = p.js.Consumer(ctx, streams.StreamTrap, streams.ConsumerProjectorTraps)
	}
	for ctx.Err() == nil {
		// Wait for the first message, then take what else is waiting at
		// once: a lone trap is applied without waiting for a group.
		msgs, err := fetchTraps(cons, 1, jetstream.FetchMaxWait(p.cfg.FetchWait))
		if err == nil && len(msgs) > 0 {
			var more []jetstream.Msg
			more, err = fetchTraps(cons, trapsGroup-1, nil)
			msgs = append(msgs, more...)
		}
		if err != nil && len(msgs) == 0 {
			if ctx.Err() != nil {
				return nil
			}
			if !errors.Is(err, jetstream.ErrNoMessages) {
				p.log.Warn().Err(err).Msg("fetch traps")
				sleepCtx(ctx, p.cfg.NackDelay)
			}
			continue
		}
		if len(msgs) == 0 {
			continue
		}
		if err := p.applyTraps(ctx, msgs); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			p.log.Warn().Err(err).Int("messages", len(msgs)).Msg("applying traps failed; will retry")
			for _, m := range msgs {
				_ = m.NakWithDelay(p.cfg.NackDelay)
			}
			sleepCtx(ctx, p.cfg.NackDelay)
		}
	}
	return nil
}

// fetchTraps fetches up to n messages: waiting with wait, or only what is
// there with none.
func fetchTraps(cons jetstream.Consumer, n int, wait jetstream.FetchOpt) ([]jetstream.Msg, error) {
	var batch jetstream.MessageBatch
	var err error
	if wait != nil {
		batch, err = cons.Fetch(n, wait)
	} else {
		batch, err = cons.FetchNoWait(n)
	}
	if err != nil {
		return nil, err
	}
	var out []jetstream.Msg
	for m := range batch.Messages() {
		out = append(out, m)
	}
	return out, batch.Error()
}

// applyTraps applies one group in one transaction, then publishes what it
// queued, dead-letters what it refused and acknowledges the group.
func (p *projector) applyTraps(ctx context.Context, msgs []jetstream.Msg) error {
	type refused struct {
		msg    jetstream.Msg
		reason string
	}
	var dead []refused
	var committed []func(context.Context)
	err := pgx.BeginFunc(ctx, p.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO checkpoints (consumer, last_seq) VALUES ($1, 0) ON CONFLICT (consumer) DO NOTHING`, streams.ConsumerProjectorTraps); err != nil {
			return fmt.Errorf("create checkpoint: %w", err)
		}
		// A rebuild of onu_data (the traps are one of its sources) holds
		// the checkpoint FOR UPDATE while it swaps: the group waits for
		// it before touching an ONU row the swap replaces (FOR KEY SHARE:
		// groups do not wait for each other).
		if _, err := tx.Exec(ctx, `SELECT last_seq FROM checkpoints WHERE consumer = $1 FOR KEY SHARE`, streams.ConsumerProjectorTraps); err != nil {
			return fmt.Errorf("read checkpoint: %w", err)
		}
		top := int64(0)
		for _, m := range msgs {
			meta, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("trap message metadata: %w", err)
			}
			seq := int64(meta.Sequence.Stream)
			top = max(top, seq)
			jm := jsrouter.Msg{Stream: streams.StreamTrap, Consumer: streams.ConsumerProjectorTraps, Subject: m.Subject(), Seq: uint64(seq), Data: m.Data()}
			ch, err := projection.SubjectChecked(p.decodeTrap)(jm)
			if err != nil {
				if !errors.Is(err, streams.ErrMalformed) {
					return err
				}
				dead = append(dead, refused{m, err.Error()})
				continue
			}
			sp, err := tx.Begin(ctx)
			if err != nil {
				return fmt.Errorf("savepoint: %w", err)
			}
			if err := ch.Apply(ctx, sp); err != nil {
				if rerr := sp.Rollback(ctx); rerr != nil {
					return fmt.Errorf("roll back to savepoint: %w", rerr)
				}
				if !projection.Permanent(err) {
					return err
				}
				dead = append(dead, refused{m, err.Error()})
				continue
			}
			if err := sp.Commit(ctx); err != nil {
				return fmt.Errorf("release savepoint: %w", err)
			}
			if ch.Committed != nil {
				committed = append(committed, ch.Committed)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE checkpoints SET last_seq = $2, updated_at = now() WHERE consumer = $1 AND last_seq < $2`, streams.ConsumerProjectorTraps, top); err != nil {
			return fmt.Errorf("advance checkpoint to %d: %w", top, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("project %d traps: %w", len(msgs), err)
	}
	// The outbox holds every event the group queued: one flush publishes
	// them all.
	if len(committed) > 0 {
		if err := p.outbox.flush(ctx); err != nil {
			// Left in the outbox: the next group or the projector's next
			// start publishes them.
			p.metrics.outboxFailures.Inc()
			p.log.Warn().Err(err).Msg("publishing the traps' ONU changes failed; will retry")
		}
	}
	for _, d := range dead {
		if err := deadletter.Publish(ctx, p.js, streams.ConsumerProjectorTraps, p.cfg.Source, d.msg, d.reason); err != nil {
			p.log.Warn().Err(err).Msg("dead-letter a trap message")
		}
	}
	for _, m := range msgs {
		_ = m.Ack()
	}
	p.metrics.trapMessages.Add(float64(len(msgs)))
	return nil
}
