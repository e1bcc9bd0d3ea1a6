package api

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/streams"
)

// GET /api/v1/olts/{id}/traps: the OLT's last traps newest first, raw
// and decoded; 404 for an unknown OLT; the console's OLT page lists them.
func TestTrapsOfOLT(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := r.s.deps.DB.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at) VALUES ('olt-1', 'Centro', '10.0.0.1', 161, 'huawei', true, now())`)
	b, err := streams.Encode("test", time.Now(), streams.OLTUpserted{ID: "olt-1", Name: "Centro", IP: "10.0.0.1", Port: 161, BrandID: "huawei", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.s.deps.JS.Publish(ctx, streams.SubjectOLT("olt-1"), b); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Minute).UTC()
	exec(`INSERT INTO traps (trap_id, olt_id, received_at, version, source, trap_oid, varbinds, kind, rule, pon_index, onu_id, onu_index, port_name, applied, stream_seq) VALUES
		('t1', 'olt-1', $1, 'v2c', '10.0.0.1:4000', '1.3.6.1.4.1.2011.6.128.1.1.2.0.22', '[{"oid":"1.3.6.1.2.1.1.3.0","type":"TimeTicks","value":"5"}]', 'dying_gasp', 'ont-dying-gasp', 4194304000, 3, '4194304000.3', '0/0/0:3', true, 1),
		('t2', 'olt-1', $2, 'v1', '10.0.0.1:4000', '1.3.6.1.6.3.1.1.5.3', '[]', NULL, NULL, NULL, NULL, NULL, NULL, false, 2),
		('t3', 'olt-2', $2, 'v2c', '10.0.0.2:4000', '1.3.6.1.6.3.1.1.5.1', '[]', NULL, NULL, NULL, NULL, NULL, NULL, false, 3)`, t0, t0.Add(time.Second))

	_, viewer, _ := r.user("vera", auth.Viewer)
	code, body := r.do(viewer, "GET", "/api/v1/olts/olt-1/traps", "", "", "")
	if code != http.StatusOK {
		t.Fatalf("traps = %d %s", code, body)
	}
	var out struct {
		Count int       `json:"count"`
		Traps []trapRow `json:"traps"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	if out.Count != 2 || out.Traps[0].TrapID != "t2" || out.Traps[1].TrapID != "t1" {
		t.Fatalf("traps %s, want t2 then t1 (newest first, olt-1 only)", body)
	}
	d := out.Traps[1]
	if d.Kind == nil || *d.Kind != "dying_gasp" || d.ONUID == nil || *d.ONUID != 3 || !d.Applied || !strings.Contains(string(d.Varbinds), "TimeTicks") {
		t.Errorf("decoded trap %+v", d)
	}
	if out.Traps[0].Kind != nil {
		t.Errorf("raw trap has a kind: %+v", out.Traps[0])
	}
	if code, _ := r.do(viewer, "GET", "/api/v1/olts/olt-1/traps?limit=1", "", "", ""); code != http.StatusOK {
		t.Errorf("limit=1 = %d", code)
	}
	if code, _ := r.do(viewer, "GET", "/api/v1/olts/olt-1/traps?limit=0", "", "", ""); code != http.StatusBadRequest {
		t.Errorf("limit=0 = %d, want 400", code)
	}
	if code, _ := r.do(viewer, "GET", "/api/v1/olts/olt-9/traps", "", "", ""); code != http.StatusNotFound {
		t.Errorf("unknown OLT = %d, want 404", code)
	}

	_, page := r.do(viewer, "GET", "/olts/olt-1", "", "", "")
	flat := strings.ReplaceAll(page, "\n", " ")
	if !regexp.MustCompile(`id="live-traps">.*?<tr class="trap">.*?raw.*?<tr class="trap">.*?dying_gasp.*?status set.*?0/0/0:3`).MatchString(flat) {
		t.Errorf("the OLT page's traps block:\n%s", page)
	}
}
