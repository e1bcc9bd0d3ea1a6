package projector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
// The chained executions of a composite node are recorded alike (with the
// kind of their job and no node id): the row says the planner dispatched
// them (trust.go).
func (p *projector) decodeNodeDue(m jsrouter.Msg) (projection.Change, error) {
	_, n, err := streams.Decode[streams.NodeDue](m.Data)
	if err != nil {
		return projection.Change{}, err
	}
	dues := nodeDues(n)
	return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
		for _, d := range dues {
			_, err := tx.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, scheduled_at, node_id, kind, priority, delay_seconds, updated_at)
				VALUES ($1, $2, $3, 'PENDING', $4, $5, $6, $7, $8, now())
				ON CONFLICT (id) DO UPDATE SET scheduled_at = COALESCE(executions.scheduled_at, EXCLUDED.scheduled_at),
				node_id = EXCLUDED.node_id, kind = EXCLUDED.kind, priority = EXCLUDED.priority, delay_seconds = EXCLUDED.delay_seconds`,
				d.id, d.job, d.olt, d.sched, d.node, d.kind, d.prio, d.delay)
			if err != nil {
				return wrap(err, "record pending execution %s", d.id)
			}
		}
		return nil
	}}, nil
}

// nodeDues are the executions rows a NodeDue dispatches: its own, then
// those of its chained nodes.
func nodeDues(n streams.NodeDue) []due {
	var sched *time.Time
	if !n.ScheduledAt.IsZero() {
		at := n.ScheduledAt // n may be reused by the caller
		sched = &at
	}
	out := make([]due, 0, 1+len(n.Chain))
	out = append(out, due{id: n.ExecutionID, job: n.JobID, olt: n.OLTID, node: n.NodeID, kind: n.Kind, prio: n.Priority, delay: n.DelaySeconds, sched: sched})
	for _, c := range n.Chain {
		if c.ExecutionID == "" || c.ExecutionID == n.ExecutionID {
			continue
		}
		kind := c.Kind
		if kind == "" {
			kind = n.Kind
		}
		out = append(out, due{id: c.ExecutionID, job: c.JobID, olt: n.OLTID, kind: kind, prio: n.Priority, delay: n.DelaySeconds, sched: sched})
	}
	return out
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
	// Cause: execution.failed's cause ("" otherwise).
	Cause        string
	DeadLettered int // succeeded only: dead-lettered batches
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
		if kind := refusalKind(err); kind != "" {
			p.metrics.refused.WithLabelValues(kind).Inc()
		}
		return projection.Change{}, err
	}
	return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
		if err := p.checkExecDispatched(ctx, tx, ev); err != nil {
			return err
		}
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
	return decodeExecEnv(env)
}

// subjectField answers the fields an execution event's subject names.
func (ev execEvent) subjectField(name string) (string, bool) {
	if name == "olt_id" {
		return ev.OLTID, true
	}
	return "", false
}

// decodeExecEnv is decodeExecEvent of an envelope already decoded.
func decodeExecEnv(env streams.Envelope) (execEvent, error) {
	if env.Version != 1 {
		return execEvent{}, fmt.Errorf("%w: %s version %d not supported", streams.ErrMalformed, env.Type, env.Version)
	}
	var (
		ev  execEvent
		err error
	)
	switch env.Type {
	case streams.TypeExecutionStarted:
		ev, err = decodeExecData(env, startedEvent)
	case streams.TypeExecutionSucceeded:
		ev, err = decodeExecData(env, succeededEvent)
	case streams.TypeExecutionFailed:
		ev, err = decodeExecData(env, failedEvent)
	case streams.TypeExecutionSkipped:
		ev, err = decodeExecData(env, skippedEvent)
	case streams.TypeExecutionAborted:
		ev, err = decodeExecData(env, abortedEvent)
	case streams.TypeExecutionInterrupted:
		ev, err = decodeExecData(env, interruptedEvent)
	default:
		return ev, fmt.Errorf("%w: unknown execution event type %q", streams.ErrMalformed, env.Type)
	}
	if err != nil {
		return ev, err
	}
	return checkExecEvent(env.Type, ev)
}

// decodeExecData decodes env's data as a T and makes it an execEvent.
func decodeExecData[T any](env streams.Envelope, of func(T) execEvent) (execEvent, error) {
	var e T
	if err := streams.DecodeData(env, &e); err != nil {
		return execEvent{}, err
	}
	return of(e), nil
}

// checkExecEvent refuses an event without the ids every row needs.
func checkExecEvent(typ string, ev execEvent) (execEvent, error) {
	if ev.ID == "" || ev.JobID == "" || ev.OLTID == "" {
		return ev, fmt.Errorf("%w: %s lacks execution_id, job_id or olt_id", streams.ErrMalformed, typ)
	}
	if err := checkExecValues(typ, ev); err != nil {
		return ev, err
	}
	return ev, nil
}

// timePtr is t, or nil for the zero time (a NULL column).
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func startedEvent(e streams.ExecutionStarted) execEvent {
	return execEvent{ID: e.ExecutionID, JobID: e.JobID, OLTID: e.OLTID, PollerID: e.PollerID, Attempt: e.Attempt,
		LeaseRevision: e.LeaseRevision, Status: StatusRunning, StartedAt: timePtr(e.StartedAt)}
}

func succeededEvent(e streams.ExecutionSucceeded) execEvent {
	d := e.DurationMS
	ev := execEvent{ID: e.ExecutionID, JobID: e.JobID, OLTID: e.OLTID, PollerID: e.PollerID, Attempt: e.Attempt,
		LeaseRevision: e.LeaseRevision, Status: StatusSuccess, StartedAt: timePtr(e.StartedAt), FinishedAt: timePtr(e.FinishedAt),
		DurationMS: &d, Varbinds: e.Varbinds}
	if e.ONUs > 0 || e.FailedONUs > 0 {
		ev.GetResult = &getExecResult{ONUs: e.ONUs, FailedONUs: e.FailedONUs, FailedVarbinds: e.FailedVarbinds, Failures: e.ONUFailures}
	}
	return ev
}

func failedEvent(e streams.ExecutionFailed) execEvent {
	d := e.DurationMS
	return execEvent{ID: e.ExecutionID, JobID: e.JobID, OLTID: e.OLTID, PollerID: e.PollerID, Attempt: e.Attempt,
		LeaseRevision: e.LeaseRevision, Status: StatusFailed, StartedAt: timePtr(e.StartedAt), FinishedAt: timePtr(e.FinishedAt),
		DurationMS: &d, Error: e.Error, Cause: e.Cause}
}

func skippedEvent(e streams.ExecutionSkipped) execEvent {
	// No lease: nothing ran. The attempt is the skipped dispatch's, for
	// forward only (is it the retry's or a stale one?): a skip writes no
	// attempt.
	return execEvent{ID: e.ExecutionID, JobID: e.JobID, OLTID: e.OLTID, PollerID: e.PollerID, Attempt: e.Attempt,
		Status: StatusSkipped, ScheduledAt: timePtr(e.ScheduledAt), FinishedAt: timePtr(e.SkippedAt), Error: e.Reason}
}

func abortedEvent(e streams.ExecutionAborted) execEvent {
	// Cancelled before it started: no attempt, no lease.
	return execEvent{ID: e.ExecutionID, JobID: e.JobID, OLTID: e.OLTID, PollerID: e.PollerID,
		Status: StatusAborted, FinishedAt: timePtr(e.AbortedAt), Error: e.Reason}
}

func interruptedEvent(e streams.ExecutionInterrupted) execEvent {
	var d *int64
	if !e.StartedAt.IsZero() && e.InterruptedAt.After(e.StartedAt) {
		ms := e.InterruptedAt.Sub(e.StartedAt).Milliseconds()
		d = &ms
	}
	// The poller is the holder that died; the reason names it.
	return execEvent{ID: e.ExecutionID, JobID: e.JobID, OLTID: e.OLTID, PollerID: e.PollerID, Attempt: e.Attempt,
		LeaseRevision: e.LeaseRevision, Status: StatusInterrupted, StartedAt: timePtr(e.StartedAt), FinishedAt: timePtr(e.InterruptedAt),
		DurationMS: d, Error: e.Reason}
}

// decodeExecOn decodes an execution event received on subject in one pass
// (projection.DecodeOn) of the type the subject's phase names. ok false:
// the subject names no phase. Either that or an error sends the message
// down the general path (decodeExecEnv), which refuses or accepts it as
// the live decoder does; what this accepts, that path accepts the same.
func decodeExecOn(d *projection.Decoders, subject string, data []byte) (ev execEvent, ok bool, err error) {
	phase := subject[strings.LastIndexByte(subject, '.')+1:]
	switch phase {
	case streams.PhaseStarted:
		ev, err = decodeExecOnAs(d, subject, data, startedEvent)
	case streams.PhaseSucceeded:
		ev, err = decodeExecOnAs(d, subject, data, succeededEvent)
	case streams.PhaseFailed:
		ev, err = decodeExecOnAs(d, subject, data, failedEvent)
	case streams.PhaseSkipped:
		ev, err = decodeExecOnAs(d, subject, data, skippedEvent)
	case streams.PhaseAborted:
		ev, err = decodeExecOnAs(d, subject, data, abortedEvent)
	case streams.PhaseInterrupted:
		ev, err = decodeExecOnAs(d, subject, data, interruptedEvent)
	default:
		return ev, false, nil
	}
	return ev, true, err
}

func decodeExecOnAs[T streams.Event](d *projection.Decoders, subject string, data []byte, of func(T) execEvent) (execEvent, error) {
	env, e, err := projection.DecodeOnWith[T](d, subject, data)
	if err != nil {
		return execEvent{}, err
	}
	return checkExecEvent(env.Type, of(e))
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
		if fenced(ev, rev) || !forward(attempt, status, ev.Attempt, ev.Status) {
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
		started_at, finished_at, duration_ms, varbinds, error, dead_lettered_batches, cause, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULLIF($14, ''), now())
		ON CONFLICT (id) DO UPDATE SET job_id = EXCLUDED.job_id, olt_id = EXCLUDED.olt_id, status = EXCLUDED.status,
		attempt = EXCLUDED.attempt, poller_id = EXCLUDED.poller_id, lease_revision = EXCLUDED.lease_revision,
		started_at = COALESCE(EXCLUDED.started_at, executions.started_at), finished_at = EXCLUDED.finished_at,
		duration_ms = EXCLUDED.duration_ms, varbinds = EXCLUDED.varbinds, error = EXCLUDED.error,
		dead_lettered_batches = GREATEST(executions.dead_lettered_batches, EXCLUDED.dead_lettered_batches), cause = EXCLUDED.cause, updated_at = now()`,
		ev.ID, ev.JobID, ev.OLTID, ev.Status, ev.Attempt, ev.PollerID, int64(ev.LeaseRevision),
		ev.StartedAt, ev.FinishedAt, ev.DurationMS, ev.Varbinds, ev.Error, ev.DeadLettered, ev.Cause)
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

