package projector

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// An execution whose readings were dead-lettered is not SUCCESS.
//
// The projector reads the dead letters of its own varbind consumer
// (streams.ConsumerProjectorDLQ, filtered on
// facho.dlq.projector-varbinds). Each one names the execution of the batch
// (DeadLetter.ExecutionID, read from the original envelope) and is recorded
// once in execution_dead_letters, keyed by the original's stream and
// sequence. Whichever comes first:
//
//   - the dead letter after execution.succeeded: the SUCCESS execution and
//     its attempt become FAILED with "N varbind batches dead-lettered";
//   - execution.succeeded after the dead letter: applyExecEvent counts the
//     recorded dead letters and projects the success as FAILED.
//
// An execution that failed or was interrupted keeps its state and error;
// dead_lettered_batches counts the lost batches in every case. A batch
// the projector refused (trust.go) counts nowhere: it names an execution
// it may not belong to.

// decodeDeadLetter turns one dead letter of projector-varbinds into its
// change; one that names no execution has nothing to change.
func (p *projector) decodeDeadLetter(m jsrouter.Msg) (projection.Change, error) {
	_, dl, err := streams.Decode[streams.DeadLetter](m.Data)
	if err != nil {
		return projection.Change{}, err
	}
	if dl.ExecutionID == "" || dl.Consumer != streams.ConsumerProjectorVarbinds {
		return projection.Change{}, nil
	}
	if strings.HasPrefix(dl.Reason, RefusedPrefix) {
		// Refused (trust.go): not known to be the execution's readings (a
		// forged or replayed batch may name any execution), so it fails
		// nothing; the dead letter and facho_projector_refused_total say it.
		return projection.Change{}, nil
	}
	return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
		n, changed, err := applyDeadLetter(ctx, tx, dl)
		if err != nil {
			return err
		}
		if changed {
			p.log.Warn().Str("execution_id", dl.ExecutionID).Str("olt_id", dl.OLTID).Int("dead_lettered_batches", n).
				Msg("execution failed: its varbind batches were dead-lettered")
		}
		return nil
	}}, nil
}

// applyDeadLetter records dl and fails its execution if it had succeeded.
// It returns the execution's dead-lettered batches and whether a SUCCESS
// became FAILED.
func applyDeadLetter(ctx context.Context, tx pgx.Tx, dl streams.DeadLetter) (int, bool, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO execution_dead_letters (stream, stream_seq, execution_id, olt_id, reason, dead_lettered_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (stream, stream_seq) DO NOTHING`,
		dl.Stream, int64(dl.StreamSeq), dl.ExecutionID, dl.OLTID, dl.Reason, dl.ReceivedAt)
	if err != nil {
		return 0, false, fmt.Errorf("record dead letter %s/%d of execution %s: %w", dl.Stream, dl.StreamSeq, dl.ExecutionID, err)
	}
	if tag.RowsAffected() == 0 {
		return 0, false, nil // already recorded
	}
	n, err := deadLettered(ctx, tx, dl.ExecutionID)
	if err != nil {
		return 0, false, err
	}
	var (
		attempt      int
		status, text string
		before       int
	)
	err = tx.QueryRow(ctx, `SELECT attempt, status, error, dead_lettered_batches FROM executions WHERE id = $1 FOR UPDATE`,
		dl.ExecutionID).Scan(&attempt, &status, &text, &before)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// Not projected yet: its succeeded event will count this one.
		return n, false, nil
	case err != nil:
		return n, false, fmt.Errorf("read execution %s: %w", dl.ExecutionID, err)
	}
	failed := status == StatusSuccess
	if failed || (status == StatusFailed && before > 0 && text == deadLetteredError(before)) {
		// Failed now, or failed for its dead letters only: the error
		// gives the new count.
		text = deadLetteredError(n)
	}
	if failed {
		status = StatusFailed
	}
	_, err = tx.Exec(ctx, `UPDATE executions SET status = $2, error = $3, dead_lettered_batches = $4, updated_at = now() WHERE id = $1`,
		dl.ExecutionID, status, text, n)
	if err != nil {
		return n, false, fmt.Errorf("fail execution %s for dead-lettered batches: %w", dl.ExecutionID, err)
	}
	if !failed {
		return n, false, nil
	}
	_, err = tx.Exec(ctx, `UPDATE execution_attempts SET status = 'FAILED', error = $3
		WHERE execution_id = $1 AND attempt = $2 AND status = 'SUCCESS'`, dl.ExecutionID, attempt, deadLetteredError(n))
	if err != nil {
		return n, false, fmt.Errorf("fail attempt %d of execution %s: %w", attempt, dl.ExecutionID, err)
	}
	return n, true, nil
}

// deadLettered counts the dead-lettered batches of an execution.
func deadLettered(ctx context.Context, tx pgx.Tx, executionID string) (int, error) {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM execution_dead_letters WHERE execution_id = $1`, executionID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count dead letters of execution %s: %w", executionID, err)
	}
	return n, nil
}

// deadLetteredError is the error of an execution that lost n batches.
func deadLetteredError(n int) string {
	if n == 1 {
		return "1 varbind batch dead-lettered"
	}
	return fmt.Sprintf("%d varbind batches dead-lettered", n)
}
