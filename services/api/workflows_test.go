package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

func TestWorkflowResources(t *testing.T) {
	f := setup(t)
	f.seed()
	f.must("POST", "/api/v1/jobs", `{"id":"get-rx","name":"GET rx","brand_id":"huawei","kind":"get","oid_ids":["hw-serial"],"interval_seconds":300}`, http.StatusCreated)
	f.must("POST", "/api/v1/brands", `{"id":"zte","name":"ZTE","index_scheme":"pon.onu"}`, http.StatusCreated)
	f.must("POST", "/api/v1/oids", `{"id":"zte-sn","brand_id":"zte","name":"sn","oid":"1.3.6.1.4.1.3902.1012.3.28.1.1.5","field":"serial","decoder":{"kind":"string"}}`, http.StatusCreated)
	f.must("POST", "/api/v1/jobs", `{"id":"zte-job","name":"ZTE","brand_id":"zte","kind":"get","oid_ids":["zte-sn"],"interval_seconds":300}`, http.StatusCreated)

	body := `{"id":"wf-a","name":"serial then rx","olt_id":"olt-a","master_job_id":"get-serial","chain_job_ids":["get-rx"],"stop_on_failure":true}`
	f.must("POST", "/api/v1/workflows", body, http.StatusCreated)
	wf := decode[streams.WorkflowUpserted](t, f.last(streams.SubjectWorkflow("wf-a")))
	if wf.OLTID != "olt-a" || wf.MasterJobID != "get-serial" || len(wf.ChainJobIDs) != 1 || !wf.StopOnFailure || !wf.Enabled {
		t.Fatalf("event %+v", wf)
	}
	for _, tc := range []struct{ name, body, field string }{
		{"unknown OLT", `{"name":"x","olt_id":"olt-z","master_job_id":"get-serial","chain_job_ids":["get-rx"]}`, "olt_id"},
		{"unknown master", `{"name":"x","olt_id":"olt-a","master_job_id":"nope","chain_job_ids":["get-rx"]}`, "master_job_id"},
		{"empty chain", `{"name":"x","olt_id":"olt-a","master_job_id":"get-serial","chain_job_ids":[]}`, "chain_job_ids"},
		{"master in its chain", `{"name":"x","olt_id":"olt-a","master_job_id":"get-serial","chain_job_ids":["get-serial"]}`, "chain_job_ids"},
		{"chained job of another brand", `{"name":"x","olt_id":"olt-a","master_job_id":"get-serial","chain_job_ids":["zte-job"]}`, "chain_job_ids"},
		{"no name", `{"olt_id":"olt-a","master_job_id":"get-serial","chain_job_ids":["get-rx"]}`, "name"},
		{"unknown field", `{"name":"x","olt_id":"olt-a","master_job_id":"get-serial","chain_job_ids":["get-rx"],"loop":true}`, "loop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, raw := f.do("POST", "/api/v1/workflows", tc.body)
			if code != http.StatusBadRequest || out["field"] != tc.field {
				t.Fatalf("%d %s, want 400 naming %s", code, raw, tc.field)
			}
		})
	}
	// One workflow; enable and disable (an operator's actions).
	if got := f.must("GET", "/api/v1/workflows/wf-a", "", http.StatusOK); got["master_job_id"] != "get-serial" || got["enabled"] != true {
		t.Fatalf("workflow %v", got)
	}
	f.must("GET", "/api/v1/workflows/wf-z", "", http.StatusNotFound)
	f.must("POST", "/api/v1/workflows/wf-a/disable", "", http.StatusAccepted)
	if wf := decode[streams.WorkflowUpserted](t, f.last(streams.SubjectWorkflow("wf-a"))); wf.Enabled || len(wf.ChainJobIDs) != 1 {
		t.Fatalf("disabled workflow %+v", wf)
	}
	f.must("POST", "/api/v1/workflows/wf-a/enable", "", http.StatusAccepted)
	if wf := decode[streams.WorkflowUpserted](t, f.last(streams.SubjectWorkflow("wf-a"))); !wf.Enabled {
		t.Fatal("not enabled again")
	}
	// Disable, then delete.
	f.must("PUT", "/api/v1/workflows/wf-a", `{"name":"serial then rx","olt_id":"olt-a","master_job_id":"get-serial","chain_job_ids":["get-rx"],"enabled":false}`, http.StatusAccepted)
	if wf := decode[streams.WorkflowUpserted](t, f.last(streams.SubjectWorkflow("wf-a"))); wf.Enabled {
		t.Fatal("not disabled")
	}
	f.must("DELETE", "/api/v1/workflows/wf-a", "", http.StatusAccepted)
	f.must("PUT", "/api/v1/workflows/wf-a", body, http.StatusNotFound)
	f.must("DELETE", "/api/v1/workflows/wf-z", "", http.StatusNotFound)

	// The list reads the projector's table.
	if _, err := f.db.Exec(context.Background(), `INSERT INTO workflows (id, name, olt_id, master_job_id, chain_job_ids, stop_on_failure, enabled, updated_at)
		VALUES ('wf-b', 'b', 'olt-a', 'get-serial', '{get-rx}', false, true, $1)`, time.Now()); err != nil {
		t.Fatal(err)
	}
	out := f.must("GET", "/api/v1/workflows?olt_id=olt-a", "", http.StatusOK)
	if out["count"] != float64(1) {
		t.Fatalf("workflows %v", out)
	}
	// Search, filters, sort and pages like the other lists.
	if out := f.must("GET", "/api/v1/workflows?q=B&enabled=true&sort=-name&limit=1&offset=0", "", http.StatusOK); out["total"] != float64(1) || out["limit"] != float64(1) {
		t.Errorf("workflows searched %v", out)
	}
	if out := f.must("GET", "/api/v1/workflows?enabled=false", "", http.StatusOK); out["total"] != float64(0) {
		t.Errorf("disabled workflows %v", out)
	}
	f.must("GET", "/api/v1/workflows?sort=nope", "", http.StatusBadRequest)
}
