package auditor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/telemetry"
	"github.com/facho-olt/facho/streams"
)

// Violation severities (seed 002/003 QuotaViolation.severity).
const (
	SeverityLow      = "LOW"
	SeverityMedium   = "MEDIUM"
	SeverityHigh     = "HIGH"
	SeverityCritical = "CRITICAL"
)

// Severity is the severity of a violation with this compliance (0..1):
// LOW from q.Low up, MEDIUM from q.Medium, HIGH from q.High, CRITICAL
// below. With the defaults (0.70, 0.55, 0.30) a 15-minute task that ran
// 3 times out of 4 is LOW, 2 of 4 HIGH (seed 002, scenario 2), 1 of 4 or
// none CRITICAL.
func (q QuotaConfig) Severity(compliance float64) string {
	switch {
	case compliance >= q.Low:
		return SeverityLow
	case compliance >= q.Medium:
		return SeverityMedium
	case compliance >= q.High:
		return SeverityHigh
	}
	return SeverityCritical
}

// severityLevel is the coordinator log level of a violation (seed 002:
// "log crítico" for a HIGH one).
func severityLevel(sev string) string {
	switch sev {
	case SeverityLow:
		return streams.LevelWarning
	case SeverityMedium:
		return streams.LevelError
	}
	return streams.LevelCritical
}

