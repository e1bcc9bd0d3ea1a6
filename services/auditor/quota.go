package auditor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/configrules"
	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/quotaplan"
	"github.com/facho-olt/facho/streams"
)

// Quota tracker statuses (seed 002/003 QuotaTracker.status).
const (
	QuotaInProgress  = "IN_PROGRESS"
	QuotaCompleted   = "COMPLETED"
	QuotaPartial     = "PARTIAL"
	QuotaNotMet      = "QUOTA_NOT_MET"
	QuotaInterrupted = "INTERRUPTED"
)

// Execution outcomes counted by the trackers (quota_executions.outcome).
const (
	outcomePending     = "PENDING"
	outcomeRunning     = "RUNNING"
	outcomeSuccess     = "SUCCESS"
	outcomeFailed      = "FAILED"
	outcomeSkipped     = "SKIPPED"
	outcomeInterrupted = "INTERRUPTED"
	// outcomeAborted: the planner cancelled the execution (its task or OLT
	// disabled or deleted) before its next attempt: counted in no bucket,
	// neither pending any more nor omitted for lack of time (seed 002's
	// quota_skipped).
	outcomeAborted = "ABORTED"
)

// period is the hour (UTC) t falls in.
func period(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }

// quotaRequired is how many runs of a task with this interval the hour
// starting at start owes under the scheduling rule (quotaplan.Expected):
// scheds are the scheduled times of the hour's runs, durs their durations
// (nil: not timed); ranBefore whether the task had a run in the hour
// before. It also gives the rule's next due time and cycle.
func quotaRequired(intervalSeconds int, start time.Time, ranBefore bool, scheds []time.Time, durs []*int64) (int, *time.Time, int64) {
	runs := make([]quotaplan.Run, len(scheds))
	for i, at := range scheds {
		runs[i].ScheduledAt = at
		if i < len(durs) && durs[i] != nil {
			runs[i].Duration, runs[i].Timed = time.Duration(*durs[i])*time.Millisecond, true
		}
	}
	p := quotaplan.Expected(time.Duration(intervalSeconds)*time.Second, start, ranBefore, runs)
	var next *time.Time
	if !p.NextDue.IsZero() {
		n := p.NextDue.UTC()
		next = &n
	}
	return p.Expected, next, p.Cycle.Milliseconds()
}

// counts are a tracker's executions by outcome.
type counts struct {
	completed, failed, skipped, pending int
	totalMS                             int64
	timed                               int
}

// compliance is completed over required, at most 1.
func compliance(completed, required int) float64 {
	if required <= 0 {
		return 1
	}
	return math.Min(1, float64(completed)/float64(required))
}

// trackerStatus is the status of a tracker: INTERRUPTED when its OLT was
// disabled or deleted in the hour; IN_PROGRESS until the hourly check;
// then COMPLETED (every required run succeeded), PARTIAL (compliance at
// least threshold) or QUOTA_NOT_MET.
func trackerStatus(c counts, required int, interrupted, checked bool, threshold float64) string {
	switch {
	case interrupted:
		return QuotaInterrupted
	case !checked:
		return QuotaInProgress
	case c.completed >= required:
		return QuotaCompleted
	case compliance(c.completed, required) >= threshold:
		return QuotaPartial
	}
	return QuotaNotMet
}

// tracker is one quota_tracker row as recomputed.
type tracker struct {
	OLTID, TaskType, JobKind, JobName string
	IntervalSeconds                   int
	PeriodStart, PeriodEnd            time.Time
	Required                          int
	// NextDue and Cycle: where the rule left the hour (quotaplan.Plan).
	NextDue *time.Time
	CycleMS int64
	counts
	Status    string
	CheckedAt *time.Time
}

