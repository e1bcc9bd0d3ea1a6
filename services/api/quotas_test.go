package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Webhooks are created, read, changed and deleted through the API; the
// secret is sealed at once and never shown back (a generated one once).
func TestWebhookResources(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	out := f.must("POST", "/api/v1/webhooks", `{"id":"ops","url":"https://hooks.example.net/facho","secret":"a-secret-of-16-bytes+","events":["quota_violation","olt_disabled","quota_violation"]}`, http.StatusCreated)
	if _, ok := out["secret"]; ok {
		t.Errorf("a given secret is shown back: %v", out)
	}
	wh := out["webhook"].(map[string]any)
	if wh["url"] != "https://hooks.example.net/facho" || wh["enabled"] != true || len(wh["events"].([]any)) != 2 {
		t.Errorf("created %v", wh)
	}
	var sealed string
	if err := f.db.QueryRow(ctx, `SELECT secret_enc FROM webhooks WHERE id = 'ops'`).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "a-secret") {
		t.Fatalf("secret stored in plaintext: %s", sealed)
	}
	if plain, err := f.box.Open(sealed); err != nil || plain != "a-secret-of-16-bytes+" {
		t.Errorf("sealed secret opens to %q, %v", plain, err)
	}

	// A generated secret is shown once.
	out = f.must("POST", "/api/v1/webhooks", `{"url":"http://127.0.0.1:9999/x","events":["repeated_failures"]}`, http.StatusCreated)
	if s, _ := out["secret"].(string); len(s) != 64 {
		t.Errorf("generated secret %v", out)
	}

	for _, tc := range []struct{ body, field string }{
		{`{"url":"ftp://x.example/","events":["quota_violation"]}`, "url"},
		{`{"url":"https://user:pw@x.example/","events":["quota_violation"]}`, "url"},
		{`{"url":"https://x.example/","events":["nope"]}`, "events"},
		{`{"url":"https://x.example/","events":[]}`, "events"},
		{`{"url":"https://x.example/","events":["olt_disabled"],"secret":"short"}`, "secret"},
		{`{"events":["olt_disabled"]}`, "url"},
		{`{"id":"ops","url":"https://x.example/","events":["olt_disabled"]}`, ""},
	} {
		code, out, raw := f.do("POST", "/api/v1/webhooks", tc.body)
		if tc.field == "" {
			if code != http.StatusConflict {
				t.Errorf("%s = %d %s, want 409", tc.body, code, raw)
			}
			continue
		}
		if code != http.StatusBadRequest || out["field"] != tc.field {
			t.Errorf("%s = %d %s, want 400 on %s", tc.body, code, raw, tc.field)
		}
	}

	out = f.must("PATCH", "/api/v1/webhooks/ops", `{"enabled":false,"events":["olt_disabled"]}`, http.StatusOK)
	if out["enabled"] != false || len(out["events"].([]any)) != 1 {
		t.Errorf("patched %v", out)
	}
	var after string
	if err := f.db.QueryRow(ctx, `SELECT secret_enc FROM webhooks WHERE id = 'ops'`).Scan(&after); err != nil || after != sealed {
		t.Errorf("the secret changed without being given: %v", err)
	}
	out = f.must("GET", "/api/v1/webhooks?enabled=false", "", http.StatusOK)
	if out["count"] != float64(1) || strings.Contains(mustJSON(t, out), "secret") {
		t.Errorf("list %v", out)
	}
	f.must("GET", "/api/v1/webhooks/ops/deliveries", "", http.StatusOK)
	f.must("DELETE", "/api/v1/webhooks/ops", "", http.StatusOK)
	f.must("GET", "/api/v1/webhooks/ops", "", http.StatusNotFound)
}