// fenced reports whether ev comes from an older lease than the recorded
// revision (a stale poller: the fencing token). A skip or an abort took no
// lease (revision 0): forward alone judges it, so the skip or abort of a
// retry ends an execution whose failed attempt held a lease.
func fenced(ev execEvent, rev int64) bool {
	if ev.Status == StatusSkipped || ev.Status == StatusAborted {
		return false
	}
	return ev.LeaseRevision < uint64(rev)
}

// applySkipped records a skipped or aborted execution: the skipped or
// aborted dispatch ran nothing, so it has no execution_attempts row;
// finished_at is when it was skipped or aborted and error says why. The
// caller has checked the move is forward (from nothing, PENDING, a
// duplicate, the skip of a retry or an abort after a run). After a run,
// attempt, lease_revision, started_at and duration_ms stay the last
// attempt that ran: attempt always names an execution_attempts row (what
// ran, and how it ended), and the lease still fences that attempt's late
// events.
func applySkipped(ctx context.Context, tx pgx.Tx, ev execEvent) error {
	_, err := tx.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, poller_id, scheduled_at, finished_at, error, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())
		ON CONFLICT (id) DO UPDATE SET job_id = EXCLUDED.job_id, olt_id = EXCLUDED.olt_id, status = EXCLUDED.status,
		poller_id = EXCLUDED.poller_id, scheduled_at = COALESCE(executions.scheduled_at, EXCLUDED.scheduled_at),
		finished_at = EXCLUDED.finished_at, error = EXCLUDED.error, cause = NULL, updated_at = now()`,
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
// attempt, and nothing but a duplicate replaces them. They replace PENDING;
// a skip after a run began is a stale redelivery (the run's own outcome
// stands), except the skip of a retry (retrySkip); an abort ends any
// execution that did not succeed (abortEnds). INTERRUPTED is final for
// its attempt only (a redelivered NodeDue's newer attempt still runs; after
// the planner's cancellation none follows).
func forward(curAttempt int, curStatus string, attempt int, status string) bool {
	switch {
	case curStatus == StatusSkipped || curStatus == StatusAborted:
		// Nothing ran and nothing will: final for the execution.
		return status == curStatus
	case status == StatusSkipped:
		return curStatus == StatusPending || retrySkip(curAttempt, curStatus, attempt)
	case status == StatusAborted:
		return abortEnds(curStatus)
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

// retrySkip reports whether a skip carrying attempt (its dispatch's
// number) ends an execution whose last attempt, curAttempt, ended
// curStatus. The planner (onFinish, Queues.Earlier) ends the execution on
// a skip unless its attempt is below the dispatch in flight; the read
// model knows the last attempt that ran, not the dispatch, but every
// attempt of a dispatch is numbered at least the dispatch's. So after a
// FAILED or INTERRUPTED attempt (a retry pending), a skip above it is the
// retry's: SKIPPED. At or below it, it is a stale delivery of a dispatch
// that ran (or a lost attempt's redelivery, which the planner turns into
// INTERRUPTED and retries); without attempt (0, before the field) it
// cannot be told from a stale one. Both are ignored: SKIPPED is final, and
// a wrong one would hide the retry's run. After RUNNING or SUCCESS what
// ran stands.
func retrySkip(curAttempt int, curStatus string, attempt int) bool {
	return (curStatus == StatusFailed || curStatus == StatusInterrupted) && attempt > curAttempt
}

// abortEnds reports whether an abort ends an execution recorded
// curStatus (PENDING, RUNNING, SUCCESS, FAILED or INTERRUPTED). A poller
// publishes it instead of starting a delivery the planner cancelled
// (facho_cancel, read under the OLT's lease on every delivery of every
// dispatch, and kept longer than any NodeDue), and the planner ends the
// execution in flight on it (decodeFinish, completeFlight: no retry).
// So after FAILED or INTERRUPTED it is the retry's, or a lost attempt's
// redelivery's: nothing of the execution will run again, ABORTED. After
// RUNNING the aborting poller got the lease because the running attempt
// lost it: that attempt is lost too (its interruption, read later, ends
// only its attempt row), ABORTED. After SUCCESS it is a stale delivery
// (the planner had ended the execution): the success stands.
//
// The abort has no attempt, so one that follows an execution the
// planner had already ended FAILED (its last retry used; a duplicate
// delivery of the NodeDue, aborted) cannot be told from the retry's.
// ABORTED is still the truer row for an operator: the execution was
// cancelled and nothing more runs, the error says why, and attempt and
// its execution_attempts row keep the failure. Left FAILED, the row would
// promise a retry that never comes.
func abortEnds(curStatus string) bool {
	return curStatus != StatusSuccess
}

// The set-based form of the executions projection, for a rebuild
// (projection.Source.ApplyBatch): the rows a run of messages touches are
// read once, each event is applied to them in memory, in stream order, by
// the rules of the per-message statements above (decodeNodeDue,
// applyExecEvent, applySkipped, interruptAttempt, recordGetResult), and
// each changed row is written once, one statement per table. A change to
// those statements needs the same change here:
// TestRebuildBatchEqualsPerMessage rebuilds 100k events both ways and
// compares them row for row.

// applyNodeDueBatch is decodeNodeDue's Apply for a run of messages: the
// same upsert, once per execution, of the run's NodeDue folded the way
// the statement folds them one after the other (scheduled_at: the first
// set; the queue fields: the last; job and OLT: the first, on insert).
func (p *projector) applyNodeDueBatch(ctx context.Context, tx pgx.Tx, msgs []jsrouter.Msg) (projection.BatchResult, error) {
	dues, res, err := decodeDues(msgs)
	if err != nil {
		return res, err
	}
	idx := map[string]int{}
	var rows []due
	for _, n := range dues {
		i, ok := idx[n.id]
		if !ok {
			idx[n.id] = len(rows)
			rows = append(rows, due{id: n.id, job: n.job, olt: n.olt, sched: n.sched})
			i = len(rows) - 1
		}
		d := &rows[i]
		if d.sched == nil {
			d.sched = n.sched
		}
		d.node, d.kind, d.prio, d.delay = n.node, n.kind, n.prio, n.delay
	}
	if len(rows) == 0 {
		return res, nil
	}
	var (
		ids, jobs, olts, nodes, kinds = make([]string, len(rows)), make([]string, len(rows)), make([]string, len(rows)), make([]string, len(rows)), make([]string, len(rows))
		prios                         = make([]int32, len(rows))
		delays                        = make([]float64, len(rows))
		scheds                        = make([]*time.Time, len(rows))
	)
	for i, d := range rows {
		ids[i], jobs[i], olts[i], nodes[i], kinds[i], prios[i], delays[i], scheds[i] = d.id, d.job, d.olt, d.node, d.kind, int32(d.prio), d.delay, d.sched
	}
	_, err = tx.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, scheduled_at, node_id, kind, priority, delay_seconds, updated_at)
		SELECT u.id, u.job, u.olt, 'PENDING', u.sched, u.node, u.kind, u.prio, u.delay, now()
		FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::int4[], $8::float8[]) AS u(id, job, olt, sched, node, kind, prio, delay)
		ON CONFLICT (id) DO UPDATE SET scheduled_at = COALESCE(executions.scheduled_at, EXCLUDED.scheduled_at),
		node_id = EXCLUDED.node_id, kind = EXCLUDED.kind, priority = EXCLUDED.priority, delay_seconds = EXCLUDED.delay_seconds`,
		ids, jobs, olts, scheds, nodes, kinds, prios, delays)
	if err != nil {
		return res, fmt.Errorf("record %d pending executions: %w", len(rows), err)
	}
	return res, nil
}

