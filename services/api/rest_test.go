package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// Every resource answers the same way: GET one, 409 on a second POST of
// an id, 404 for an unknown parent, PATCH of some fields, DELETE (409
// while in use), enable/disable.
func TestRESTConsistency(t *testing.T) {
	f := setup(t)
	f.seed()
	for _, c := range []struct{ path, body string }{
		{"/api/v1/brands", brandBody}, {"/api/v1/oids", oidBody}, {"/api/v1/olts", oltBody}, {"/api/v1/jobs", jobBody},
	} {
		if code, out, _ := f.do("POST", c.path, c.body); code != http.StatusConflict || out["error"] == nil {
			t.Errorf("second POST %s = %d %v, want 409", c.path, code, out)
		}
	}
	for _, p := range []string{"/api/v1/brands/huawei", "/api/v1/oids/hw-serial", "/api/v1/olts/olt-a", "/api/v1/jobs/get-serial"} {
		out := f.must("GET", p, "", http.StatusOK)
		if out["id"] == nil {
			t.Errorf("GET %s = %v", p, out)
		}
		if out["community_enc"] != nil || out["community"] != nil {
			t.Errorf("GET %s shows the community", p)
		}
		f.must("GET", p+"-nope", "", http.StatusNotFound)
	}
	f.must("GET", "/api/v1/olts/nope/onus", "", http.StatusNotFound)
	f.must("GET", "/api/v1/jobs/nope/olts", "", http.StatusNotFound)
	f.must("GET", "/api/v1/jobs/nope/olts/olt-a", "", http.StatusNotFound)

	// PATCH changes only what it names; the sealed community is kept.
	before := decode[streams.OLTUpserted](t, f.last(streams.SubjectOLT("olt-a")))
	f.must("PATCH", "/api/v1/olts/olt-a", `{"name":"OLT A2"}`, http.StatusAccepted)
	after := decode[streams.OLTUpserted](t, f.last(streams.SubjectOLT("olt-a")))
	if after.Name != "OLT A2" || after.IP != before.IP || after.CommunityEnc != before.CommunityEnc || after.BrandID != "huawei" {
		t.Errorf("PATCH olt: %+v", after)
	}
	if code, out, _ := f.do("PATCH", "/api/v1/olts/olt-a", `{"ip":"999.0.0.1"}`); code != 400 || out["field"] != "ip" {
		t.Errorf("PATCH bad ip = %d %v", code, out)
	}
	f.must("POST", "/api/v1/olts/olt-a/disable", "", http.StatusAccepted)
	if o := decode[streams.OLTUpserted](t, f.last(streams.SubjectOLT("olt-a"))); o.Enabled || o.Name != "OLT A2" {
		t.Errorf("disable olt: %+v", o)
	}
	f.must("POST", "/api/v1/jobs/get-serial/disable", "", http.StatusAccepted)
	if j := decode[streams.JobUpserted](t, f.last(streams.SubjectJob("get-serial"))); j.Enabled {
		t.Errorf("disable job: %+v", j)
	}
	f.must("POST", "/api/v1/jobs/get-serial/olts", `{"olt_id":"olt-a"}`, http.StatusCreated)
	f.must("POST", "/api/v1/jobs/get-serial/olts", `{"olt_id":"olt-a"}`, http.StatusConflict)
	f.must("GET", "/api/v1/jobs/get-serial/olts/olt-a", "", http.StatusOK)
	f.must("PATCH", "/api/v1/jobs/get-serial/olts/olt-a", `{"enabled":false}`, http.StatusAccepted)
	if a := decode[streams.JobOLTAssigned](t, f.last(streams.SubjectAssignment("get-serial", "olt-a"))); a.Enabled {
		t.Errorf("assignment still enabled")
	}

	// A brand or OID in use cannot be deleted (the read model says so).
	ctx := context.Background()
	now := time.Now()
	if _, err := f.db.Exec(ctx, `INSERT INTO snmp_jobs (id, name, brand_id, kind, oid_ids, interval_seconds, max_retries, retry_delay_seconds,
		timeout_seconds, priority, enabled, updated_at) VALUES ('get-serial', 'x', 'huawei', 'get', '{hw-serial}', 300, 3, 120, 0, 40, true, $1)`, now); err != nil {
		t.Fatal(err)
	}
	f.must("DELETE", "/api/v1/oids/hw-serial", "", http.StatusConflict)
	f.must("DELETE", "/api/v1/brands/huawei", "", http.StatusConflict)
	f.must("POST", "/api/v1/brands", `{"id":"spare","name":"Spare","index_scheme":"pon.onu"}`, http.StatusCreated)
	f.must("DELETE", "/api/v1/brands/spare", "", http.StatusAccepted)
	decode[streams.BrandDeleted](t, f.last(streams.SubjectBrand("spare")))
	f.must("GET", "/api/v1/brands/spare", "", http.StatusNotFound)
	// Deleted, the id can be created again.
	f.must("POST", "/api/v1/brands", `{"id":"spare","name":"Spare","index_scheme":"pon.onu"}`, http.StatusCreated)

	// Lists: search, sort, pagination.
	if _, err := f.db.Exec(ctx, `INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at) VALUES
		('o1', 'Alpha', '10.0.0.1', 161, 'huawei', true, $1), ('o2', 'Beta', '10.0.0.2', 161, 'huawei', false, $1),
		('o3', 'Gamma', '10.0.0.3', 161, 'zte', true, $1)`, now); err != nil {
		t.Fatal(err)
	}
	out := f.must("GET", "/api/v1/olts?sort=-name&limit=2", "", http.StatusOK)
	olts := out["olts"].([]any)
	if out["total"] != float64(3) || len(olts) != 2 || olts[0].(map[string]any)["name"] != "Gamma" {
		t.Errorf("sorted page %v", out)
	}
	out = f.must("GET", "/api/v1/olts?q=bet", "", http.StatusOK)
	if out["total"] != float64(1) {
		t.Errorf("search %v", out)
	}
	out = f.must("GET", "/api/v1/olts?enabled=true&brand_id=huawei", "", http.StatusOK)
	if out["total"] != float64(1) {
		t.Errorf("filters %v", out)
	}
	if code, out, _ := f.do("GET", "/api/v1/olts?sort=community", ""); code != 400 || out["field"] != "sort" {
		t.Errorf("bad sort = %d %v", code, out)
	}
}
