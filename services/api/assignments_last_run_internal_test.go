package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
)

// TestAssignmentLastRun: an assignment's last_run_at is when the latest
// run of its job on its OLT that ran (succeeded or failed) ended, as the
// executions read model has it; skipped, aborted and pending executions
// and other OLTs' runs do not count; never run: null. The console's
// Assignments page shows it, and the list sorts by it.
func TestAssignmentLastRun(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	db := r.s.deps.DB
	if _, err := db.Exec(ctx, `INSERT INTO snmp_job_olts (job_id, olt_id, enabled, updated_at) VALUES
		('get-rx', 'olt-a', true, $1), ('get-rx', 'olt-b', true, $1), ('disc', 'olt-a', true, $1)`, t0); err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		id, job, olt, status string
		finished             *time.Time
	}{
		{"e1", "get-rx", "olt-a", "SUCCESS", ptr(t0.Add(time.Minute))},
		{"e2", "get-rx", "olt-a", "FAILED", ptr(t0.Add(7 * time.Minute))},
		{"e3", "get-rx", "olt-a", "SKIPPED", ptr(t0.Add(9 * time.Minute))},
		{"e4", "get-rx", "olt-a", "ABORTED", ptr(t0.Add(10 * time.Minute))},
		{"e5", "get-rx", "olt-a", "PENDING", nil},
		{"e6", "get-rx", "olt-b", "SUCCESS", ptr(t0.Add(3 * time.Minute))},
		{"e7", "disc", "olt-b", "SUCCESS", ptr(t0.Add(20 * time.Minute))},
	} {
		if _, err := db.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, finished_at) VALUES ($1, $2, $3, $4, $5)`,
			e.id, e.job, e.olt, e.status, e.finished); err != nil {
			t.Fatal(err)
		}
	}
	_, admin, _ := r.user("ada", auth.Admin)
	code, body := r.do(admin, "GET", "/api/v1/assignments?sort=-last_run_at", "", "", "")
	var out struct {
		Assignments []assignmentRow `json:"assignments"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("GET assignments = %d %s", code, body)
	}
	got := map[string]*time.Time{}
	var order []string
	for _, a := range out.Assignments {
		got[a.JobID+"/"+a.OLTID] = a.LastRunAt
		order = append(order, a.JobID+"/"+a.OLTID)
	}
	if a := got["get-rx/olt-a"]; a == nil || !a.Equal(t0.Add(7*time.Minute)) {
		t.Errorf("get-rx/olt-a last_run_at %v, want %s (its failed run; skipped, aborted and pending ones did not run)", a, t0.Add(7*time.Minute))
	}
	if a := got["get-rx/olt-b"]; a == nil || !a.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("get-rx/olt-b last_run_at %v", a)
	}
	if a, ok := got["disc/olt-a"]; !ok || a != nil {
		t.Errorf("disc/olt-a (never ran on olt-a) last_run_at %v", a)
	}
	if strings.Join(order, ",") != "get-rx/olt-a,get-rx/olt-b,disc/olt-a" {
		t.Errorf("sorted by -last_run_at: %v", order)
	}
	code, body = r.do(admin, "GET", "/assignments?olt_id=olt-a&job_id=get-rx", "", "", "")
	if code != 200 || !strings.Contains(body, `title="`+t0.Add(7*time.Minute).Format(time.RFC3339)) {
		t.Errorf("assignments page = %d, want the last run shown:\n%s", code, body)
	}
}

func ptr[T any](v T) *T { return &v }
