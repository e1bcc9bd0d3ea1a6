// Package projection applies one stream message to a Postgres read model
// exactly once: the rows and the consumer's checkpoint (last applied stream
// sequence) change in one transaction, and a sequence at or below the
// checkpoint is skipped. Ack the message after Apply returns.
//
// Handler is the whole consumer side on pkg/jsrouter: decode, apply with
// the checkpoint, dead-letter what can never apply (Permanent), and report
// the outcome; every projection (projector, auditor) is built with it.
// Health is the router's health check for them: a database outage
// (Unavailable errors, or a failed ping) holds the message without
// counting toward the delivery bound, so it loses nothing; a message that
// keeps failing while the database answers is dead-lettered after
// streams.MaxFailedDeliveries deliveries (see pkg/jsrouter).
package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Apply runs fn in a transaction for message seq of consumer, unless the
// checkpoint already covers seq (applied=false, fn not called). The
// checkpoint row is locked for the transaction, so two replicas handling
// the same consumer apply each sequence once and in order of commit.
func Apply(ctx context.Context, pool *pgxpool.Pool, consumer string, seq uint64, fn func(ctx context.Context, tx pgx.Tx) error) (applied bool, err error) {
	if seq == 0 {
		return false, errors.New("projection: stream sequence 0")
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		last, err := lockCheckpoint(ctx, tx, consumer)
		if err != nil {
			return err
		}
		if seq <= last {
			return nil
		}
		if err := fn(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE checkpoints SET last_seq = $2, updated_at = now() WHERE consumer = $1`, consumer, int64(seq)); err != nil {
			return fmt.Errorf("advance checkpoint of %s to %d: %w", consumer, seq, err)
		}
		applied = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("project %s seq %d: %w", consumer, seq, err)
	}
	return applied, nil
}

// lockCheckpoint creates the checkpoint row when missing and returns its
// last_seq, holding the row lock until the transaction ends.
func lockCheckpoint(ctx context.Context, tx pgx.Tx, consumer string) (uint64, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO checkpoints (consumer, last_seq) VALUES ($1, 0) ON CONFLICT (consumer) DO NOTHING`, consumer); err != nil {
		return 0, fmt.Errorf("create checkpoint of %s: %w", consumer, err)
	}
	var last int64
	if err := tx.QueryRow(ctx, `SELECT last_seq FROM checkpoints WHERE consumer = $1 FOR UPDATE`, consumer).Scan(&last); err != nil {
		return 0, fmt.Errorf("lock checkpoint of %s: %w", consumer, err)
	}
	return uint64(last), nil
}

// Checkpoint returns the last sequence consumer applied, 0 when none.
func Checkpoint(ctx context.Context, pool *pgxpool.Pool, consumer string) (uint64, error) {
	// A partitioned projection's per-OLT checkpoints may be ahead of its
	// consumer checkpoint while a group is half committed.
	var last int64
	err := pool.QueryRow(ctx, `SELECT GREATEST(COALESCE((SELECT last_seq FROM checkpoints WHERE consumer = $1), 0),
		COALESCE((SELECT max(last_seq) FROM olt_checkpoints WHERE consumer = $1), 0))`, consumer).Scan(&last)
	if err != nil {
		return 0, fmt.Errorf("read checkpoint of %s: %w", consumer, err)
	}
	return uint64(last), nil
}

// Reset sets consumer's checkpoint to seq (0 = replay from the start); the
// rebuild tools use it after truncating a read model.
func Reset(ctx context.Context, pool *pgxpool.Pool, consumer string, seq uint64) error {
	_, err := pool.Exec(ctx, `INSERT INTO checkpoints (consumer, last_seq) VALUES ($1, $2)
		ON CONFLICT (consumer) DO UPDATE SET last_seq = EXCLUDED.last_seq, updated_at = now()`, consumer, int64(seq))
	if err != nil {
		return fmt.Errorf("reset checkpoint of %s to %d: %w", consumer, seq, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE olt_checkpoints SET last_seq = $2, updated_at = now() WHERE consumer = $1 AND last_seq > $2`, consumer, int64(seq)); err != nil {
		return fmt.Errorf("reset olt checkpoints of %s to %d: %w", consumer, seq, err)
	}
	return nil
}