// due is the part of a NodeDue the executions row takes.
type due struct {
	id, job, olt, node, kind string
	prio                     int
	delay                    float64
	sched                    *time.Time
}

// decodeDues decodes a run of NodeDue messages as decodeNodeDue (behind
// projection.SubjectChecked) does, counting the malformed ones; each in
// one pass (projection.DecodeOn): a NodeDue is large, and its decoding was
// the biggest part of a rebuild's CPU.
func decodeDues(msgs []jsrouter.Msg) ([]due, projection.BatchResult, error) {
	var res projection.BatchResult
	out := make([]due, 0, len(msgs))
	dec := projection.NewDecoders()
	for _, m := range msgs {
		// Reused: a NodeDue's target, OIDs and decoders are most of its
		// bytes, and nothing here keeps them.
		_, n, err := projection.DecodeOnReused[streams.NodeDue](dec, m.Subject, m.Data)
		if err != nil {
			if !errors.Is(err, streams.ErrMalformed) {
				return nil, res, fmt.Errorf("decode %s seq %d: %w", m.Stream, m.Seq, err)
			}
			res.Malformed++
			continue
		}
		res.Applied++
		out = append(out, nodeDues(*n)...) // copies: n is overwritten by the next message
	}
	return out, res, nil
}

// memExec is an executions row in memory.
type memExec struct {
	JobID, OLTID, Status, PollerID, Error, NodeID, Kind string
	Cause                                               *string
	Attempt, Varbinds, Priority, DeadLettered           int
	ONUs, FailedONUs, FailedVarbinds                    int
	LeaseRevision                                       int64
	ScheduledAt, StartedAt, FinishedAt                  *time.Time
	DurationMS                                          *int64
	DelaySeconds                                        float64
	ONUFailures                                         *string
	dirty                                               bool
}

