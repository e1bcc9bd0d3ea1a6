package auditor

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// insert writes one entry in the projection's transaction (details is its
// JSON). UNIQUE (source_stream, source_seq) makes a row that is already
// there a no-op (inserted=false), should the checkpoint ever be behind the
// rows (reset for a rebuild).
func insert(ctx context.Context, tx pgx.Tx, e Entry, details []byte) (inserted bool, err error) {
	tag, err := tx.Exec(ctx, `INSERT INTO coordinator_logs
		(olt_id, event_type, level, message, details, "timestamp", source_stream, source_seq)
		VALUES (NULLIF($1, ''), $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (source_stream, source_seq) DO NOTHING`,
		e.OLTID, e.EventType, e.Level, e.Message, details, e.Timestamp, e.SourceStream, int64(e.SourceSeq))
	if err != nil {
		return false, fmt.Errorf("insert coordinator log %s#%d: %w", e.SourceStream, e.SourceSeq, err)
	}
	return tag.RowsAffected() == 1, nil
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

// insertMany is insert of many entries in one statement (a rebuild's
// set-based path): the same columns, the same conflict rule.
func insertMany(ctx context.Context, tx pgx.Tx, es []Entry, details [][]byte) error {
	if len(es) == 0 {
		return nil
	}
	olts, types, levels, msgs, dets, streamsCol := make([]string, len(es)), make([]string, len(es)), make([]string, len(es)),
		make([]string, len(es)), make([]string, len(es)), make([]string, len(es))
	times, seqs := make([]time.Time, len(es)), make([]int64, len(es))
	for i, e := range es {
		olts[i], types[i], levels[i], msgs[i], dets[i], streamsCol[i] = e.OLTID, e.EventType, e.Level, e.Message, string(details[i]), e.SourceStream
		times[i], seqs[i] = e.Timestamp, int64(e.SourceSeq)
	}
	_, err := tx.Exec(ctx, `INSERT INTO coordinator_logs
		(olt_id, event_type, level, message, details, "timestamp", source_stream, source_seq)
		SELECT NULLIF(u.olt, ''), u.typ, u.level, u.msg, u.details::jsonb, u.at, u.stream, u.seq
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::int8[])
			AS u(olt, typ, level, msg, details, at, stream, seq)
		ON CONFLICT (source_stream, source_seq) DO NOTHING`,
		olts, types, levels, msgs, dets, times, streamsCol, seqs)
	if err != nil {
		return fmt.Errorf("insert %d coordinator logs %s#%d-%d: %w", len(es), es[0].SourceStream, es[0].SourceSeq, es[len(es)-1].SourceSeq, err)
	}
	return nil
}