// checkLoop runs the hourly check (seed 002 check_quota_violations_task) at
// start and every Quota.CheckEvery: it is a timer, and it is idempotent on
// (olt, task type, period), so running it often, on several replicas or
// again after a crash changes nothing twice.
func (a *auditor) checkLoop(ctx context.Context) error {
	t := time.NewTicker(a.cfg.Quota.CheckEvery)
	defer t.Stop()
	for {
		if n, err := a.CheckQuotas(ctx); err != nil && ctx.Err() == nil {
			a.deps.Log.Warn().Err(err).Msg("quota check")
		} else if n > 0 {
			a.deps.Log.Info().Int("trackers", n).Msg("quota check")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// CheckQuotas closes every tracker whose hour ended at least Quota.Grace
// before the clock (Deps.Now), and says how many it closed. Closing a
// tracker gives it its final status and checked_at; one below the
// threshold (not INTERRUPTED) becomes a quota_violations row and a
// notification (webhooks, facho.notify.quota_violation.<olt>) with a
// QUOTA_VIOLATION audit event (the coordinator log), all in one
// transaction per tracker. Executions of that hour that end after the
// check update the tracker's counts, not the violation's report.
func (a *auditor) CheckQuotas(ctx context.Context) (int, error) {
	now := a.deps.Now()
	upTo, err := a.caughtUp(ctx, now)
	if err != nil {
		return 0, err
	}
	rows, err := a.deps.DB.Query(ctx, `SELECT olt_id, task_type, period_start FROM quota_tracker
		WHERE checked_at IS NULL AND period_end <= $1 ORDER BY period_end, olt_id, task_type LIMIT 1000`, upTo.Add(-a.cfg.Quota.Grace))
	if err != nil {
		return 0, fmt.Errorf("trackers to check: %w", err)
	}
	type key struct {
		olt, task string
		start     time.Time
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (key, error) {
		var k key
		return k, r.Scan(&k.olt, &k.task, &k.start)
	})
	if err != nil {
		return 0, fmt.Errorf("trackers to check: %w", err)
	}
	n := 0
	for _, k := range keys {
		if ctx.Err() != nil {
			return n, nil
		}
		closed, err := a.checkOne(ctx, k.olt, k.task, k.start, now)
		if err != nil {
			return n, err
		}
		if closed {
			n++
		}
	}
	return n, nil
}

// caughtUp is the time up to which the trackers are complete: now when
// the consumers that feed them (schedule, executions, OLT configuration,
// audit events: interruptions) have nothing pending, else (they are
// catching up, after an outage say) the event time of the latest message
// the laggard applied (quota_watermarks). The streams are in event-time
// order, so every event before it is in the trackers.
func (a *auditor) caughtUp(ctx context.Context, now time.Time) (time.Time, error) {
	upTo := now
	for _, c := range []struct{ stream, name string }{
		{streams.StreamSchedule, streams.ConsumerAuditorSchedule},
		{streams.StreamExec, streams.ConsumerAuditorQuotaExec},
		{streams.StreamConfig, streams.ConsumerAuditorConfig},
		{streams.StreamAudit, streams.ConsumerAuditorQuotaAudit},
	} {
		ictx, cancel := context.WithTimeout(ctx, a.cfg.Notify.Timeout)
		cons, err := a.deps.JS.Consumer(ictx, c.stream, c.name)
		var pending bool
		if err == nil {
			info := cons.CachedInfo()
			pending = info.NumPending > 0 || info.NumAckPending > 0
		}
		cancel()
		if err != nil {
			return time.Time{}, fmt.Errorf("consumer %s: %w", c.name, err)
		}
		if !pending {
			continue
		}
		var wm time.Time
		err = a.deps.DB.QueryRow(ctx, `SELECT event_time FROM quota_watermarks WHERE consumer = $1`, c.name).Scan(&wm)
		if errors.Is(err, pgx.ErrNoRows) {
			return time.Time{}, nil // nothing applied yet: close nothing
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("watermark of %s: %w", c.name, err)
		}
		if wm.Before(upTo) {
			upTo = wm
		}
	}
	return upTo, nil
}

func (a *auditor) checkOne(ctx context.Context, olt, task string, start, now time.Time) (closed bool, err error) {
	var (
		status, severity string
		ratio            float64
	)
	err = pgx.BeginFunc(ctx, a.deps.DB, func(tx pgx.Tx) error {
		var checked *time.Time
		if err := tx.QueryRow(ctx, `SELECT checked_at FROM quota_tracker WHERE olt_id = $1 AND task_type = $2 AND period_start = $3 FOR UPDATE`,
			olt, task, start).Scan(&checked); err != nil {
			return fmt.Errorf("lock tracker %s/%s: %w", olt, task, err)
		}
		if checked != nil {
			return nil // another replica closed it
		}
		closed = true
		t, err := recompute(ctx, tx, olt, task, start, a.cfg.Quota.Threshold, &now)
		if err != nil {
			return err
		}
		status, ratio = t.Status, compliance(t.completed, t.Required)
		if t.Status != QuotaNotMet {
			return nil
		}
		severity, err = a.violation(ctx, tx, t, now)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("check tracker %s/%s at %s: %w", olt, task, start.Format(time.RFC3339), err)
	}
	if closed {
		a.m.trackersChecked.WithLabelValues(status).Inc()
		if status != QuotaInterrupted {
			a.m.compliance.Observe(ratio)
		}
	}
	if severity != "" {
		a.deps.Log.Warn().Str(telemetry.KeyOLT, olt).Str("task_type", task).Time("period_start", start).
			Str("severity", severity).Float64("compliance", ratio).Msg("quota violation")
	}
	return closed, nil
}

// ViolationReport is a quota violation's full report: the notification's
// details and quota_violations.report.
type ViolationReport struct {
	OLTID             string    `json:"olt_id"`
	TaskType          string    `json:"task_type"`
	JobKind           string    `json:"job_kind"`
	JobName           string    `json:"job_name"`
	IntervalSeconds   int       `json:"interval_seconds"`
	PeriodStart       time.Time `json:"period_start"`
	PeriodEnd         time.Time `json:"period_end"`
	QuotaRequired     int       `json:"quota_required"`
	QuotaCompleted    int       `json:"quota_completed"`
	QuotaFailed       int       `json:"quota_failed"`
	QuotaSkipped      int       `json:"quota_skipped"`
	QuotaPending      int       `json:"quota_pending"`
	TotalDurationMS   int64     `json:"total_duration_ms"`
	Compliance        float64   `json:"compliance"`
	CompliancePercent int       `json:"compliance_percent"`
	Threshold         float64   `json:"threshold"`
	Severity          string    `json:"severity"`
	Status            string    `json:"status"`
	CheckedAt         time.Time `json:"checked_at"`
}

// violation decides the violation of tracker t (closed at now): its
// notification, in the check's transaction. The notification is the
// violation's record in the streams: the quota_violations row and its
// QUOTA_VIOLATION coordinator log row are projected from it
// (violationDecoder), so they can be rebuilt by replaying FACHO_NOTIFY.
func (a *auditor) violation(ctx context.Context, tx pgx.Tx, t tracker, now time.Time) (string, error) {
	c := compliance(t.completed, t.Required)
	r := ViolationReport{
		OLTID: t.OLTID, TaskType: t.TaskType, JobKind: t.JobKind, JobName: t.JobName, IntervalSeconds: t.IntervalSeconds,
		PeriodStart: t.PeriodStart, PeriodEnd: t.PeriodEnd,
		QuotaRequired: t.Required, QuotaCompleted: t.completed, QuotaFailed: t.failed, QuotaSkipped: t.skipped, QuotaPending: t.pending,
		TotalDurationMS: t.totalMS, Compliance: c, CompliancePercent: int(c*100 + 0.5), Threshold: a.cfg.Quota.Threshold,
		Severity: a.cfg.Quota.Severity(c), Status: t.Status, CheckedAt: now,
	}
	details, err := toMap(r)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("quota violation [%s]: %s on OLT %s completed %d of %d in the hour from %s (%d%%)",
		r.Severity, t.TaskType, t.OLTID, t.completed, t.Required, t.PeriodStart.UTC().Format("2006-01-02 15:04Z"), r.CompliancePercent)
	_, err = a.enqueue(ctx, tx, notification{ev: streams.Notification{
		ID: streams.MsgID(streams.NotifyQuotaViolation, t.OLTID, t.TaskType, t.PeriodStart.Unix()), Kind: streams.NotifyQuotaViolation,
		OLTID: t.OLTID, Severity: r.Severity, Message: msg, Details: details, OccurredAt: now,
	}})
	return r.Severity, err
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return m, nil
}

var severities = map[string]bool{SeverityLow: true, SeverityMedium: true, SeverityHigh: true, SeverityCritical: true}

// violationOf reads a quota violation notification; ok is false for
// another kind.
func violationOf(m jsrouter.Msg) (env streams.Envelope, n streams.Notification, r ViolationReport, report []byte, ok bool, err error) {
	env, n, err = streams.Decode[streams.Notification](m.Data)
	if err != nil || n.Kind != streams.NotifyQuotaViolation {
		return env, n, r, nil, false, err
	}
	if report, err = json.Marshal(n.Details); err == nil {
		err = json.Unmarshal(report, &r)
	}
	if err != nil {
		return env, n, r, nil, false, fmt.Errorf("%w: violation report: %v", streams.ErrMalformed, err)
	}
	if n.ID == "" || r.OLTID == "" || r.OLTID != n.OLTID || r.TaskType == "" || r.PeriodStart.IsZero() || !severities[r.Severity] {
		return env, n, r, nil, false, fmt.Errorf("%w: quota violation %q without olt_id, task_type, period_start or severity", streams.ErrMalformed, n.ID)
	}
	return env, n, r, report, true, nil
}

// violationDecoder projects a quota violation notification (consumer
// auditor-notify) into its quota_violations row, marked notified when no
// webhook delivery of it is left undelivered.
func (a *auditor) violationDecoder(m jsrouter.Msg) (projection.Change, error) {
	_, n, r, report, ok, err := violationOf(m)
	if err != nil || !ok {
		return projection.Change{}, err
	}
	return projection.Change{Apply: func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO quota_violations (olt_id, task_type, period_start, period_end, compliance, report, severity, notification_id, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (olt_id, task_type, period_start) DO NOTHING`,
			r.OLTID, r.TaskType, r.PeriodStart, r.PeriodEnd, r.Compliance, report, r.Severity, n.ID, n.OccurredAt); err != nil {
			return fmt.Errorf("insert violation %s: %w", n.ID, err)
		}
		// Published (it was read from the stream): notified once every
		// webhook has it.
		_, err := tx.Exec(ctx, `UPDATE quota_violations v SET notified = true, notified_at = now()
			WHERE v.notification_id = $1 AND NOT v.notified
				AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.notification_id = $1 AND d.status <> 'delivered')`, n.ID)
		if err != nil {
			return fmt.Errorf("mark violation %s notified: %w", n.ID, err)
		}
		return nil
	}}, nil
}

// violationLogDecoder writes the QUOTA_VIOLATION coordinator log row (and
// file line) of a quota violation notification (consumer
// auditor-notify-log).
func (a *auditor) violationLogDecoder(m jsrouter.Msg) (projection.Change, error) {
	env, n, r, _, ok, err := violationOf(m)
	if err != nil || !ok {
		return projection.Change{}, err
	}
	e := sanitize(Entry{OLTID: r.OLTID, EventType: streams.AuditQuotaViolation, Level: severityLevel(r.Severity), Message: n.Message,
		Details: n.Details, Timestamp: env.Time, SourceStream: m.Stream, SourceSeq: m.Seq})
	details, err := json.Marshal(e.Details)
	if err != nil {
		return projection.Change{}, fmt.Errorf("%w: encode details: %v", streams.ErrMalformed, err)
	}
	var logged bool
	return projection.Change{
		Apply: func(ctx context.Context, tx pgx.Tx) error {
			var err error
			logged, err = insert(ctx, tx, e, details)
			return err
		},
		Committed: func(context.Context) {
			if !logged {
				m.SetOutcome(jsrouter.OutcomeSkipped)
				return
			}
			if err := a.file.write(e); err != nil {
				a.m.fileErrors.Inc()
				a.deps.Log.Error().Err(err).Str(telemetry.KeyConsumer, m.Consumer).Uint64(telemetry.KeyStreamSeq, m.Seq).Msg("coordinator log file")
			}
		},
	}, nil
}

// CleanupQuotas deletes the trackers (checked ones), quota executions and
// interruptions of hours before before, and the published notifications
// created before it whose deliveries all ended, and says how many rows it
// deleted. Violations are kept.
func CleanupQuotas(ctx context.Context, pool *pgxpool.Pool, before time.Time) (int64, error) {
	var n int64
	for _, q := range []string{
		`DELETE FROM quota_executions WHERE coalesce(period_start, updated_at) < $1`,
		`DELETE FROM quota_tracker WHERE period_start < $1 AND checked_at IS NOT NULL`,
		`DELETE FROM quota_interruptions WHERE period_start < $1`,
		`DELETE FROM notifications n WHERE n.created_at < $1 AND n.published_at IS NOT NULL
			AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.notification_id = n.id AND d.status = 'pending')`,
	} {
		tag, err := pool.Exec(ctx, q, before)
		if err != nil {
			return n, fmt.Errorf("quota cleanup before %s: %w", before.Format(time.RFC3339), err)
		}
		n += tag.RowsAffected()
	}
	return n, nil
}
