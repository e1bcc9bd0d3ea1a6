package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/streams"
)

// TestExecutionShowsONUFailures: a GET run's per-ONU read failures, as the
// projector stores them from execution.succeeded, are in
// GET /api/v1/executions/{id} (onu_failures, with the counts on the
// execution) and on its console page; an execution without them has an
// empty list.
func TestExecutionShowsONUFailures(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	failures, err := json.Marshal([]streams.ONUFailure{
		{Instance: "4194304000.7", PonIndex: 4194304000, ONUID: 7, OIDs: []string{"1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4.4194304000.7"}, Error: "noSuchInstance"},
		{Instance: "4194304000.9", PonIndex: 4194304000, ONUID: 9, OIDs: []string{"1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4.4194304000.9", "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3.4194304000.9"}, Error: "request timeout"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.s.deps.DB.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, attempt, varbinds, onus, failed_onus, failed_varbinds, onu_failures)
		VALUES ('get-1', 'get-rx', 'olt-a', 'SUCCESS', 1, 40, 20, 2, 3, $1), ('get-2', 'get-rx', 'olt-a', 'SUCCESS', 1, 40, 20, 0, 0, NULL)`, string(failures)); err != nil {
		t.Fatal(err)
	}
	_, admin, _ := r.user("ada", auth.Admin)
	code, body := r.do(admin, "GET", "/api/v1/executions/get-1", "", "", "")
	var out struct {
		Execution   map[string]any       `json:"execution"`
		ONUFailures []streams.ONUFailure `json:"onu_failures"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("GET execution = %d %s", code, body)
	}
	if out.Execution["onus"] != float64(20) || out.Execution["failed_onus"] != float64(2) || out.Execution["failed_varbinds"] != float64(3) {
		t.Errorf("execution counts %v", out.Execution)
	}
	if len(out.ONUFailures) != 2 || out.ONUFailures[1].ONUID != 9 || out.ONUFailures[1].PonIndex != 4194304000 || len(out.ONUFailures[1].OIDs) != 2 ||
		out.ONUFailures[1].Error != "request timeout" || out.ONUFailures[0].Instance != "4194304000.7" {
		t.Errorf("onu_failures %+v", out.ONUFailures)
	}
	code, body = r.do(admin, "GET", "/api/v1/executions/get-2", "", "", "")
	if code != 200 || !strings.Contains(body, `"onu_failures":[]`) {
		t.Errorf("execution without failures = %d %s", code, body)
	}
	code, body = r.do(admin, "GET", "/executions/get-1", "", "", "")
	if code != 200 || !strings.Contains(body, `id="onu-failures"`) || !strings.Contains(body, "4194304000.9") || !strings.Contains(body, "request timeout") {
		t.Errorf("execution page = %d:\n%s", code, body)
	}
	if _, body = r.do(admin, "GET", "/executions/get-2", "", "", ""); strings.Contains(body, `id="onu-failures"`) {
		t.Error("execution page of a run without failures lists some")
	}
}
