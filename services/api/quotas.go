package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/facho-olt/facho/pkg/quotaplan"
)

// Quota trackers and violations (seeds 002, 003) are the auditor's read
// models (services/auditor); the API serves them.

// quotaRow is one quota_tracker row (seed 003 field names).
type quotaRow struct {
	ID              int64      `json:"id"`
	OLTID           string     `json:"olt_id"`
	TaskType        string     `json:"task_type"`
	JobKind         string     `json:"job_kind"`
	JobName         string     `json:"job_name"`
	IntervalSeconds int        `json:"interval_seconds"`
	PeriodStart     time.Time  `json:"period_start"`
	PeriodEnd       time.Time  `json:"period_end"`
	QuotaRequired   int        `json:"quota_required"`
	QuotaCompleted  int        `json:"quota_completed"`
	QuotaFailed     int        `json:"quota_failed"`
	QuotaSkipped    int        `json:"quota_skipped"`
	QuotaPending    int        `json:"quota_pending"`
	TotalDurationMS int64      `json:"total_duration_ms"`
	AvgDurationMS   int        `json:"avg_duration_ms"`
	Status          string     `json:"status"`
	CheckedAt       *time.Time `json:"checked_at"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	// CompliancePercent is completed over required, at most 100.
	CompliancePercent int `json:"compliance_percent"`
	// NextDueAt and CycleMS: where the scheduling rule left the hour (the
	// run after its last one is due at NextDueAt, one every CycleMS).
	NextDueAt *time.Time `json:"next_due_at"`
	CycleMS   int64      `json:"cycle_ms"`
	// The hour's risk (see risk), from the clock: RunsPossible is how many
	// more runs can still count (pending ones and those still due before
	// the hour ends), CanMeet whether completed + possible still reach the
	// quota (COMPLETED), AtRisk an open hour that no longer can,
	// BestCompliancePercent the best compliance left.
	RunsPossible          int  `json:"runs_possible" db:"-"`
	CanMeet               bool `json:"can_meet" db:"-"`
	AtRisk                bool `json:"at_risk" db:"-"`
	BestCompliancePercent int  `json:"best_compliance_percent" db:"-"`
}

// risk fills the risk keys (the seeds' risk indicator) of q at now. A closed hour (checked or
// interrupted) has nothing possible left: it can meet its quota only if
// it did.
func (q *quotaRow) risk(now time.Time) {
	open := q.Status == "IN_PROGRESS" && q.CheckedAt == nil
	if open {
		q.RunsPossible = q.QuotaPending
		if q.NextDueAt != nil {
			iv := time.Duration(q.IntervalSeconds) * time.Second
			q.RunsPossible += quotaplan.Remaining(*q.NextDueAt, now, q.PeriodEnd, time.Duration(q.CycleMS)*time.Millisecond, quotaplan.Slack(iv))
		}
	}
	best := q.QuotaCompleted + q.RunsPossible
	q.CanMeet = best >= q.QuotaRequired
	q.AtRisk = open && !q.CanMeet
	q.BestCompliancePercent = 100
	if q.QuotaRequired > 0 && best < q.QuotaRequired {
		q.BestCompliancePercent = 100 * best / q.QuotaRequired
	}
}

// timeRange adds the since/until filters on column.
func timeRange(r *http.Request, spec *listSpec, column string) *apiError {
	for _, t := range []struct{ name, cond string }{{"since", column + " >= $?"}, {"until", column + " <= $?"}} {
		v, aerr := timeParam(r, t.name)
		if aerr != nil {
			return aerr
		}
		if v != nil {
			spec.filter(t.cond, *v)
		}
	}
	return nil
}

// listQuotas lists the hourly quota trackers, newest hour first.
func (s *server) listQuotas(w http.ResponseWriter, r *http.Request) *apiError {
	spec := listSpec{From: "quota_tracker",
		Cols: `id, olt_id, task_type, job_kind, job_name, interval_seconds, period_start, period_end, quota_required, quota_completed,
			quota_failed, quota_skipped, quota_pending, total_duration_ms, avg_duration_ms, status, checked_at, created_at, updated_at,
			least(100, (100 * quota_completed / greatest(quota_required, 1)))::int, next_due_at, cycle_ms`,
		Search: []string{"olt_id", "task_type", "job_name"},
		Sorts: map[string]string{"period_start": "period_start", "olt_id": "olt_id", "task_type": "task_type", "status": "status",
			"compliance": "quota_completed::float / greatest(quota_required, 1)"},
		DefaultSort: "period_start DESC", TieBreak: "olt_id, task_type"}
	for _, name := range []string{"olt_id", "task_type"} {
		v, aerr := idParam(r, name)
		if aerr != nil {
			return aerr
		}
		if v != "" {
			spec.filter(name+" = $?", v)
		}
	}
	status, aerr := statusParam(r)
	if aerr != nil {
		return aerr
	}
	if status != "" {
		spec.filter("status = $?", status)
	}
	if aerr := timeRange(r, &spec, "period_start"); aerr != nil {
		return aerr
	}
	out, pi, aerr := listPage[quotaRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	now := s.deps.Now()
	for i := range out {
		out[i].risk(now)
	}
	writeJSON(w, http.StatusOK, pi.body("quotas", out, len(out)))
	return nil
}

// violationRow is one quota_violations row (seed 003 field names).
type violationRow struct {
	ID          int64           `json:"id"`
	OLTID       string          `json:"olt_id"`
	TaskType    string          `json:"task_type"`
	PeriodStart time.Time       `json:"period_start"`
	PeriodEnd   time.Time       `json:"period_end"`
	Compliance  float64         `json:"compliance"`
	Report      json.RawMessage `json:"report"`
	Severity    string          `json:"severity"`
	Notified    bool            `json:"notified"`
	NotifiedAt  *time.Time      `json:"notified_at"`
	// NotificationID is the id of its notification (webhooks'
	// X-Facho-Notification, facho.notify.quota_violation.<olt>).
	NotificationID string    `json:"notification_id"`
	CreatedAt      time.Time `json:"created_at"`
}

const violationCols = `id, olt_id, task_type, period_start, period_end, compliance, report, severity, notified, notified_at, notification_id, created_at`

// listViolations lists quota violations, newest first.
func (s *server) listViolations(w http.ResponseWriter, r *http.Request) *apiError {
	spec := listSpec{From: "quota_violations", Cols: violationCols,
		Search: []string{"olt_id", "task_type"},
		Sorts: map[string]string{"created_at": "created_at", "period_start": "period_start", "olt_id": "olt_id",
			"severity": "array_position(ARRAY['LOW','MEDIUM','HIGH','CRITICAL']::varchar[], severity)", "compliance": "compliance"},
		DefaultSort: "created_at DESC", TieBreak: "id DESC"}
	for _, name := range []string{"olt_id", "task_type"} {
		v, aerr := idParam(r, name)
		if aerr != nil {
			return aerr
		}
		if v != "" {
			spec.filter(name+" = $?", v)
		}
	}
	sev, aerr := upperParam(r, "severity")
	if aerr != nil {
		return aerr
	}
	if sev != "" {
		if !oneOf(sev, []string{"LOW", "MEDIUM", "HIGH", "CRITICAL"}) {
			return badField("severity", "severity must be LOW, MEDIUM, HIGH or CRITICAL")
		}
		spec.filter("severity = $?", sev)
	}
	notified, aerr := boolParam(r, "notified")
	if aerr != nil {
		return aerr
	}
	if notified != nil {
		spec.filter("notified = $?", *notified)
	}
	if aerr := timeRange(r, &spec, "period_start"); aerr != nil {
		return aerr
	}
	out, pi, aerr := listPage[violationRow](s, r, spec)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, pi.body("violations", out, len(out)))
	return nil
}

// getViolation returns one violation with its formatted report.
func (s *server) getViolation(w http.ResponseWriter, r *http.Request) *apiError {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return notFound("no violation %q", r.PathValue("id"))
	}
	rows, aerr := listRows[violationRow](s, r, `SELECT `+violationCols+` FROM quota_violations WHERE id = $1`, id)
	if aerr != nil {
		return aerr
	}
	if len(rows) == 0 {
		return notFound("no violation %d", id)
	}
	writeJSON(w, http.StatusOK, rows[0])
	return nil
}