type attemptKey struct {
	ID      string
	Attempt int
}

// memAttempt is an execution_attempts row in memory.
type memAttempt struct {
	PollerID, Status, Error string
	StartedAt, FinishedAt   *time.Time
	LeaseRevision           int64
	DurationMS              *int64
	dirty                   bool
}

// execState is what a run of execution events reads and writes.
type execState struct {
	rows        map[string]*memExec
	attempts    map[attemptKey]*memAttempt
	deadLetters map[string]int
}

// applyExecBatch is decodeExec's Apply for a run of messages.
func (p *projector) applyExecBatch(ctx context.Context, tx pgx.Tx, msgs []jsrouter.Msg) (projection.BatchResult, error) {
	evs, res, err := decodeExecs(msgs)
	if err != nil || len(evs) == 0 {
		return res, err
	}
	var ids []string
	seen := make(map[string]bool, len(evs))
	for _, ev := range evs {
		if !seen[ev.ID] {
			seen[ev.ID] = true
			ids = append(ids, ev.ID)
		}
	}
	st, err := loadExecState(ctx, tx, ids)
	if err != nil {
		return res, err
	}
	if err := p.applyExecs(st, evs); err != nil {
		return res, err
	}
	return res, st.write(ctx, tx)
}

// applyExecs applies evs to st in order, as decodeExec's Apply would
// one after the other.
func (p *projector) applyExecs(st *execState, evs []execEvent) error {
	for _, ev := range evs {
		applied, err := st.apply(ev)
		if err != nil {
			return err
		}
		if !applied {
			p.metrics.staleExec.Inc()
			p.log.Info().Str("execution_id", ev.ID).Int("attempt", ev.Attempt).Uint64("lease_revision", ev.LeaseRevision).
				Str("status", ev.Status).Msg("stale or backward execution event ignored")
		}
	}
	return nil
}

