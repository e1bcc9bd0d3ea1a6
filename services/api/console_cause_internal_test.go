package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/facho-olt/facho/services/api/auth"
)

// The console shows why an execution failed: its cause beside its error on
// the execution's page and in the OLT page's executions.
func TestConsoleShowsExecutionCause(t *testing.T) {
	r := newRig(t)
	_, admin, _ := r.user("ada", auth.Admin)
	if code, out := r.do(client(t), "POST", "/api/v1/brands", staticToken, "", `{"id":"huawei","name":"Huawei","index_scheme":"pon.onu"}`); code != http.StatusCreated {
		t.Fatalf("brand: %d %s", code, out)
	}
	if code, out := r.do(client(t), "POST", "/api/v1/olts", staticToken, "", `{"id":"olt-c","name":"C","ip":"10.0.0.3","community":"c0mmunity","brand_id":"huawei"}`); code != http.StatusCreated {
		t.Fatalf("olt: %d %s", code, out)
	}
	const text = "the profile zte-1082 matched but none of its tables answered"
	if _, err := r.s.deps.DB.Exec(context.Background(), `INSERT INTO executions (id, job_id, olt_id, status, error, cause, scheduled_at)
		VALUES ('e-mis', 'disc', 'olt-c', 'FAILED', $1, 'profile_mismatch', now())`, text); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"/executions/e-mis", "/olts/olt-c"} {
		code, body := r.do(admin, "GET", page, "", "", "")
		if code != http.StatusOK || !strings.Contains(body, `<code class="cause"`) || !strings.Contains(body, ">profile_mismatch</code>") || !strings.Contains(body, text) {
			t.Errorf("%s = %d without the cause and its text:\n%s", page, code, body)
		}
	}
}
