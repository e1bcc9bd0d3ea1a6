package alerter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/deadletter"
	"github.com/facho-olt/facho/streams"
)

// onuItem is one fetched onu.changed.
type onuItem struct {
	msg jetstream.Msg
	seq uint64
	ev  streams.ONUChanged
	bad string // why it is malformed ("" valid)
}

// onuLoop consumes alerter-onu in groups, the hot path (10 % of a
// million ONUs changing per poll cycle): what is waiting, up to
// GroupMessages, is evaluated in stream order and persisted with the
// consumer's checkpoint (the group's last sequence) in one transaction,
// then acked. Messages at or below the checkpoint (a redelivery after a
// crash between commit and ack) are acked unevaluated; malformed ones are
// dead-lettered. A failed transaction reloads the engine from the
// database and is retried with the same group (kept in progress), so no
// later message overtakes it.
func (a *alerter) onuLoop(ctx context.Context) error {
	return groupLoop(ctx, a, streams.StreamONU, streams.ConsumerAlerterONU, a.fetchONU, a.applyONU)
}

// groupLoop runs a grouped consumer of the alerter until ctx ends: fetch
// what is waiting, apply it as one group (apply handles its own retries
// and acks); a failed fetch is logged and retried after NackDelay.
func groupLoop[T any](ctx context.Context, a *alerter, stream, consumer string,
	fetch func(context.Context, jetstream.Consumer) ([]T, error), apply func(context.Context, []T)) error {
	cons, err := a.deps.JS.Consumer(ctx, stream, consumer)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("consumer %s: %w", consumer, err)
	}
	for ctx.Err() == nil {
		items, err := fetch(ctx, cons)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			a.deps.Log.Warn().Err(err).Str("consumer", consumer).Msg("fetch")
			sleep(ctx, a.cfg.NackDelay)
			continue
		}
		if len(items) > 0 {
			apply(ctx, items)
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (a *alerter) fetchONU(ctx context.Context, cons jetstream.Consumer) ([]onuItem, error) {
	batch, err := cons.FetchNoWait(a.cfg.GroupMessages)
	if err != nil {
		return nil, err
	}
	items := collectONU(batch)
	if len(items) > 0 {
		return items, nil
	}
	batch, err = cons.Fetch(1, jetstream.FetchMaxWait(a.cfg.FetchWait))
	if err != nil {
		return nil, err
	}
	return collectONU(batch), nil
}

func collectONU(batch jetstream.MessageBatch) []onuItem {
	var items []onuItem
	for m := range batch.Messages() {
		it := onuItem{msg: m}
		meta, err := m.Metadata()
		if err != nil {
			it.bad = "no metadata: " + err.Error()
		} else {
			it.seq = meta.Sequence.Stream
			_, ev, err := streams.DecodeOn[streams.ONUChanged](m.Subject(), m.Data())
			if err != nil {
				it.bad = err.Error()
			} else {
				it.ev = ev
			}
		}
		items = append(items, it)
	}
	return items
}

func (a *alerter) applyONU(ctx context.Context, items []onuItem) {
	// Dead letters first: a malformed message is never retried.
	valid := items[:0:0]
	for _, it := range items {
		if it.bad == "" && it.seq > 0 {
			valid = append(valid, it)
			continue
		}
		a.m.onuEvents.WithLabelValues("dead_lettered").Inc()
		if err := deadletter.Publish(ctx, a.deps.JS, streams.ConsumerAlerterONU, a.cfg.Source, it.msg, it.bad); err != nil && ctx.Err() == nil {
			a.deps.Log.Warn().Err(err).Str("consumer", streams.ConsumerAlerterONU).Msg("dead letter")
		}
	}
	if len(valid) == 0 {
		return
	}
	last := valid[len(valid)-1].seq
	for attempt := 0; ; attempt++ {
		applied, out, err := a.commitONU(ctx, valid, last)
		if err == nil {
			for _, it := range valid {
				_ = it.msg.Ack()
			}
			a.m.onuEvents.WithLabelValues("applied").Add(float64(applied))
			a.m.onuEvents.WithLabelValues("skipped").Add(float64(len(valid) - applied))
			now := time.Now()
			for _, it := range valid {
				a.m.lag.Observe(now.Sub(it.ev.ObservedAt).Seconds())
			}
			a.transitions(out)
			return
		}
		if ctx.Err() != nil {
			return // unacked: redelivered to the next active replica
		}
		a.deps.Log.Warn().Err(err).Int("attempt", attempt+1).Int("messages", len(valid)).Msg("alerter onu group")
		for _, it := range valid {
			_ = it.msg.InProgress()
		}
		sleep(ctx, min(a.cfg.NackDelay, time.Duration(attempt+1)*200*time.Millisecond))
	}
}

// commitONU evaluates the group's messages above the checkpoint and
// commits their state, outbox and the checkpoint (last) at once.
func (a *alerter) commitONU(ctx context.Context, items []onuItem, last uint64) (applied int, out []Transition, err error) {
	start := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	err = pgx.BeginFunc(ctx, a.deps.DB, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO checkpoints (consumer, last_seq) VALUES ($1, 0) ON CONFLICT (consumer) DO NOTHING`, streams.ConsumerAlerterONU); err != nil {
			return fmt.Errorf("create checkpoint: %w", err)
		}
		var cp int64
		if err := tx.QueryRow(ctx, `SELECT last_seq FROM checkpoints WHERE consumer = $1 FOR UPDATE`, streams.ConsumerAlerterONU).Scan(&cp); err != nil {
			return fmt.Errorf("lock checkpoint: %w", err)
		}
		for _, it := range items {
			if it.seq > uint64(cp) {
				a.eng.OnONU(it.ev)
				applied++
			}
		}
		var dirty map[stateID]bool
		dirty, out = a.eng.Take()
		if err := a.eng.persist(ctx, tx, dirty, out, a.cfg.Source, len(a.cfg.AlertmanagerURLs) > 0); err != nil {
			return err
		}
		if last > uint64(cp) {
			if _, err := tx.Exec(ctx, `UPDATE checkpoints SET last_seq = $2, updated_at = now() WHERE consumer = $1`, streams.ConsumerAlerterONU, int64(last)); err != nil {
				return fmt.Errorf("advance checkpoint: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		a.reload(ctx)
		return 0, nil, errors.Join(fmt.Errorf("alerter onu group up to seq %d", last), err)
	}
	if applied > 0 {
		a.m.evalSeconds.Observe(time.Since(start).Seconds())
	}
	return applied, out, nil
}
