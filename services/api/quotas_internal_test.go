package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
)

// TestQuotaRisk: a running hour's risk from the clock: pending runs and
// the runs still due before its end (one every cycle from next_due_at)
// against the quota.
func TestQuotaRisk(t *testing.T) {
	h10 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	at := func(m int) *time.Time { v := h10.Add(time.Duration(m) * time.Minute); return &v }
	base := quotaRow{IntervalSeconds: 300, PeriodStart: h10, PeriodEnd: h10.Add(time.Hour), CycleMS: 300_000, Status: "IN_PROGRESS"}
	for _, tc := range []struct {
		name               string
		now                int
		done, pending, req int
		next               *time.Time
		status             string
		checked            bool
		possible           int
		canMeet, atRisk    bool
		best               int
	}{
		{"on track at :30", 30, 6, 0, 12, at(32), "", false, 6, true, false, 100},
		{"one pending at :30", 30, 5, 1, 12, at(32), "", false, 7, true, false, 100},
		{"next due passed at :45", 45, 6, 0, 12, at(32), "", false, 3, false, true, 75},
		{"nothing due any more", 50, 1, 0, 12, nil, "", false, 0, false, true, 8},
		{"done already", 10, 12, 0, 12, at(62), "", false, 0, true, false, 100},
		{"closed PARTIAL", 70, 10, 0, 12, at(62), "PARTIAL", true, 0, false, false, 83},
		{"interrupted", 30, 4, 0, 12, at(32), "INTERRUPTED", false, 0, false, false, 33},
	} {
		q := base
		q.QuotaCompleted, q.QuotaPending, q.QuotaRequired, q.NextDueAt = tc.done, tc.pending, tc.req, tc.next
		if tc.status != "" {
			q.Status = tc.status
		}
		if tc.checked {
			q.CheckedAt = at(65)
		}
		q.risk(h10.Add(time.Duration(tc.now) * time.Minute))
		if q.RunsPossible != tc.possible || q.CanMeet != tc.canMeet || q.AtRisk != tc.atRisk || q.BestCompliancePercent != tc.best {
			t.Errorf("%s: possible %d can_meet %v at_risk %v best %d, want %d %v %v %d", tc.name, q.RunsPossible, q.CanMeet, q.AtRisk, q.BestCompliancePercent,
				tc.possible, tc.canMeet, tc.atRisk, tc.best)
		}
	}
}

// TestConsoleQuotaRisk: the console's quota progress bar of a running
// hour shows the runs still possible and whether the quota can still be
// met.
func TestConsoleQuotaRisk(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	open := time.Now().UTC().Truncate(time.Hour)
	for _, q := range []struct {
		olt       string
		done, req int
	}{{"olt-late", 1, 12}, {"olt-done", 4, 4}} {
		if _, err := r.s.deps.DB.Exec(ctx, `INSERT INTO quota_tracker (olt_id, task_type, interval_seconds, period_start, period_end, quota_required, quota_completed, status)
			VALUES ($1, 'poll', 300, $2, $3, $4, $5, 'IN_PROGRESS')`, q.olt, open, open.Add(time.Hour), q.req, q.done); err != nil {
			t.Fatal(err)
		}
	}
	_, admin, _ := r.user("ada", auth.Admin)
	code, body := r.do(admin, "GET", "/quotas?olt_id=olt-late", "", "", "")
	if code != 200 || !strings.Contains(body, `class="progress at-risk"`) || !strings.Contains(body, "at risk · best 8 %") || !strings.Contains(body, "+0 possible") {
		t.Errorf("olt-late's quota page = %d:\n%s", code, body)
	}
	code, body = r.do(admin, "GET", "/quotas?olt_id=olt-done", "", "", "")
	if code != 200 || !strings.Contains(body, "can meet") || strings.Contains(body, "at-risk") {
		t.Errorf("olt-done's quota page = %d:\n%s", code, body)
	}
}
