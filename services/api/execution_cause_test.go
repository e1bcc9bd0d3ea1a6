package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/facho-olt/facho/streams"
)

// An execution's cause (why it failed, machine readable) is in the item
// and the list, beside its error, and the list filters on it.
func TestExecutionCause(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	if _, err := f.db.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, error, cause) VALUES
		('e-mismatch', 'j', 'olt-c', 'FAILED', 'the profile zte-1082 matched but none of its tables answered', 'profile_mismatch'),
		('e-empty', 'j', 'olt-c', 'FAILED', 'get j read no value', 'empty_read'),
		('e-ok', 'j', 'olt-c', 'SUCCESS', '', NULL)`); err != nil {
		t.Fatal(err)
	}
	ex := f.must("GET", "/api/v1/executions/e-mismatch", "", http.StatusOK)["execution"].(map[string]any)
	if ex["cause"] != streams.ExecCauseProfileMismatch || ex["status"] != "FAILED" || ex["error"] != "the profile zte-1082 matched but none of its tables answered" {
		t.Errorf("execution %v", ex)
	}
	if ok := f.must("GET", "/api/v1/executions/e-ok", "", http.StatusOK)["execution"].(map[string]any); ok["cause"] != nil {
		t.Errorf("a success has cause %v", ok["cause"])
	}
	list, _ := f.must("GET", "/api/v1/executions?olt_id=olt-c&cause=empty_read", "", http.StatusOK)["executions"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != "e-empty" || list[0].(map[string]any)["cause"] != streams.ExecCauseEmptyRead {
		t.Errorf("list by cause %v", list)
	}
	f.must("GET", "/api/v1/executions?cause=bogus", "", http.StatusBadRequest)
}
