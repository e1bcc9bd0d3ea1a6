package projector

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// outboxRow is one ONU-change event waiting to be published.
type outboxRow struct {
	ID      int64
	MsgID   string
	Subject string
	Payload []byte
}

// insertOutbox writes events in the projection's transaction. An id
// already there (the same batch projected again after a reset) is kept.
func insertOutbox(ctx context.Context, tx pgx.Tx, rows []outboxRow) error {
	if len(rows) == 0 {
		return nil
	}
	ids := make([]string, len(rows))
	subjects := make([]string, len(rows))
	payloads := make([][]byte, len(rows))
	for i, r := range rows {
		ids[i], subjects[i], payloads[i] = r.MsgID, r.Subject, r.Payload
	}
	_, err := tx.Exec(ctx, `INSERT INTO onu_event_outbox (msg_id, subject, payload)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[]) ON CONFLICT (msg_id) DO NOTHING`, ids, subjects, payloads)
	if err != nil {
		return fmt.Errorf("write %d onu events to the outbox: %w", len(rows), err)
	}
	return nil
}

// outbox publishes committed ONU-change events and deletes them once
// JetStream acknowledged them.
type outbox struct {
	js      jetstream.JetStream
	db      *pgxpool.Pool
	batch   int
	timeout time.Duration
	log     zerolog.Logger
	metrics *metrics
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
	pctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	futures := make([]jetstream.PubAckFuture, len(pending))
	for i, r := range pending {
		f, err := o.js.PublishAsync(r.Subject, r.Payload, jetstream.WithMsgID(r.MsgID))
		if err != nil {
			return 0, fmt.Errorf("publish onu event %s: %w", r.MsgID, err)
		}
		futures[i] = f
	}
	var done []int64
	var firstErr error
	for i, f := range futures {
		select {
		case <-f.Ok():
			done = append(done, pending[i].ID)
		case err := <-f.Err():
			if firstErr == nil {
				firstErr = fmt.Errorf("publish onu event %s: %w", pending[i].MsgID, err)
			}
		case <-pctx.Done():
			if firstErr == nil {
				firstErr = fmt.Errorf("publish onu events: %w", pctx.Err())
			}
		}
	}
	if len(done) > 0 {
		if _, err := o.db.Exec(ctx, `DELETE FROM onu_event_outbox WHERE id = ANY($1)`, done); err != nil {
			return 0, fmt.Errorf("delete published events from the outbox: %w", err)
		}
	}
	return len(pending), firstErr
}
