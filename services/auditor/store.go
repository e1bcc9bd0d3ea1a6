package auditor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// errPermanent marks an entry the database will never accept (bad data):
// it goes to the dead letters instead of being retried.
var errPermanent = errors.New("permanent")

// insert writes one entry and advances consumer's checkpoint in one
// transaction. The UNIQUE (source_stream, source_seq) makes a redelivered
// message a no-op (inserted=false); the checkpoint only moves forward. It
// does not skip sequences below the checkpoint: a message NAKed after a
// transient failure may come back after a later one was committed.
func insert(ctx context.Context, pool *pgxpool.Pool, consumer string, e Entry) (inserted bool, err error) {
	details, err := json.Marshal(e.Details)
	if err != nil {
		return false, fmt.Errorf("%w: encode details: %v", errPermanent, err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO coordinator_logs
			(olt_id, event_type, level, message, details, "timestamp", source_stream, source_seq)
			VALUES (NULLIF($1, ''), $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (source_stream, source_seq) DO NOTHING`,
			e.OLTID, e.EventType, e.Level, e.Message, details, e.Timestamp, e.SourceStream, int64(e.SourceSeq))
		if err != nil {
			return fmt.Errorf("insert coordinator log %s#%d: %w", e.SourceStream, e.SourceSeq, err)
		}
		inserted = tag.RowsAffected() == 1
		_, err = tx.Exec(ctx, `INSERT INTO checkpoints (consumer, last_seq) VALUES ($1, $2)
			ON CONFLICT (consumer) DO UPDATE SET last_seq = GREATEST(checkpoints.last_seq, EXCLUDED.last_seq), updated_at = now()`,
			consumer, int64(e.SourceSeq))
		if err != nil {
			return fmt.Errorf("advance checkpoint of %s to %d: %w", consumer, e.SourceSeq, err)
		}
		return nil
	})
	if err != nil {
		var pgErr *pgconn.PgError
		// Class 22 (data exception) and 23 (integrity): retrying cannot help.
		if errors.As(err, &pgErr) && (pgErr.Code[:2] == "22" || pgErr.Code[:2] == "23") {
			return false, fmt.Errorf("%w: %v", errPermanent, err)
		}
		return false, err
	}
	return inserted, nil
}

// Cleanup deletes coordinator_logs rows older than before and says how
// many it deleted.
func Cleanup(ctx context.Context, pool *pgxpool.Pool, before time.Time) (int64, error) {
	tag, err := pool.Exec(ctx, `DELETE FROM coordinator_logs WHERE "timestamp" < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("delete coordinator logs older than %s: %w", before.Format(time.RFC3339), err)
	}
	return tag.RowsAffected(), nil
}