// decodeExecs decodes a run of execution lifecycle messages as
// SubjectChecked(decodeExec) does, counting the malformed ones; each in
// one pass where its subject names the type (decodeExecOn).
func decodeExecs(msgs []jsrouter.Msg) ([]execEvent, projection.BatchResult, error) {
	var res projection.BatchResult
	evs := make([]execEvent, 0, len(msgs))
	dec := projection.NewDecoders()
	for _, m := range msgs {
		ev, ok, err := decodeExecOn(dec, m.Subject, m.Data)
		if !ok || err != nil {
			// Refused in one pass: the general path says why, and counts
			// it as the live decoder does.
			var env streams.Envelope
			env, err = streams.DecodeEnvelope(m.Data)
			if err == nil {
				ev, err = decodeExecEnv(env)
			}
			if err == nil {
				// The subject against the decoded event (facho.exec.<olt_id>.
				// <phase>): its data is not parsed a second time for it.
				err = streams.CheckSubjectWith(m.Subject, env, ev.subjectField)
			}
		}
		if err != nil {
			if !errors.Is(err, streams.ErrMalformed) {
				return nil, res, fmt.Errorf("decode %s seq %d: %w", m.Stream, m.Seq, err)
			}
			res.Malformed++
			continue
		}
		evs = append(evs, ev)
	}
	res.Applied = len(evs)
	return evs, res, nil
}

