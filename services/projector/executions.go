package projector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// Execution states (seed 000).
const (
	StatusPending = "PENDING"
	StatusRunning = "RUNNING"
	StatusSuccess = "SUCCESS"
	StatusFailed  = "FAILED"
	// StatusSkipped: the poller did not run the execution because a newer
	// run of its node superseded it (no catch-up). Final for the execution.
	StatusSkipped     = "SKIPPED"
	StatusAborted     = "ABORTED"
	StatusInterrupted = "INTERRUPTED"
)

// rank orders states within one attempt: a state only moves up.
func rank(status string) int {
	switch status {
	case StatusPending:
		return 0
	case StatusRunning:
		return 1
	case StatusSuccess, StatusFailed, StatusSkipped:
		return 2
	default: // ABORTED, INTERRUPTED: the coordinator's word is final
		return 3
	}
}

// decodeNodeDue records a due node as a PENDING execution, unless the
// execution is already known (a lifecycle event may be projected first:
// the streams are independent); then only the queue fields are filled in.
func (p *projector) decodeNodeDue(m jsrouter.Msg) (projection.Change, error) {
	_, n, err := streams.Decode[streams.NodeDue](m.Data)
	if err != nil {
		return projection.Change{}, err
	}
	var scheduled *time.Time
	if !n.ScheduledAt.IsZero() {
		scheduled = &n.ScheduledAt
	}
	return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, scheduled_at, node_id, kind, priority, delay_seconds, updated_at)
			VALUES ($1, $2, $3, 'PENDING', $4, $5, $6, $7, $8, now())
			ON CONFLICT (id) DO UPDATE SET scheduled_at = COALESCE(executions.scheduled_at, EXCLUDED.scheduled_at),
			node_id = EXCLUDED.node_id, kind = EXCLUDED.kind, priority = EXCLUDED.priority, delay_seconds = EXCLUDED.delay_seconds`,
			n.ExecutionID, n.JobID, n.OLTID, scheduled, n.NodeID, n.Kind, n.Priority, n.DelaySeconds)
		return wrap(err, "record pending execution %s", n.ExecutionID)
	}}, nil
}

// execEvent is one lifecycle event in the form of an executions row.
type execEvent struct {
	ID, JobID, OLTID, PollerID string
	Attempt                    int
	LeaseRevision              uint64
	Status                     string
	ScheduledAt                *time.Time // skipped only: the row may not exist yet
	StartedAt, FinishedAt      *time.Time
	DurationMS                 *int64
	Varbinds                   int
	Error                      string
	DeadLettered               int // succeeded only: dead-lettered batches
	// Of a get's succeeded event: what it read and could not read.
	GetResult *getExecResult
}

// getExecResult is the per-ONU outcome of a get (executions.onus,
// failed_onus, failed_varbinds, onu_failures).
type getExecResult struct {
	ONUs, FailedONUs, FailedVarbinds int
	Failures                         []streams.ONUFailure
}

func (p *projector) decodeExec(m jsrouter.Msg) (projection.Change, error) {
	ev, err := decodeExecEvent(m.Data)
	if err != nil {
		return projection.Change{}, err
	}
	return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
		applied, err := applyExecEvent(ctx, tx, ev)
		if err != nil {
			return err
		}
		if !applied {
			p.metrics.staleExec.Inc()
			p.log.Info().Str("execution_id", ev.ID).Int("attempt", ev.Attempt).Uint64("lease_revision", ev.LeaseRevision).
				Str("status", ev.Status).Msg("stale or backward execution event ignored")
		}
		return nil
	}}, nil
}

func decodeExecEvent(data []byte) (execEvent, error) {
	env, err := streams.DecodeEnvelope(data)
	if err != nil {
		return execEvent{}, err
	}
	if env.Version != 1 {
		return execEvent{}, fmt.Errorf("%w: %s version %d not supported", streams.ErrMalformed, env.Type, env.Version)
	}
	ptr := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	var ev execEvent
	switch env.Type {
	case streams.TypeExecutionStarted:
		var e streams.ExecutionStarted
		if err := streams.DecodeData(env, &e); err != nil {
			return ev, err
		}
		ev = execEvent{ID: e.ExecutionID, JobID: e.JobID, OLTID: e.OLTID, PollerID: e.PollerID, Attempt: e.Attempt,
			LeaseRevision: e.LeaseRevision, Status: StatusRunning, StartedAt: ptr(e.StartedAt)}
	case streams.TypeExecutionSucceeded:
		var e streams.ExecutionSucceeded
		if err := streams.DecodeData(env, &e); err != nil {
			return ev, err
		}
		d := e.DurationMS
		ev = execEvent{ID: e.ExecutionID, JobID: e.JobID, OLTID: e.OLTID, PollerID: e.PollerID, Attempt: e.Attempt,
			LeaseRevision: e.LeaseRevision, Status: StatusSuccess, StartedAt: ptr(e.StartedAt), FinishedAt: ptr(e.FinishedAt),
			DurationMS: &d, Varbinds: e.Varbinds}
		if e.ONUs > 0 || e.FailedONUs > 0 {
			ev.GetResult = &getExecResult{ONUs: e.ONUs, FailedONUs: e.FailedONUs, FailedVarbinds: e.FailedVarbinds, Failures: e.ONUFailures}
		}
	case streams.TypeExecutionFailed:
		var e streams.ExecutionFailed
		if err := streams.DecodeData(env, &e); err != nil {
			return ev, err
		}
		d := e.DurationMS
		ev = execEvent{ID: e.ExecutionID, JobID: e.JobID, OLTID: e.OLTID, PollerID: e.PollerID, Attempt: e.Attempt,
			LeaseRevision: e.LeaseRevision, Status: StatusFailed, StartedAt: ptr(e.StartedAt), FinishedAt: ptr(e.FinishedAt),
			DurationMS: &d, Error: e.Error}
	case streams.TypeExecutionSkipped:
		var e streams.ExecutionSkipped
		if err := streams.DecodeData(env, &e); err != nil {
			return ev, err
		}
		// No attempt and no lease: nothing ran.
		ev = execEvent{ID: e.ExecutionID, JobID: e.JobID, OLTID: e.OLTID, PollerID: e.PollerID,
			Status: StatusSkipped, ScheduledAt: ptr(e.ScheduledAt), FinishedAt: ptr(e.SkippedAt), Error: e.Reason}
	case streams.TypeExecutionAborted:
		var e streams.ExecutionAborted
		if err := streams.DecodeData(env, &e); err != nil {
			return ev, err
		}
		// Cancelled before it started: no attempt, no lease.
		ev = execEvent{ID: e.ExecutionID, JobID: e.JobID, OLTID: e.OLTID, PollerID: e.PollerID,
			Status: StatusAborted, FinishedAt: ptr(e.AbortedAt), Error: e.Reason}
	case streams.TypeExecutionInterrupted:
		var e streams.ExecutionInterrupted
		if err := streams.DecodeData(env, &e); err != nil {
			return ev, err
		}
		var d *int64
		if !e.StartedAt.IsZero() && e.InterruptedAt.After(e.StartedAt) {
			ms := e.InterruptedAt.Sub(e.StartedAt).Milliseconds()
			d = &ms
		}
		// The poller is the holder that died; the reason names it.
		ev = execEvent{ID: e.ExecutionID, JobID: e.JobID, OLTID: e.OLTID, PollerID: e.PollerID, Attempt: e.Attempt,
			LeaseRevision: e.LeaseRevision, Status: StatusInterrupted, StartedAt: ptr(e.StartedAt), FinishedAt: ptr(e.InterruptedAt),
			DurationMS: d, Error: e.Reason}
	default:
		return ev, fmt.Errorf("%w: unknown execution event type %q", streams.ErrMalformed, env.Type)
	}
	if ev.ID == "" || ev.JobID == "" || ev.OLTID == "" {
		return ev, fmt.Errorf("%w: %s lacks execution_id, job_id or olt_id", streams.ErrMalformed, env.Type)
	}
	return ev, nil
}

// applyExecEvent moves the execution and its attempt forward. It returns
// false, changing nothing, when the event carries an older lease revision
// than the one recorded (a stale poller: the fencing token) or would move
// the execution backwards (a late "started" after "succeeded", a "skipped"
// after "started").
func applyExecEvent(ctx context.Context, tx pgx.Tx, ev execEvent) (bool, error) {
	var (
		status  string
		attempt int
		rev     int64
	)
	err := tx.QueryRow(ctx, `SELECT status, attempt, lease_revision FROM executions WHERE id = $1 FOR UPDATE`, ev.ID).Scan(&status, &attempt, &rev)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// First word of this execution (its NodeDue may come later).
	case err != nil:
		return false, fmt.Errorf("read execution %s: %w", ev.ID, err)
	default:
		if ev.LeaseRevision < uint64(rev) || !forward(attempt, status, ev.Attempt, ev.Status) {
			if ev.Status == StatusInterrupted {
				// A newer attempt already runs: the interrupted one still
				// ends in its own row.
				return false, interruptAttempt(ctx, tx, ev)
			}
			return false, nil
		}
	}
	if ev.Status == StatusSkipped || ev.Status == StatusAborted {
		return true, applySkipped(ctx, tx, ev)
	}
	if ev.Status == StatusSuccess {
		// Readings of the execution were dead-lettered before its success
		// was projected (see applyDeadLetter for the other order).
		n, err := deadLettered(ctx, tx, ev.ID)
		if err != nil {
			return false, err
		}
		if n > 0 {
			ev.Status, ev.Error = StatusFailed, deadLetteredError(n)
		}
		ev.DeadLettered = n
	}
	_, err = tx.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, attempt, poller_id, lease_revision,
		started_at, finished_at, duration_ms, varbinds, error, dead_lettered_batches, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, now())
		ON CONFLICT (id) DO UPDATE SET job_id = EXCLUDED.job_id, olt_id = EXCLUDED.olt_id, status = EXCLUDED.status,
		attempt = EXCLUDED.attempt, poller_id = EXCLUDED.poller_id, lease_revision = EXCLUDED.lease_revision,
		started_at = COALESCE(EXCLUDED.started_at, executions.started_at), finished_at = EXCLUDED.finished_at,
		duration_ms = EXCLUDED.duration_ms, varbinds = EXCLUDED.varbinds, error = EXCLUDED.error,
		dead_lettered_batches = GREATEST(executions.dead_lettered_batches, EXCLUDED.dead_lettered_batches), updated_at = now()`,
		ev.ID, ev.JobID, ev.OLTID, ev.Status, ev.Attempt, ev.PollerID, int64(ev.LeaseRevision),
		ev.StartedAt, ev.FinishedAt, ev.DurationMS, ev.Varbinds, ev.Error, ev.DeadLettered)
	if err != nil {
		return false, fmt.Errorf("update execution %s: %w", ev.ID, err)
	}
	if err := recordGetResult(ctx, tx, ev); err != nil {
		return false, err
	}
	// The attempt row follows the same rule within its attempt.
	_, err = tx.Exec(ctx, `INSERT INTO execution_attempts (execution_id, attempt, poller_id, status, started_at, finished_at, error, lease_revision, duration_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (execution_id, attempt) DO UPDATE SET poller_id = EXCLUDED.poller_id, status = EXCLUDED.status,
		started_at = COALESCE(EXCLUDED.started_at, execution_attempts.started_at), finished_at = EXCLUDED.finished_at,
		error = EXCLUDED.error, lease_revision = EXCLUDED.lease_revision, duration_ms = EXCLUDED.duration_ms
		WHERE execution_attempts.lease_revision <= EXCLUDED.lease_revision
		  AND (CASE execution_attempts.status WHEN 'RUNNING' THEN 1 ELSE 2 END) <= (CASE EXCLUDED.status WHEN 'RUNNING' THEN 1 ELSE 2 END)`,
		ev.ID, ev.Attempt, ev.PollerID, ev.Status, ev.StartedAt, ev.FinishedAt, ev.Error, int64(ev.LeaseRevision), ev.DurationMS)
	if err != nil {
		return false, fmt.Errorf("record attempt %d of execution %s: %w", ev.Attempt, ev.ID, err)
	}
	return true, nil
}

