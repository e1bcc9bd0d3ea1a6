package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
)

// The OLT page shows the OLT's health (chassis, fans, power supplies,
// uplinks, PON ports down, recent changes), the API serves it, and the PON
// rows carry their port's health keys; before a reading, the page says so
// and the API answers 404.
func TestConsoleAndAPIOLTHealth(t *testing.T) {
	r := newRig(t)
	_, viewer, _ := r.user("vera", auth.Viewer)
	api := func(method, path, body string, want int) string {
		t.Helper()
		code, out := r.do(client(t), method, path, staticToken, "", body)
		if code != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, code, out, want)
		}
		return out
	}
	api("POST", "/api/v1/brands", `{"id":"huawei","name":"Huawei","index_scheme":"pon.onu"}`, http.StatusCreated)
	api("POST", "/api/v1/olts", `{"id":"olt-a","name":"A","ip":"10.0.0.1","community":"s3cr3t-community","brand_id":"huawei"}`, http.StatusCreated)
	ctx := context.Background()
	if _, err := r.s.deps.DB.Exec(ctx, `INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at, deleted, disabled_reason, disabled_at)
		VALUES ('olt-a', 'A', '10.0.0.1', 161, 'huawei', true, now(), false, '', NULL) ON CONFLICT (id) DO NOTHING`); err != nil {
		t.Fatal(err)
	}
	if _, body := r.do(viewer, "GET", "/olts/olt-a", "", "", ""); !strings.Contains(body, `id="health-none"`) {
		t.Errorf("the OLT page before a health reading lacks its note")
	}
	api("GET", "/api/v1/olts/olt-a/health", "", http.StatusNotFound)
	at := time.Now().Add(-time.Minute).UTC()
	for _, q := range []string{
		`INSERT INTO olt_health (olt_id, execution_id, job_id, observed_at, tables, cpu_percent, memory_percent, temperature_c, boards, fans, psus, uplinks,
			fans_failed, psus_failed, updated_at, stream_seq) VALUES ('olt-a', 'e1', 'huawei-health', $1, '{chassis,fans,psus,pons,uplinks}', 23, 41, 44, 2,
			'[{"index":"0.1","status":"failed"},{"index":"0.2","status":"ok"}]', '[{"index":"0.1","status":"ok"}]',
			'[{"index":"7","name":"xgei_1/19/1","oper_state":"up","in_errors":3,"out_errors":0}]', 1, 0, now(), 9)`,
		`INSERT INTO olt_pon_health (olt_id, idx, pon_index, name, admin_state, oper_state, tx_power_dbm, temperature_c, observed_at, changed_at)
			VALUES ('olt-a', '4194304000', 4194304000, '0/1/0', 'up', 'down', 4.12, 45, $1, $1)`,
		`INSERT INTO olt_health_history (olt_id, component, idx, field, old_value, new_value, observed_at, stream_seq)
			VALUES ('olt-a', 'fan', '0.1', 'status', 'ok', 'failed', $1, 9)`,
	} {
		if _, err := r.s.deps.DB.Exec(ctx, q, at); err != nil {
			t.Fatal(err)
		}
	}
	out := api("GET", "/api/v1/olts/olt-a/health", "", http.StatusOK)
	for _, want := range []string{`"cpu_percent":23`, `"temperature_c":44`, `"fans_failed":1`, `"pons_down":1`, `"status":"failed"`, `"new":"failed"`, `"in_errors":3`} {
		if !strings.Contains(out, want) {
			t.Errorf("GET .../health lacks %s:\n%s", want, out)
		}
	}
	out = api("GET", "/api/v1/olts/olt-a/pons", "", http.StatusOK)
	for _, want := range []string{`"pon_index":4194304000`, `"oper_state":"down"`, `"tx_power_dbm":4.12`, `"onus_total":0`} {
		if !strings.Contains(out, want) {
			t.Errorf("GET .../pons lacks %s:\n%s", want, out)
		}
	}
	if _, body := r.do(viewer, "GET", "/vendor-profiles/huawei-ma5800", "", "", ""); !strings.Contains(body, `id="profile-health"`) ||
		!strings.Contains(body, `1.3.6.1.4.1.2011.5.25.31.1.1.10.1.7`) {
		t.Errorf("the vendor profile page lacks its health tables")
	}
	_, body := r.do(viewer, "GET", "/olts/olt-a", "", "", "")
	for _, want := range []string{`id="health-cpu">23 %`, `id="health-temperature">44 °C`, `class="badge b-bad fan" data-index="0.1"`, `class="badge b-good psu"`,
		`xgei_1/19/1: up`, `id="health-changes"`, `<td class="pon-state"><span class="badge b-bad">down</span>`, `<td class="pon-tx">4.12 dBm</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the OLT page lacks %q", want)
		}
	}
}
