package projector

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
)

// outboxRow is one ONU-change event waiting to be published.
type outboxRow struct {
	ID      int64
	MsgID   string
	Subject string
	Payload []byte
}

// outbox drains onu_event_outbox, where versions before the grouped
// varbind projection left ONU-change events: it publishes them and deletes
// them once JetStream acknowledged them (see varbindloop.go's lead).
type outbox struct {
	js      jetstream.JetStream
	db      *pgxpool.Pool
	batch   int
	timeout time.Duration
}

// flush publishes every pending event, oldest first, in rounds of batch.
// Two replicas flushing at once publish some events twice; the stream's
// duplicate window drops the second copy.
func (o *outbox) flush(ctx context.Context) error {
	for {
		n, err := o.flushRound(ctx)
		if err != nil || n < o.batch {
			return err
		}
	}
}

func (o *outbox) flushRound(ctx context.Context) (int, error) {
	rows, err := o.db.Query(ctx, `SELECT id, msg_id, subject, payload FROM onu_event_outbox ORDER BY id LIMIT $1`, o.batch)
	if err != nil {
		return 0, fmt.Errorf("read outbox: %w", err)
	}
	pending, err := pgx.CollectRows(rows, pgx.RowToStructByPos[outboxRow])
	if err != nil {
		return 0, fmt.Errorf("read outbox: %w", err)
	}
	if len(pending) == 0 {
		return 0, nil
	}
	if _, err := publishAll(ctx, o.js, pending, o.timeout); err != nil {
		return 0, err
	}
	done := make([]int64, len(pending))
	for i, r := range pending {
		done[i] = r.ID
	}
	if _, err := o.db.Exec(ctx, `DELETE FROM onu_event_outbox WHERE id = ANY($1)`, done); err != nil {
		return 0, fmt.Errorf("delete published events from the outbox: %w", err)
	}
	return len(pending), nil
}