// interruptAttempt ends the attempt row of an interrupted attempt when the
// execution has moved on to a newer attempt (its NodeDue was redelivered
// before the interruption was projected): only a RUNNING row of the same
// lease revision changes.
func interruptAttempt(ctx context.Context, tx pgx.Tx, ev execEvent) error {
	_, err := tx.Exec(ctx, `UPDATE execution_attempts SET status = $4, finished_at = $5, error = $6, duration_ms = $7
		WHERE execution_id = $1 AND attempt = $2 AND lease_revision = $3 AND status = 'RUNNING'`,
		ev.ID, ev.Attempt, int64(ev.LeaseRevision), StatusInterrupted, ev.FinishedAt, ev.Error, ev.DurationMS)
	if err != nil {
		return fmt.Errorf("interrupt attempt %d of execution %s: %w", ev.Attempt, ev.ID, err)
	}
	return nil
}

// applySkipped records a skipped or aborted execution: no attempt ran, so
// there is no execution_attempts row; finished_at is when it was skipped or
// aborted and error says why. The caller has checked the move is forward
// (from nothing, PENDING or a duplicate).
func applySkipped(ctx context.Context, tx pgx.Tx, ev execEvent) error {
	_, err := tx.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, poller_id, scheduled_at, finished_at, error, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())
		ON CONFLICT (id) DO UPDATE SET job_id = EXCLUDED.job_id, olt_id = EXCLUDED.olt_id, status = EXCLUDED.status,
		poller_id = EXCLUDED.poller_id, scheduled_at = COALESCE(executions.scheduled_at, EXCLUDED.scheduled_at),
		finished_at = EXCLUDED.finished_at, error = EXCLUDED.error, updated_at = now()`,
		ev.ID, ev.JobID, ev.OLTID, ev.Status, ev.PollerID, ev.ScheduledAt, ev.FinishedAt, ev.Error)
	if err != nil {
		return fmt.Errorf("record %s execution %s: %w", ev.Status, ev.ID, err)
	}
	return nil
}

// forward reports whether (attempt, status) may replace the recorded
// (curAttempt, curStatus): a later attempt always may; within an attempt the
// state only moves up, and a final state is not replaced by another.
// SKIPPED and ABORTED are final for the whole execution, not just an
// attempt: they only replace PENDING (a skip after a run began is a stale
// redelivery; the run's own outcome stands), and nothing but a duplicate
// replaces them. INTERRUPTED is final for its attempt only (a redelivered
// NodeDue's newer attempt still runs; after the planner's cancellation none
// follows).
func forward(curAttempt int, curStatus string, attempt int, status string) bool {
	switch {
	case curStatus == StatusSkipped || curStatus == StatusAborted:
		// Nothing ran and nothing will: final for the execution.
		return status == curStatus
	case status == StatusSkipped || status == StatusAborted:
		return curStatus == StatusPending
	}
	if attempt != curAttempt {
		return attempt > curAttempt
	}
	cr, r := rank(curStatus), rank(status)
	if cr >= 2 {
		// Final for this attempt: only the identical event (a duplicate)
		// passes, which rewrites the same values.
		return status == curStatus
	}
	return r >= cr
}