// recompute counts the executions of (olt, task type, hour) and upserts
// the tracker in tx. checkAt, when set, is the hourly check's time: the
// tracker gets its final status and checked_at. Recomputing is what every
// event does, so the trackers do not depend on the order in which the
// schedule, execution and configuration consumers see their events.
func recompute(ctx context.Context, tx pgx.Tx, oltID, taskType string, start time.Time, threshold float64, checkAt *time.Time) (tracker, error) {
	t := tracker{OLTID: oltID, TaskType: taskType, PeriodStart: start, PeriodEnd: start.Add(time.Hour)}
	var (
		interval  *int32
		ranBefore bool
		scheds    []time.Time
		durs      []*int64
	)
	err := tx.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE outcome = 'SUCCESS'),
			count(*) FILTER (WHERE outcome IN ('FAILED', 'INTERRUPTED')),
			count(*) FILTER (WHERE outcome = 'SKIPPED'),
			count(*) FILTER (WHERE outcome IN ('PENDING', 'RUNNING')),
			coalesce(sum(duration_ms) FILTER (WHERE outcome IN ('SUCCESS', 'FAILED')), 0),
			count(duration_ms) FILTER (WHERE outcome IN ('SUCCESS', 'FAILED')),
			(array_agg(interval_seconds ORDER BY scheduled_at DESC))[1],
			coalesce((array_agg(job_kind ORDER BY scheduled_at DESC))[1], ''),
			coalesce((array_agg(job_name ORDER BY scheduled_at DESC))[1], ''),
			array_agg(scheduled_at ORDER BY scheduled_at, execution_id),
			array_agg(CASE WHEN outcome IN ('SUCCESS', 'FAILED') THEN duration_ms END ORDER BY scheduled_at, execution_id),
			EXISTS (SELECT 1 FROM quota_executions p WHERE p.olt_id = $1 AND p.task_type = $2 AND p.period_start = $3::timestamptz - interval '1 hour')
		FROM quota_executions WHERE olt_id = $1 AND task_type = $2 AND period_start = $3`,
		oltID, taskType, start).Scan(&t.completed, &t.failed, &t.skipped, &t.pending, &t.totalMS, &t.timed, &interval, &t.JobKind, &t.JobName, &scheds, &durs, &ranBefore)
	if err != nil {
		return t, fmt.Errorf("count executions of %s/%s at %s: %w", oltID, taskType, start.Format(time.RFC3339), err)
	}
	if interval == nil {
		// No execution of that hour is known yet (only events without
		// their NodeDue): no tracker.
		return t, nil
	}
	t.IntervalSeconds = int(*interval)
	// A node with no run scheduled in the previous hour (new, re-enabled,
	// its OLT back, or an interval over an hour) (re)starts in this one:
	// its hour owes the runs from its first. The expected runs follow the
	// scheduling rule over the hour's runs (quotaplan).
	t.Required, t.NextDue, t.CycleMS = quotaRequired(t.IntervalSeconds, start, ranBefore, scheds, durs)
	var interrupted bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM quota_interruptions WHERE olt_id = $1 AND period_start = $2)`, oltID, start).Scan(&interrupted); err != nil {
		return t, fmt.Errorf("interruptions of %s: %w", oltID, err)
	}
	var checkedAt *time.Time
	if err := tx.QueryRow(ctx, `SELECT checked_at FROM quota_tracker WHERE olt_id = $1 AND task_type = $2 AND period_start = $3`, oltID, taskType, start).Scan(&checkedAt); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return t, fmt.Errorf("read tracker %s/%s: %w", oltID, taskType, err)
	}
	if checkAt != nil && checkedAt == nil {
		checkedAt = checkAt
	}
	t.CheckedAt = checkedAt
	t.Status = trackerStatus(t.counts, t.Required, interrupted, checkedAt != nil, threshold)
	avg := int64(0)
	if t.timed > 0 {
		avg = t.totalMS / int64(t.timed)
	}
	_, err = tx.Exec(ctx, `INSERT INTO quota_tracker (olt_id, task_type, job_kind, job_name, interval_seconds, period_start, period_end,
			quota_required, quota_completed, quota_failed, quota_skipped, quota_pending, total_duration_ms, avg_duration_ms, status, checked_at, next_due_at, cycle_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
		ON CONFLICT (olt_id, task_type, period_start) DO UPDATE SET
			job_kind = EXCLUDED.job_kind, job_name = EXCLUDED.job_name, interval_seconds = EXCLUDED.interval_seconds,
			quota_required = EXCLUDED.quota_required, quota_completed = EXCLUDED.quota_completed, quota_failed = EXCLUDED.quota_failed,
			quota_skipped = EXCLUDED.quota_skipped, quota_pending = EXCLUDED.quota_pending,
			total_duration_ms = EXCLUDED.total_duration_ms, avg_duration_ms = EXCLUDED.avg_duration_ms,
			status = EXCLUDED.status, checked_at = EXCLUDED.checked_at, next_due_at = EXCLUDED.next_due_at,
			cycle_ms = EXCLUDED.cycle_ms, updated_at = now()`,
		oltID, taskType, t.JobKind, t.JobName, t.IntervalSeconds, start, t.PeriodEnd,
		t.Required, t.completed, t.failed, t.skipped, t.pending, t.totalMS, avg, t.Status, checkedAt, t.NextDue, t.CycleMS)
	if err != nil {
		return t, fmt.Errorf("upsert tracker %s/%s at %s: %w", oltID, taskType, start.Format(time.RFC3339), err)
	}
	return t, nil
}

