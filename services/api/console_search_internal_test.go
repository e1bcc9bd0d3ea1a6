package api

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/services/api/auth"
)

// The console finds ONUs by serial across OLTs, says when a filter matches
// nothing (not "No ONU yet"), filters by the vendor states, counts the
// vendor profiles it lists, and names poller processes and execution slots
// apart.
func TestConsoleONUSearchAndCounts(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	for _, c := range []struct{ path, body string }{
		{"/api/v1/brands", `{"id":"huawei","name":"Huawei","index_scheme":"pon.onu"}`},
		{"/api/v1/olts", `{"id":"olt-1","name":"Centro","ip":"10.0.0.1","community":"s3cr3t-community","brand_id":"huawei"}`},
		{"/api/v1/olts", `{"id":"olt-2","name":"Norte","ip":"10.0.0.2","community":"s3cr3t-community","brand_id":"huawei"}`},
	} {
		if code, body := r.do(client(t), "POST", c.path, staticToken, "", c.body); code != http.StatusCreated {
			t.Fatalf("POST %s = %d %s", c.path, code, body)
		}
	}
	now := time.Now().UTC()
	if _, err := r.s.deps.DB.Exec(ctx, `INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, description, status, first_seen, last_seen, last_execution_id) VALUES
		('olt-1', 4194304000, 7, 'HWTC0000ABCD', 'a', 'ONLINE', $1, $1, 'e1'),
		('olt-1', 4194304000, 8, 'ZTEG00000001', 'b', 'DYING_GASP', $1, $1, 'e1'),
		('olt-2', 4194304256, 3, 'HWTC0000FFFF', 'c', 'OFFLINE', $1, $1, 'e2')`, now); err != nil {
		t.Fatal(err)
	}
	_, viewer, _ := r.user("vera", auth.Viewer)
	get := func(path string) string {
		t.Helper()
		code, body := r.do(viewer, "GET", path, "", "", "")
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d\n%s", path, code, body)
		}
		return body
	}

	if body := get("/onus"); !strings.Contains(body, "Search ONUs of every OLT by serial") || strings.Contains(body, "serial is required") {
		t.Errorf("/onus without a serial: no prompt, or an error")
	}
	body := get("/onus?q=HWTC*")
	for _, want := range []string{`href="/olts/olt-1/onus/4194304000/7"`, `href="/olts/olt-2/onus/4194304256/3"`, "HWTC0000FFFF", `<span class="count">2</span>`} {
		if !strings.Contains(body, want) {
			t.Errorf("/onus?q=HWTC* lacks %s", want)
		}
	}
	if strings.Contains(body, "ZTEG00000001") {
		t.Error("/onus?q=HWTC* lists a ZTE serial")
	}
	if body := get("/onus?q=HWTC0000ABCD"); !strings.Contains(body, `<span class="count">1</span>`) {
		t.Error("exact serial: not one ONU")
	}

	body = get("/olts/olt-1?status=LOS")
	if !strings.Contains(body, "No ONU matches this filter") || strings.Contains(body, "No ONU yet") {
		t.Error("a filter matching nothing on an OLT with ONUs says no ONU yet")
	}
	for _, st := range []string{"LOS", "DYING_GASP", "POWER_OFF"} {
		if !strings.Contains(body, `<option value="`+st+`"`) {
			t.Errorf("status filter lacks %s", st)
		}
	}
	if body := get("/olts/olt-1?status=DYING_GASP"); !strings.Contains(body, "ZTEG00000001") || strings.Contains(body, "HWTC0000ABCD") {
		t.Error("status DYING_GASP does not filter")
	}

	body = get("/vendor-profiles")
	m := regexp.MustCompile(`<span class="count">(\d+)</span>`).FindStringSubmatch(body)
	rows := strings.Count(body, `href="/vendor-profiles/`)
	if m == nil || m[1] != strconv.Itoa(rows) || rows < 8 {
		t.Errorf("vendor profiles: count %v, %d profiles listed", m, rows)
	}

	body = get("/pollers")
	if !strings.Contains(body, "poller processes") || !strings.Contains(body, "execution slots") {
		t.Error("pollers page does not tell processes from execution slots")
	}
}
