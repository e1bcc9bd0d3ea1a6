package alerter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/deadletter"
	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// alertItem is one fetched alert event and its statement.
type alertItem struct {
	msg jetstream.Msg
	seq uint64
	st  statement
	bad string // why it is malformed ("" valid)
}

// alertsLoop projects FACHO_ALERT into the alerts read model in groups,
// as onuLoop evaluates the ONU changes: what is waiting, up to
// GroupMessages, goes in one transaction with the consumer's checkpoint
// (the group's last sequence), one statement per event sent together,
// then acked. Messages at or below the checkpoint are acked unapplied;
// malformed ones are dead-lettered (and the checkpoint moves past them,
// as the per-message projection does). A group the database refuses for
// good (a data exception, a constraint) is applied again message by
// message, each with the checkpoint, so only the refused message is
// dead-lettered; any other failure retries the same group.
func (a *alerter) alertsLoop(ctx context.Context) error {
	return groupLoop(ctx, a, streams.StreamAlert, streams.ConsumerAlerterAlerts, a.fetchAlerts, a.applyAlerts)
}

func (a *alerter) fetchAlerts(ctx context.Context, cons jetstream.Consumer) ([]alertItem, error) {
	batch, err := cons.FetchNoWait(a.cfg.GroupMessages)
	if err != nil {
		return nil, err
	}
	items := collectAlerts(batch)
	if len(items) > 0 {
		return items, nil
	}
	batch, err = cons.Fetch(1, jetstream.FetchMaxWait(a.cfg.FetchWait))
	if err != nil {
		return nil, err
	}
	return collectAlerts(batch), nil
}

func collectAlerts(batch jetstream.MessageBatch) []alertItem {
	var items []alertItem
	for m := range batch.Messages() {
		it := alertItem{msg: m}
		meta, err := m.Metadata()
		if err != nil {
			it.bad = "no metadata: " + err.Error()
		} else {
			it.seq = meta.Sequence.Stream
			it.st, err = checkedStatement(jsrouter.Msg{Stream: streams.StreamAlert, Consumer: streams.ConsumerAlerterAlerts,
				Subject: m.Subject(), Seq: it.seq, Data: m.Data()})
			if err != nil {
				it.bad = err.Error()
			}
		}
		items = append(items, it)
	}
	return items
}

// checkedStatement is alertStatement behind the subject check of the
// per-message projection (projection.SubjectChecked).
func checkedStatement(m jsrouter.Msg) (statement, error) {
	env, err := streams.DecodeEnvelope(m.Data)
	if err != nil {
		return statement{}, err
	}
	if err := streams.CheckSubject(m.Subject, env); err != nil {
		return statement{}, err
	}
	return alertStatement(m)
}

func (a *alerter) applyAlerts(ctx context.Context, items []alertItem) {
	var last uint64
	valid := items[:0:0]
	for _, it := range items {
		last = max(last, it.seq)
		if it.bad == "" && it.seq > 0 {
			valid = append(valid, it)
			continue
		}
		a.m.alertEvents.WithLabelValues("dead_lettered").Inc()
		if err := deadletter.Publish(ctx, a.deps.JS, streams.ConsumerAlerterAlerts, a.cfg.Source, it.msg, it.bad); err != nil && ctx.Err() == nil {
			a.deps.Log.Warn().Err(err).Str("consumer", streams.ConsumerAlerterAlerts).Msg("dead letter")
		}
	}
	if last == 0 {
		return
	}
	for attempt := 0; ; attempt++ {
		applied, err := a.commitAlerts(ctx, valid, last)
		if err == nil {
			for _, it := range items {
				_ = it.msg.Ack()
			}
			a.m.alertEvents.WithLabelValues("applied").Add(float64(applied))
			a.m.alertEvents.WithLabelValues("skipped").Add(float64(len(valid) - applied))
			return
		}
		if ctx.Err() != nil {
			return // unacked: redelivered
		}
		if projection.Permanent(err) {
			if !a.alertsOneByOne(ctx, valid, last) {
				return // unacked: redelivered
			}
			for _, it := range items {
				_ = it.msg.Ack()
			}
			return
		}
		a.deps.Log.Warn().Err(err).Int("attempt", attempt+1).Int("messages", len(items)).Msg("alerts read model group")
		for _, it := range items {
			_ = it.msg.InProgress()
		}
		sleep(ctx, min(a.cfg.NackDelay, time.Duration(attempt+1)*200*time.Millisecond))
	}
}