// recomputeExecution recomputes the tracker the execution counts in, if
// its NodeDue has been seen.
func (a *auditor) recomputeExecution(ctx context.Context, tx pgx.Tx, executionID string) error {
	var olt, task string
	var start *time.Time
	err := tx.QueryRow(ctx, `SELECT olt_id, task_type, period_start FROM quota_executions WHERE execution_id = $1`, executionID).Scan(&olt, &task, &start)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && start == nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read quota execution %s: %w", executionID, err)
	}
	_, err = recompute(ctx, tx, olt, task, *start, a.cfg.Quota.Threshold, nil)
	return err
}

// scheduleDecoder projects NodeDue into quota_executions (consumer
// auditor-schedule): the execution belongs to the hour it was scheduled
// in, with the job's interval.
func (a *auditor) scheduleDecoder(m jsrouter.Msg) (projection.Change, error) {
	env, err := streams.DecodeEnvelope(m.Data)
	if err != nil {
		return projection.Change{}, err
	}
	nd, ok, err := parseNodeDue(env)
	if err != nil {
		return projection.Change{}, err
	}
	if !ok {
		return a.watermarkOnly(m, env), nil
	}
	start := period(nd.ScheduledAt)
	return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, nodeDueSQL, nodeDueArgs(nd)...); err != nil {
			return fmt.Errorf("quota execution %s: %w", nd.ExecutionID, err)
		}
		if _, err = recompute(ctx, tx, nd.OLTID, nd.JobID, start, a.cfg.Quota.Threshold, nil); err != nil {
			return err
		}
		return watermark(ctx, tx, m.Consumer, env.Time)
	}}, nil
}

// parseNodeDue decodes a schedule stream event for the quotas: ok false
// when it is not a NodeDue (it only moves the watermark).
func parseNodeDue(env streams.Envelope) (streams.NodeDue, bool, error) {
	var nd streams.NodeDue
	if env.Type != streams.TypeNodeDue {
		return nd, false, nil
	}
	if err := streams.DecodeData(env, &nd); err != nil {
		return nd, false, err
	}
	if nd.ExecutionID == "" || nd.OLTID == "" || nd.JobID == "" || nd.ScheduledAt.IsZero() {
		return nd, false, fmt.Errorf("%w: node.due without execution_id, olt_id, job_id or scheduled_at", streams.ErrMalformed)
	}
	return nd, true, nil
}

// nodeDueSQL records a NodeDue in quota_executions (nodeDueArgs): the
// hour it counts in and the job's interval; an execution an execution
// event recorded first keeps its olt_id and task_type.
const nodeDueSQL = `INSERT INTO quota_executions (execution_id, olt_id, task_type, job_kind, job_name, interval_seconds, scheduled_at, period_start)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
	ON CONFLICT (execution_id) DO UPDATE SET job_kind = EXCLUDED.job_kind, job_name = EXCLUDED.job_name,
		interval_seconds = EXCLUDED.interval_seconds, scheduled_at = EXCLUDED.scheduled_at,
		period_start = EXCLUDED.period_start, updated_at = now()`

func nodeDueArgs(nd streams.NodeDue) []any {
	return []any{nd.ExecutionID, nd.OLTID, nd.JobID, nd.Kind, nd.JobName, nd.IntervalSeconds, nd.ScheduledAt, period(nd.ScheduledAt)}
}

