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

// copyMany is insert of many entries with one COPY (a rebuild's
// set-based path, into its shadow): the same columns (id from its
// default). A rebuild applies each (source_stream, source_seq) once into
// a shadow that starts empty, so insert's ON CONFLICT never fires there;
// should it, the COPY fails with a unique violation (Permanent) and the
// rebuild applies the run again message by message, with insert.
func copyMany(ctx context.Context, tx pgx.Tx, es []Entry, details [][]byte) error {
	if len(es) == 0 {
		return nil
	}
	rows := make([][]any, len(es))
	for i, e := range es {
		var olt any // NULLIF(olt_id, ''): a global entry
		if e.OLTID != "" {
			olt = e.OLTID
		}
		rows[i] = []any{olt, e.EventType, e.Level, e.Message, string(details[i]), e.Timestamp, e.SourceStream, int64(e.SourceSeq)}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"coordinator_logs"},
		[]string{"olt_id", "event_type", "level", "message", "details", "timestamp", "source_stream", "source_seq"}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("copy %d coordinator logs %s#%d-%d: %w", len(es), es[0].SourceStream, es[0].SourceSeq, es[len(es)-1].SourceSeq, err)
	}
	return nil
}