// loadExecState reads the executions ids, their attempts and their
// dead-lettered batches (locking the executions, as applyExecEvent does),
// in one round trip.
func loadExecState(ctx context.Context, tx pgx.Tx, ids []string) (*execState, error) {
	st := &execState{rows: make(map[string]*memExec, len(ids)), attempts: map[attemptKey]*memAttempt{}, deadLetters: map[string]int{}}
	var b pgx.Batch
	b.Queue(`SELECT id, job_id, olt_id, status, attempt, poller_id, scheduled_at, started_at, finished_at, duration_ms, varbinds, error,
		lease_revision, node_id, kind, priority, delay_seconds, dead_lettered_batches, onus, failed_onus, failed_varbinds, onu_failures::text, cause
		FROM executions WHERE id = ANY($1) FOR UPDATE`, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			r := &memExec{}
			if err := rows.Scan(&id, &r.JobID, &r.OLTID, &r.Status, &r.Attempt, &r.PollerID, &r.ScheduledAt, &r.StartedAt, &r.FinishedAt,
				&r.DurationMS, &r.Varbinds, &r.Error, &r.LeaseRevision, &r.NodeID, &r.Kind, &r.Priority, &r.DelaySeconds, &r.DeadLettered,
				&r.ONUs, &r.FailedONUs, &r.FailedVarbinds, &r.ONUFailures, &r.Cause); err != nil {
				return err
			}
			st.rows[id] = r
		}
		return rows.Err()
	})
	b.Queue(`SELECT execution_id, attempt, poller_id, status, started_at, finished_at, error, lease_revision, duration_ms
		FROM execution_attempts WHERE execution_id = ANY($1)`, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var k attemptKey
			a := &memAttempt{}
			if err := rows.Scan(&k.ID, &k.Attempt, &a.PollerID, &a.Status, &a.StartedAt, &a.FinishedAt, &a.Error, &a.LeaseRevision, &a.DurationMS); err != nil {
				return err
			}
			st.attempts[k] = a
		}
		return rows.Err()
	})
	b.Queue(`SELECT execution_id, count(*) FROM execution_dead_letters WHERE execution_id = ANY($1) GROUP BY execution_id`, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				return err
			}
			st.deadLetters[id] = n
		}
		return rows.Err()
	})
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, fmt.Errorf("read %d executions: %w", len(ids), err)
	}
	return st, nil
}