// watermark records that consumer applied an event of time at.
func watermark(ctx context.Context, tx pgx.Tx, consumer string, at time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO quota_watermarks (consumer, event_time) VALUES ($1, $2)
		ON CONFLICT (consumer) DO UPDATE SET event_time = greatest(quota_watermarks.event_time, EXCLUDED.event_time)`, consumer, at)
	if err != nil {
		return fmt.Errorf("watermark of %s: %w", consumer, err)
	}
	return nil
}

// execQuota is what an execution event does to the trackers and to the
// OLT's failure streak, in the transaction of the coordinator log row
// (consumer auditor-exec). An attempt's outcome replaces an older
// attempt's; SUCCESS is final.
func (a *auditor) execQuota(m jsrouter.Msg, env streams.Envelope) (func(context.Context, pgx.Tx) error, error) {
	q, ok, err := parseExecQuota(env)
	if err != nil {
		return nil, err
	}
	if !ok {
		return func(ctx context.Context, tx pgx.Tx) error { return watermark(ctx, tx, m.Consumer, env.Time) }, nil
	}
	return func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, q.sql(), q.args()...); err != nil {
			return fmt.Errorf("quota execution %s: %w", q.execID, err)
		}
		if err := a.recomputeExecution(ctx, tx, q.execID); err != nil {
			return err
		}
		if err := watermark(ctx, tx, m.Consumer, env.Time); err != nil {
			return err
		}
		return a.failureStreak(ctx, tx, env, q.olt, q.execID, q.errText, q.streak)
	}, nil
}

// execQuotaEvent is what an execution lifecycle event says to the quotas.
type execQuotaEvent struct {
	execID, olt, job, outcome string
	attempt                   int
	duration                  *int64
	streak                    int // +1 a final failure, -1 a success (reset), 0 neither
	errText                   string
	// cond: when the event's outcome replaces the stored one.
	cond string
}

// sql records the event in quota_executions (args).
func (q execQuotaEvent) sql() string {
	return `INSERT INTO quota_executions AS q (execution_id, olt_id, task_type, outcome, attempt, duration_ms)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (execution_id) DO UPDATE SET outcome = EXCLUDED.outcome, attempt = greatest(q.attempt, EXCLUDED.attempt),
			duration_ms = coalesce(EXCLUDED.duration_ms, q.duration_ms), updated_at = now()
		WHERE ` + q.cond
}

func (q execQuotaEvent) args() []any {
	return []any{q.execID, q.olt, q.job, q.outcome, q.attempt, q.duration}
}

// parseExecQuota decodes an execution stream event for the quotas: ok
// false when it is not one they count (it only moves the watermark).
func parseExecQuota(env streams.Envelope) (execQuotaEvent, bool, error) {
	var q execQuotaEvent
	var err error
	switch env.Type {
	case streams.TypeExecutionStarted:
		q, err = execQuotaData(env, startedQuota)
	case streams.TypeExecutionSucceeded:
		q, err = execQuotaData(env, succeededQuota)
	case streams.TypeExecutionFailed:
		q, err = execQuotaData(env, failedQuota)
	case streams.TypeExecutionSkipped:
		q, err = execQuotaData(env, skippedQuota)
	case streams.TypeExecutionInterrupted:
		q, err = execQuotaData(env, interruptedQuota)
	case streams.TypeExecutionAborted:
		q, err = execQuotaData(env, abortedQuota)
	default:
		return q, false, nil
	}
	if err != nil {
		return q, false, err
	}
	if err := q.check(env.Type); err != nil {
		return q, false, err
	}
	return q, true, nil
}

// execQuotaData decodes env's data as T and makes its quota event.
func execQuotaData[T any](env streams.Envelope, of func(T) execQuotaEvent) (execQuotaEvent, error) {
	var ev T
	if err := streams.DecodeData(env, &ev); err != nil {
		return execQuotaEvent{}, err
	}
	return of(ev), nil
}

// check refuses an event of type typ without the ids a quota needs.
func (q execQuotaEvent) check(typ string) error {
	if q.execID == "" || q.olt == "" || q.job == "" {
		return fmt.Errorf("%w: %s without execution_id, olt_id or job_id", streams.ErrMalformed, typ)
	}
	return nil
}

func startedQuota(ev streams.ExecutionStarted) execQuotaEvent {
	q := execQuotaEvent{execID: ev.ExecutionID, olt: ev.OLTID, job: ev.JobID, outcome: outcomeRunning, attempt: ev.Attempt}
	q.cond = `q.outcome NOT IN ('SUCCESS', 'ABORTED') AND (q.attempt < EXCLUDED.attempt OR (q.attempt = EXCLUDED.attempt AND q.outcome = 'PENDING'))`
	return q
}

func succeededQuota(ev streams.ExecutionSucceeded) execQuotaEvent {
	d := ev.DurationMS
	q := execQuotaEvent{execID: ev.ExecutionID, olt: ev.OLTID, job: ev.JobID, outcome: outcomeSuccess, attempt: ev.Attempt, duration: &d, streak: -1}
	q.cond = `q.outcome NOT IN ('SUCCESS', 'ABORTED')`
	return q
}

func failedQuota(ev streams.ExecutionFailed) execQuotaEvent {
	d := ev.DurationMS
	q := execQuotaEvent{execID: ev.ExecutionID, olt: ev.OLTID, job: ev.JobID, outcome: outcomeFailed, attempt: ev.Attempt, duration: &d, errText: ev.Error}
	if !ev.Retryable {
		q.streak = 1
	}
	q.cond = `q.outcome NOT IN ('SUCCESS', 'ABORTED') AND q.attempt <= EXCLUDED.attempt`
	return q
}

func skippedQuota(ev streams.ExecutionSkipped) execQuotaEvent {
	q := execQuotaEvent{execID: ev.ExecutionID, olt: ev.OLTID, job: ev.JobID, outcome: outcomeSkipped, attempt: ev.Attempt}
	// A skip of an attempt below the one the row last saw (a stale
	// delivery of an earlier dispatch, read while its retry runs) is
	// not the execution's end; one without attempt (an event from
	// before the field) ends it whatever attempt runs. The skip of the
	// retry after a failed or lost attempt (a higher attempt) ends it too,
	// as the planner and the executions read model end it.
	q.cond = `(q.outcome IN ('PENDING', 'RUNNING') AND (EXCLUDED.attempt = 0 OR q.attempt <= EXCLUDED.attempt))
		OR (q.outcome IN ('FAILED', 'INTERRUPTED') AND q.attempt < EXCLUDED.attempt)`
	return q
}

func interruptedQuota(ev streams.ExecutionInterrupted) execQuotaEvent {
	q := execQuotaEvent{execID: ev.ExecutionID, olt: ev.OLTID, job: ev.JobID, outcome: outcomeInterrupted, attempt: ev.Attempt}
	// An attempt that already ended keeps its outcome.
	q.cond = `q.outcome NOT IN ('SUCCESS', 'ABORTED') AND (q.attempt < EXCLUDED.attempt OR (q.attempt = EXCLUDED.attempt AND q.outcome IN ('PENDING', 'RUNNING')))`
	return q
}

func abortedQuota(ev streams.ExecutionAborted) execQuotaEvent {
	q := execQuotaEvent{execID: ev.ExecutionID, olt: ev.OLTID, job: ev.JobID, outcome: outcomeAborted}
	// As the executions read model: an abort (it has no attempt) ends an
	// execution that has not succeeded, a pending retry of a failed or
	// lost attempt included; final, like a skip.
	q.cond = `q.outcome IN ('PENDING', 'RUNNING', 'FAILED', 'INTERRUPTED')`
	return q
}

// configQuota interrupts the OLT's trackers of the hour when the OLT is
// disabled or deleted (consumer auditor-config).
func (a *auditor) configDecoder(m jsrouter.Msg) (projection.Change, error) {
	env, err := streams.DecodeEnvelope(m.Data)
	if err != nil {
		return projection.Change{}, err
	}
	var olt, reason string
	switch env.Type {
	case streams.TypeOLTUpserted:
		var ev streams.OLTUpserted
		if err := streams.DecodeData(env, &ev); err != nil {
			return projection.Change{}, err
		}
		// The field rules of the API (package configrules): an OLT event
		// that breaks them is dead-lettered, as by every consumer.
		if err := configrules.OLT(ev); err != nil {
			return projection.Change{}, fmt.Errorf("%w: %s %.64q refused: %v", streams.ErrMalformed, env.Type, ev.ID, err)
		}
		if ev.Enabled {
			return a.watermarkOnly(m, env), nil
		}
		olt, reason = ev.ID, "OLT disabled"
	case streams.TypeOLTDeleted:
		var ev streams.OLTDeleted
		if err := streams.DecodeData(env, &ev); err != nil {
			return projection.Change{}, err
		}
		olt, reason = ev.ID, "OLT deleted"
	default:
		return a.watermarkOnly(m, env), nil
	}
	if olt == "" {
		return projection.Change{}, fmt.Errorf("%w: %s without id", streams.ErrMalformed, env.Type)
	}
	return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
		if err := a.interrupt(ctx, tx, olt, env.Time, reason); err != nil {
			return err
		}
		return watermark(ctx, tx, m.Consumer, env.Time)
	}}, nil
}

// watermarkOnly is the change of a message that only moves its consumer's
// watermark (see CheckQuotas).
func (a *auditor) watermarkOnly(m jsrouter.Msg, env streams.Envelope) projection.Change {
	return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
		return watermark(ctx, tx, m.Consumer, env.Time)
	}}
}

// interrupt marks the OLT's trackers of the hour of at INTERRUPTED (those
// created later in that hour too: recompute reads quota_interruptions).
func (a *auditor) interrupt(ctx context.Context, tx pgx.Tx, olt string, at time.Time, reason string) error {
	start := period(at)
	if _, err := tx.Exec(ctx, `INSERT INTO quota_interruptions (olt_id, period_start, interrupted_at, reason) VALUES ($1, $2, $3, $4)
		ON CONFLICT (olt_id, period_start) DO NOTHING`, olt, start, at, cut(sanitizeString(reason), 500)); err != nil {
		return fmt.Errorf("interrupt quotas of %s: %w", olt, err)
	}
	rows, err := tx.Query(ctx, `SELECT task_type FROM quota_tracker WHERE olt_id = $1 AND period_start = $2`, olt, start)
	if err != nil {
		return fmt.Errorf("trackers of %s: %w", olt, err)
	}
	tasks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("trackers of %s: %w", olt, err)
	}
	for _, task := range tasks {
		if _, err := recompute(ctx, tx, olt, task, start, a.cfg.Quota.Threshold, nil); err != nil {
			return err
		}
	}
	return nil
}

// quotaConsumer is one of the consumers of the quotas and notifications.
type quotaConsumer struct {
	stream, name string
	decode       projection.Decoder
}

// quotaConsumers are the consumers feeding the trackers (the hourly check
// waits for the first four to catch up) and the violations.
func (a *auditor) quotaConsumers() []quotaConsumer {
	return []quotaConsumer{
		{streams.StreamSchedule, streams.ConsumerAuditorSchedule, a.scheduleDecoder},
		{streams.StreamExec, streams.ConsumerAuditorQuotaExec, a.change(a.execQuota)},
		{streams.StreamConfig, streams.ConsumerAuditorConfig, a.configDecoder},
		{streams.StreamAudit, streams.ConsumerAuditorQuotaAudit, a.change(a.auditNotify)},
		{streams.StreamNotify, streams.ConsumerAuditorNotify, a.violationDecoder},
		{streams.StreamNotify, streams.ConsumerAuditorNotifyLog, a.violationLogDecoder},
	}
}

// change adapts an envelope's transaction work to a projection.Decoder.
func (a *auditor) change(fn func(jsrouter.Msg, streams.Envelope) (func(context.Context, pgx.Tx) error, error)) projection.Decoder {
	return func(m jsrouter.Msg) (projection.Change, error) {
		env, err := streams.DecodeEnvelope(m.Data)
		if err != nil {
			return projection.Change{}, err
		}
		apply, err := fn(m, env)
		if err != nil {
			if !errors.Is(err, streams.ErrMalformed) {
				err = fmt.Errorf("%w: %w", streams.ErrMalformed, err)
			}
			return projection.Change{}, err
		}
		return projection.Change{Apply: apply}, nil
	}
}
