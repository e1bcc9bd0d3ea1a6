package api

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
)

// The ONU page: linked from its OLT's ONU list, it shows the ONU's state,
// its history as inline SVG charts (rx and status over the range) and a
// table of changes; a viewer may open it; an unknown ONU is a 404 page.
func TestConsoleONUPage(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	db := r.s.deps.DB
	now := time.Now().UTC().Truncate(time.Second)
	for _, c := range []struct{ path, body string }{
		{"/api/v1/brands", `{"id":"huawei","name":"Huawei","index_scheme":"pon.onu"}`},
		{"/api/v1/olts", `{"id":"olt-1","name":"Centro","ip":"10.0.0.1","community":"s3cr3t-community","brand_id":"huawei"}`},
	} {
		if code, body := r.do(client(t), "POST", c.path, staticToken, "", c.body); code != http.StatusCreated {
			t.Fatalf("POST %s = %d %s", c.path, code, body)
		}
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, description, status, rx_power_dbm, first_seen, last_seen, last_execution_id)
			VALUES ('olt-1', 4194304000, 7, 'HWTC0000ABCD', 'cliente <b>', 'ONLINE', -21, $1, $1, 'e3')`, []any{now.Add(-5 * time.Hour)}},
		{`INSERT INTO onu_history (olt_id, pon_index, onu_id, field, old_value, new_value, at, execution_id, stream_seq) VALUES
			('olt-1', 4194304000, 7, 'serial', NULL, 'HWTC0000ABCD', $1, 'e1', 1),
			('olt-1', 4194304000, 7, 'status', NULL, 'ONLINE', $1, 'e1', 1),
			('olt-1', 4194304000, 7, 'rx_power_dbm', NULL, '-20.5', $1, 'e1', 1),
			('olt-1', 4194304000, 7, 'rx_power_dbm', '-20.5', '-26.25', $2, 'e2', 2),
			('olt-1', 4194304000, 7, 'status', 'ONLINE', 'OFFLINE', $3, 'e3', 3),
			('olt-1', 4194304000, 7, 'rx_power_dbm', '-26.25', NULL, $3, 'e3', 3),
			('olt-1', 4194304000, 7, 'status', 'OFFLINE', 'ONLINE', $4, 'e4', 4),
			('olt-1', 4194304000, 7, 'rx_power_dbm', NULL, '-21', $4, 'e4', 4)`,
			[]any{now.Add(-5 * time.Hour), now.Add(-4 * time.Hour), now.Add(-3 * time.Hour), now.Add(-2 * time.Hour)}},
	} {
		if _, err := db.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	_, viewer, _ := r.user("vera", auth.Viewer)
	code, body := r.do(viewer, "GET", "/olts/olt-1", "", "", "")
	if code != 200 || !strings.Contains(body, `href="/olts/olt-1/onus/4194304000/7"`) {
		t.Fatalf("OLT page = %d without a link to the ONU page", code)
	}
	code, body = r.do(viewer, "GET", "/olts/olt-1/onus/4194304000/7", "", "", "")
	if code != 200 {
		t.Fatalf("ONU page = %d\n%s", code, body)
	}
	for _, want := range []string{
		`HWTC0000ABCD`, `cliente &lt;b&gt;`, `id="chart-rx_power_dbm"`, `<svg class="chart-svg"`, `data-field="rx_power_dbm"`,
		`class="line" d="M`, `<title>`, `-26.25 dBm`, `class="st-offline"`, `class="st-online"`, `id="onu-changes"`,
		`<span class="count">8</span>`, `href="/executions/e3"`, `data-live-topic="olt:olt-1"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("ONU page lacks %s", want)
		}
	}
	// The rx line has a gap while the ONU had no reading (two M moves).
	if m := regexp.MustCompile(`class="line" d="([^"]*)"`).FindStringSubmatch(body); m == nil || strings.Count(m[1], "M") != 2 {
		t.Errorf("rx path %v, want two segments", m)
	}
	// Newest change first.
	if i, j := strings.Index(body, "e4</a>"), strings.Index(body, "e1</a>"); i < 0 || j < 0 || i > j {
		t.Errorf("changes not newest first")
	}
	// One field, an older range with nothing in it, a bad range.
	if code, body := r.do(viewer, "GET", "/olts/olt-1/onus/4194304000/7?fields=status", "", "", ""); code != 200 || !strings.Contains(body, `<span class="count">3</span>`) {
		t.Errorf("fields=status = %d", code)
	}
	old := "?from=" + now.Add(-30*24*time.Hour).Format("2006-01-02T15:04") + "&to=" + now.Add(-29*24*time.Hour).Format("2006-01-02T15:04")
	if code, body := r.do(viewer, "GET", "/olts/olt-1/onus/4194304000/7"+old, "", "", ""); code != 200 || !strings.Contains(body, "no reading in this range") || !strings.Contains(body, "No change in this range") {
		t.Errorf("empty range = %d", code)
	}
	if code, body := r.do(viewer, "GET", "/olts/olt-1/onus/4194304000/7?from=nope", "", "", ""); code != 200 || !strings.Contains(body, `id="page-error"`) {
		t.Errorf("bad from = %d", code)
	}
	for _, p := range []string{"/olts/olt-1/onus/4194304000/8", "/olts/nope/onus/1/1", "/olts/olt-1/onus/x/7"} {
		if code, _ := r.do(viewer, "GET", p, "", "", ""); code != http.StatusNotFound {
			t.Errorf("%s = %d, want 404", p, code)
		}
	}
}