// apply is applyExecEvent in memory.
func (st *execState) apply(ev execEvent) (bool, error) {
	r := st.rows[ev.ID]
	if r != nil && (fenced(ev, r.LeaseRevision) || !forward(r.Attempt, r.Status, ev.Attempt, ev.Status)) {
		if ev.Status == StatusInterrupted {
			st.interruptAttempt(ev)
		}
		return false, nil
	}
	if r == nil {
		r = &memExec{} // the columns' defaults
		st.rows[ev.ID] = r
	}
	r.dirty = true
	r.JobID, r.OLTID, r.Status, r.PollerID, r.FinishedAt, r.Error = ev.JobID, ev.OLTID, ev.Status, ev.PollerID, ev.FinishedAt, ev.Error
	r.Cause = nil // applySkipped clears it; applyExecEvent sets it
	if ev.Cause != "" && ev.Status != StatusSkipped && ev.Status != StatusAborted {
		c := ev.Cause
		r.Cause = &c
	}
	if ev.Status == StatusSkipped || ev.Status == StatusAborted {
		// applySkipped
		if r.ScheduledAt == nil {
			r.ScheduledAt = ev.ScheduledAt
		}
		return true, nil
	}
	if ev.Status == StatusSuccess {
		if n := st.deadLetters[ev.ID]; n > 0 {
			ev.Status, ev.Error = StatusFailed, deadLetteredError(n)
			r.Status, r.Error = ev.Status, ev.Error
			ev.DeadLettered = n
		}
	}
	r.Attempt, r.LeaseRevision, r.DurationMS, r.Varbinds = ev.Attempt, int64(ev.LeaseRevision), ev.DurationMS, ev.Varbinds
	if ev.StartedAt != nil {
		r.StartedAt = ev.StartedAt
	}
	r.DeadLettered = max(r.DeadLettered, ev.DeadLettered)
	if g := ev.GetResult; g != nil {
		// recordGetResult
		r.ONUs, r.FailedONUs, r.FailedVarbinds, r.ONUFailures = g.ONUs, g.FailedONUs, g.FailedVarbinds, nil
		if len(g.Failures) > 0 {
			b, err := json.Marshal(g.Failures)
			if err != nil {
				return false, fmt.Errorf("encode onu failures of execution %s: %w", ev.ID, err)
			}
			s := string(b)
			r.ONUFailures = &s
		}
	}
	// The attempt row.
	k := attemptKey{ev.ID, ev.Attempt}
	a := st.attempts[k]
	switch {
	case a == nil:
		st.attempts[k] = &memAttempt{PollerID: ev.PollerID, Status: ev.Status, StartedAt: ev.StartedAt, FinishedAt: ev.FinishedAt,
			Error: ev.Error, LeaseRevision: int64(ev.LeaseRevision), DurationMS: ev.DurationMS, dirty: true}
	case a.LeaseRevision <= int64(ev.LeaseRevision) && attemptRank(a.Status) <= attemptRank(ev.Status):
		a.PollerID, a.Status, a.FinishedAt, a.Error, a.LeaseRevision, a.DurationMS = ev.PollerID, ev.Status, ev.FinishedAt, ev.Error, int64(ev.LeaseRevision), ev.DurationMS
		if ev.StartedAt != nil {
			a.StartedAt = ev.StartedAt
		}
		a.dirty = true
	}
	return true, nil
}

// attemptRank is the attempt upsert's order: RUNNING, then anything else.
func attemptRank(status string) int {
	if status == StatusRunning {
		return 1
	}
	return 2
}

// interruptAttempt is interruptAttempt in memory.
func (st *execState) interruptAttempt(ev execEvent) {
	a := st.attempts[attemptKey{ev.ID, ev.Attempt}]
	if a == nil || a.LeaseRevision != int64(ev.LeaseRevision) || a.Status != StatusRunning {
		return
	}
	a.Status, a.FinishedAt, a.Error, a.DurationMS, a.dirty = StatusInterrupted, ev.FinishedAt, ev.Error, ev.DurationMS, true
}