// commitAlerts applies the statements of the messages above the
// checkpoint and moves the checkpoint to last, in one transaction.
func (a *alerter) commitAlerts(ctx context.Context, items []alertItem, last uint64) (applied int, err error) {
	err = pgx.BeginFunc(ctx, a.deps.DB, func(tx pgx.Tx) error {
		applied = 0
		if _, err := tx.Exec(ctx, `INSERT INTO checkpoints (consumer, last_seq) VALUES ($1, 0) ON CONFLICT (consumer) DO NOTHING`, streams.ConsumerAlerterAlerts); err != nil {
			return fmt.Errorf("create checkpoint: %w", err)
		}
		var cp int64
		if err := tx.QueryRow(ctx, `SELECT last_seq FROM checkpoints WHERE consumer = $1 FOR UPDATE`, streams.ConsumerAlerterAlerts).Scan(&cp); err != nil {
			return fmt.Errorf("lock checkpoint: %w", err)
		}
		if last <= uint64(cp) {
			return nil
		}
		b := &pgx.Batch{}
		for _, it := range items {
			if it.seq > uint64(cp) && it.st.sql != "" {
				b.Queue(it.st.sql, it.st.args...)
				applied++
			}
		}
		b.Queue(`UPDATE checkpoints SET last_seq = $2, updated_at = now() WHERE consumer = $1`, streams.ConsumerAlerterAlerts, int64(last))
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("project %d alert events: %w", applied, err)
		}
		return nil
	})
	if err != nil {
		return 0, errors.Join(fmt.Errorf("alerts read model group up to seq %d", last), err)
	}
	return applied, nil
}

// alertsOneByOne applies a group the database refused message by
// message, each with its checkpoint: a message refused for good is
// dead-lettered and the checkpoint moves past it. False: ctx ended first.
func (a *alerter) alertsOneByOne(ctx context.Context, items []alertItem, last uint64) bool {
	for _, it := range items {
		for attempt := 0; ctx.Err() == nil; attempt++ {
			applied, err := projection.Apply(ctx, a.deps.DB, streams.ConsumerAlerterAlerts, it.seq, func(ctx context.Context, tx pgx.Tx) error {
				if it.st.sql == "" {
					return nil
				}
				_, err := tx.Exec(ctx, it.st.sql, it.st.args...)
				return err
			})
			if err == nil {
				if applied {
					a.m.alertEvents.WithLabelValues("applied").Inc()
				}
				break
			}
			if projection.Permanent(err) {
				a.m.alertEvents.WithLabelValues("dead_lettered").Inc()
				if derr := deadletter.Publish(ctx, a.deps.JS, streams.ConsumerAlerterAlerts, a.cfg.Source, it.msg, err.Error()); derr != nil && ctx.Err() == nil {
					a.deps.Log.Warn().Err(derr).Str("consumer", streams.ConsumerAlerterAlerts).Msg("dead letter")
				}
				if _, err := projection.Apply(ctx, a.deps.DB, streams.ConsumerAlerterAlerts, it.seq, func(context.Context, pgx.Tx) error { return nil }); err != nil && ctx.Err() == nil {
					a.deps.Log.Warn().Err(err).Msg("checkpoint past a refused alert event")
				}
				break
			}
			a.deps.Log.Warn().Err(err).Uint64("seq", it.seq).Msg("alerts read model")
			sleep(ctx, min(a.cfg.NackDelay, time.Duration(attempt+1)*200*time.Millisecond))
		}
	}
	if ctx.Err() != nil {
		return false
	}
	// The dead-lettered messages of the group may end it.
	if _, err := projection.Apply(ctx, a.deps.DB, streams.ConsumerAlerterAlerts, last, func(context.Context, pgx.Tx) error { return nil }); err != nil {
		a.deps.Log.Warn().Err(err).Msg("checkpoint past the alert events group")
		return false
	}
	return true
}