// Quotas and violations are listed with their filters.
func TestQuotaAndViolationLists(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	h10 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, q := range []struct {
		olt         string
		start       time.Time
		done, req   int
		status      string
		sev         string
		notified    bool
		withViolate bool
	}{
		{"olt-a", h10, 2, 4, "QUOTA_NOT_MET", "HIGH", true, true},
		{"olt-a", h10.Add(-time.Hour), 4, 4, "COMPLETED", "", false, false},
		{"olt-b", h10, 0, 12, "QUOTA_NOT_MET", "CRITICAL", false, true},
	} {
		if _, err := f.db.Exec(ctx, `INSERT INTO quota_tracker (olt_id, task_type, interval_seconds, period_start, period_end, quota_required, quota_completed, status, checked_at)
			VALUES ($1, 'discovery', 900, $2, $3, $4, $5, $6, $3)`, q.olt, q.start, q.start.Add(time.Hour), q.req, q.done, q.status); err != nil {
			t.Fatal(err)
		}
		if q.withViolate {
			if _, err := f.db.Exec(ctx, `INSERT INTO quota_violations (olt_id, task_type, period_start, period_end, compliance, report, severity, notified, notification_id)
				VALUES ($1, 'discovery', $2, $3, $4, $5, $6, $7, 'n-' || $1)`, q.olt, q.start, q.start.Add(time.Hour), float64(q.done)/float64(q.req),
				map[string]any{"quota_required": q.req, "quota_completed": q.done}, q.sev, q.notified); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := f.must("GET", "/api/v1/quotas?olt_id=olt-a", "", http.StatusOK)
	qs := out["quotas"].([]any)
	if len(qs) != 2 || qs[0].(map[string]any)["period_start"] != "2026-11-21T10:00:00Z" || qs[0].(map[string]any)["compliance_percent"] != float64(50) {
		t.Errorf("quotas of olt-a: %v", out)
	}
	out = f.must("GET", "/api/v1/quotas?status=completed", "", http.StatusOK)
	if out["count"] != float64(1) {
		t.Errorf("completed quotas: %v", out)
	}
	out = f.must("GET", "/api/v1/quotas?since=2026-11-21T10:00:00Z&until=2026-11-21T10:00:00Z", "", http.StatusOK)
	if out["count"] != float64(2) {
		t.Errorf("quotas since 10:00: %v", out)
	}
	// A running hour shows its risk: olt-c can no longer meet its quota
	// (1 done, nothing pending, no run due any more), olt-d already has.
	open := time.Now().UTC().Truncate(time.Hour)
	for _, q := range []struct {
		olt       string
		done, req int
	}{{"olt-c", 1, 12}, {"olt-d", 4, 4}} {
		if _, err := f.db.Exec(ctx, `INSERT INTO quota_tracker (olt_id, task_type, interval_seconds, period_start, period_end, quota_required, quota_completed, status)
			VALUES ($1, 'poll', 300, $2, $3, $4, $5, 'IN_PROGRESS')`, q.olt, open, open.Add(time.Hour), q.req, q.done); err != nil {
			t.Fatal(err)
		}
	}
	for olt, want := range map[string][3]any{"olt-c": {true, false, float64(8)}, "olt-d": {false, true, float64(100)}, "olt-b": {false, false, float64(0)}} {
		q := f.must("GET", "/api/v1/quotas?olt_id="+olt, "", http.StatusOK)["quotas"].([]any)[0].(map[string]any)
		if q["at_risk"] != want[0] || q["can_meet"] != want[1] || q["best_compliance_percent"] != want[2] || q["runs_possible"] != float64(0) {
			t.Errorf("risk of %s: %v", olt, q)
		}
	}
	out = f.must("GET", "/api/v1/violations?severity=critical", "", http.StatusOK)
	vs := out["violations"].([]any)
	if len(vs) != 1 || vs[0].(map[string]any)["olt_id"] != "olt-b" {
		t.Errorf("critical violations: %v", out)
	}
	out = f.must("GET", "/api/v1/violations?notified=true", "", http.StatusOK)
	vs = out["violations"].([]any)
	if len(vs) != 1 || vs[0].(map[string]any)["report"].(map[string]any)["quota_completed"] != float64(2) {
		t.Errorf("notified violations: %v", out)
	}
	id := int(vs[0].(map[string]any)["id"].(float64))
	f.must("GET", "/api/v1/violations/"+itoa(id), "", http.StatusOK)
	f.must("GET", "/api/v1/violations/999999", "", http.StatusNotFound)
	if code, out, _ := f.do("GET", "/api/v1/violations?severity=SEVERE", ""); code != http.StatusBadRequest || out["field"] != "severity" {
		t.Errorf("bad severity: %d %v", code, out)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func itoa(n int) string { return strconv.Itoa(n) }