// write upserts the changed rows, one statement per table.
func (st *execState) write(ctx context.Context, tx pgx.Tx) error {
	var (
		ids, jobs, olts, statuses, pollers, errs, nodes, kinds []string
		attempts, varbinds, prios, deads, onus, fOnus, fVbs    []int32
		revs, durs                                             []*int64
		scheds, starts, finishes                               []*time.Time
		delays                                                 []float64
		failures, causes                                       []*string
	)
	for id, r := range st.rows {
		if !r.dirty {
			continue
		}
		rev := r.LeaseRevision
		ids, jobs, olts, statuses, pollers, errs, nodes, kinds = append(ids, id), append(jobs, r.JobID), append(olts, r.OLTID),
			append(statuses, r.Status), append(pollers, r.PollerID), append(errs, r.Error), append(nodes, r.NodeID), append(kinds, r.Kind)
		attempts, varbinds, prios, deads = append(attempts, int32(r.Attempt)), append(varbinds, int32(r.Varbinds)), append(prios, int32(r.Priority)), append(deads, int32(r.DeadLettered))
		onus, fOnus, fVbs = append(onus, int32(r.ONUs)), append(fOnus, int32(r.FailedONUs)), append(fVbs, int32(r.FailedVarbinds))
		revs, durs = append(revs, &rev), append(durs, r.DurationMS)
		scheds, starts, finishes = append(scheds, r.ScheduledAt), append(starts, r.StartedAt), append(finishes, r.FinishedAt)
		delays, failures, causes = append(delays, r.DelaySeconds), append(failures, r.ONUFailures), append(causes, r.Cause)
	}
	if len(ids) > 0 {
		_, err := tx.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, attempt, poller_id, scheduled_at, started_at, finished_at,
			duration_ms, varbinds, error, lease_revision, node_id, kind, priority, delay_seconds, dead_lettered_batches,
			onus, failed_onus, failed_varbinds, onu_failures, cause, updated_at)
			SELECT u.id, u.job, u.olt, u.status, u.attempt, u.poller, u.sched, u.started, u.finished, u.dur, u.varbinds, u.err, u.rev,
				u.node, u.kind, u.prio, u.delay, u.dead, u.onus, u.fonus, u.fvbs, u.failures::jsonb, u.cause, now()
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int4[], $6::text[], $7::timestamptz[], $8::timestamptz[], $9::timestamptz[],
				$10::int8[], $11::int4[], $12::text[], $13::int8[], $14::text[], $15::text[], $16::int4[], $17::float8[], $18::int4[],
				$19::int4[], $20::int4[], $21::int4[], $22::text[], $23::text[])
				AS u(id, job, olt, status, attempt, poller, sched, started, finished, dur, varbinds, err, rev, node, kind, prio, delay, dead, onus, fonus, fvbs, failures, cause)
			ON CONFLICT (id) DO UPDATE SET job_id = EXCLUDED.job_id, olt_id = EXCLUDED.olt_id, status = EXCLUDED.status,
				attempt = EXCLUDED.attempt, poller_id = EXCLUDED.poller_id, scheduled_at = EXCLUDED.scheduled_at,
				started_at = EXCLUDED.started_at, finished_at = EXCLUDED.finished_at, duration_ms = EXCLUDED.duration_ms,
				varbinds = EXCLUDED.varbinds, error = EXCLUDED.error, lease_revision = EXCLUDED.lease_revision,
				node_id = EXCLUDED.node_id, kind = EXCLUDED.kind, priority = EXCLUDED.priority, delay_seconds = EXCLUDED.delay_seconds,
				dead_lettered_batches = EXCLUDED.dead_lettered_batches, onus = EXCLUDED.onus, failed_onus = EXCLUDED.failed_onus,
				failed_varbinds = EXCLUDED.failed_varbinds, onu_failures = EXCLUDED.onu_failures, cause = EXCLUDED.cause, updated_at = now()`,
			ids, jobs, olts, statuses, attempts, pollers, scheds, starts, finishes, durs, varbinds, errs, revs, nodes, kinds, prios, delays, deads,
			onus, fOnus, fVbs, failures, causes)
		if err != nil {
			return fmt.Errorf("write %d executions: %w", len(ids), err)
		}
	}
	var (
		aIDs, aPollers, aStatuses, aErrs []string
		aNums                            []int32
		aStarts, aFinishes               []*time.Time
		aRevs                            []int64
		aDurs                            []*int64
	)
	for k, a := range st.attempts {
		if !a.dirty {
			continue
		}
		aIDs, aNums, aPollers, aStatuses, aErrs = append(aIDs, k.ID), append(aNums, int32(k.Attempt)), append(aPollers, a.PollerID), append(aStatuses, a.Status), append(aErrs, a.Error)
		aStarts, aFinishes, aRevs, aDurs = append(aStarts, a.StartedAt), append(aFinishes, a.FinishedAt), append(aRevs, a.LeaseRevision), append(aDurs, a.DurationMS)
	}
	if len(aIDs) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO execution_attempts (execution_id, attempt, poller_id, status, started_at, finished_at, error, lease_revision, duration_ms)
		SELECT * FROM unnest($1::text[], $2::int4[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::text[], $8::int8[], $9::int8[])
		ON CONFLICT (execution_id, attempt) DO UPDATE SET poller_id = EXCLUDED.poller_id, status = EXCLUDED.status,
		started_at = EXCLUDED.started_at, finished_at = EXCLUDED.finished_at, error = EXCLUDED.error,
		lease_revision = EXCLUDED.lease_revision, duration_ms = EXCLUDED.duration_ms`,
		aIDs, aNums, aPollers, aStatuses, aStarts, aFinishes, aErrs, aRevs, aDurs)
	if err != nil {
		return fmt.Errorf("write %d execution attempts: %w", len(aIDs), err)
	}
	return nil
}
