package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// historyFixture: two OLTs, three ONUs in onu_data and a scripted life
// of ONU 1/1 on olt-1 in onu_history: first reading at t0 (online,
// -20.5 dBm), a power drop at t0+1h, offline at t0+2h, back at t0+3h,
// and a description given an hour ago.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func historyFixture(t *testing.T) *fixture {
	f := setup(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := f.db.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at) VALUES
		('olt-1', 'Centro', '10.0.0.1', 161, 'huawei', true, now()), ('olt-2', 'Norte', '10.0.0.2', 161, 'zte', true, now())`)
	exec(`INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, description, status, rx_power_dbm, first_seen, last_seen, last_execution_id) VALUES
		('olt-1', 1, 1, 'HWTC00000001', 'cliente', 'ONLINE', -21, $1, now(), 'e4'),
		('olt-1', 1, 2, 'HWTC00000002', '', 'OFFLINE', NULL, $1, now(), 'e4'),
		('olt-2', 3, 1, 'HWTC00000003', '', 'ONLINE', -19, $1, now(), 'e9'),
		('olt-2', 3, 2, 'ZTEG00000001', '', 'ONLINE', -18, $1, now(), 'e9')`, t0)
	h := func(field string, old, new any, at time.Time, exec string, seq int) {
		t.Helper()
		if _, err := f.db.Exec(ctx, `INSERT INTO onu_history (olt_id, pon_index, onu_id, field, old_value, new_value, at, execution_id, stream_seq)
			VALUES ('olt-1', 1, 1, $1, $2, $3, $4, $5, $6)`, field, old, new, at, exec, seq); err != nil {
			t.Fatal(err)
		}
	}
	h("serial", nil, "HWTC00000001", t0, "e1", 10)
	h("status", nil, "ONLINE", t0, "e1", 10)
	h("rx_power_dbm", nil, "-20.5", t0, "e1", 10)
	h("rx_power_dbm", "-20.5", "-26.25", t0.Add(time.Hour), "e2", 11)
	h("status", "ONLINE", "OFFLINE", t0.Add(2*time.Hour), "e3", 12)
	h("rx_power_dbm", "-26.25", nil, t0.Add(2*time.Hour), "e3", 12)
	h("status", "OFFLINE", "ONLINE", t0.Add(3*time.Hour), "e4", 13)
	h("rx_power_dbm", nil, "-21", t0.Add(3*time.Hour), "e4", 13)
	h("last_up_at", nil, "2026-01-01T02:59:00Z", t0.Add(3*time.Hour), "e4", 13)
	h("description", nil, "cliente", time.Now().Add(-time.Hour), "e5", 14)
	return f
}

func rfc(t time.Time) string { return url.QueryEscape(t.Format(time.RFC3339)) }

func historyRows(t *testing.T, out map[string]any) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for _, x := range out["history"].([]any) {
		rows = append(rows, x.(map[string]any))
	}
	return rows
}

func TestONUHistory(t *testing.T) {
	f := historyFixture(t)
	base := "/api/v1/olts/olt-1/onus/1/1/history"
	rng := "?from=" + rfc(t0) + "&to=" + rfc(t0.Add(3*time.Hour))

	out := f.must("GET", base+rng, "", http.StatusOK)
	rows := historyRows(t, out)
	if len(rows) != 9 || out["total"] != float64(9) {
		t.Fatalf("history t0..t3: %d rows (total %v), want 9: %v", len(rows), out["total"], rows)
	}
	// Oldest first; the first reading has no old value.
	if rows[0]["at"] != "2026-01-01T00:00:00Z" || rows[0]["old_value"] != nil || rows[8]["at"] != "2026-01-01T03:00:00Z" {
		t.Errorf("order or first rows: %v", rows)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i]["at"].(string) < rows[i-1]["at"].(string) {
			t.Errorf("row %d before row %d", i, i-1)
		}
	}

	// Fields.
	rows = historyRows(t, f.must("GET", base+rng+"&fields=rx_power_dbm", "", http.StatusOK))
	var vals []any
	for _, r := range rows {
		if r["field"] != "rx_power_dbm" {
			t.Errorf("field filter let through %v", r)
		}
		vals = append(vals, r["new_value"])
	}
	if mustJSON(t, vals) != `["-20.5","-26.25",null,"-21"]` {
		t.Errorf("rx history %s", mustJSON(t, vals))
	}
	if rows[1]["execution_id"] != "e2" || rows[1]["stream_seq"] != float64(11) || rows[1]["old_value"] != "-20.5" {
		t.Errorf("rx change %v", rows[1])
	}
	if n := len(historyRows(t, f.must("GET", base+rng+"&fields=status,%20rx_power_dbm", "", http.StatusOK))); n != 7 {
		t.Errorf("status and rx: %d rows, want 7", n)
	}
	code, out, raw := f.do("GET", base+rng+"&fields=status,rx_powr", "")
	if code != http.StatusBadRequest || out["field"] != "fields" || !strings.Contains(raw, `rx_powr`) || !strings.Contains(raw, "rx_power_dbm") {
		t.Errorf("unknown field = %d %s", code, raw)
	}

	// The time range: default the last 24 hours; bounds inclusive.
	rows = historyRows(t, f.must("GET", base, "", http.StatusOK))
	if len(rows) != 1 || rows[0]["field"] != "description" {
		t.Errorf("last 24 h: %v", rows)
	}
	rows = historyRows(t, f.must("GET", base+"?from="+rfc(t0.Add(time.Hour))+"&to="+rfc(t0.Add(2*time.Hour)), "", http.StatusOK))
	if len(rows) != 3 {
		t.Errorf("t1..t2: %v", rows)
	}
	for _, q := range []string{"?from=yesterday", "?to=2026-13-01T00:00:00Z", "?from=" + rfc(t0.Add(time.Hour)) + "&to=" + rfc(t0)} {
		if code, out, raw := f.do("GET", base+q, ""); code != http.StatusBadRequest || (out["field"] != "from" && out["field"] != "to") {
			t.Errorf("%s = %d %s, want 400", q, code, raw)
		}
	}

	// Pagination and newest first.
	out = f.must("GET", base+rng+"&limit=2&offset=1", "", http.StatusOK)
	if rows = historyRows(t, out); len(rows) != 2 || out["total"] != float64(9) || out["offset"] != float64(1) || rows[0]["at"] != "2026-01-01T00:00:00Z" {
		t.Errorf("page: %v", out)
	}
	if rows = historyRows(t, f.must("GET", base+rng+"&sort=-at&limit=1", "", http.StatusOK)); rows[0]["at"] != "2026-01-01T03:00:00Z" {
		t.Errorf("newest first: %v", rows)
	}
	if code, _, raw := f.do("GET", base+"?limit=100000", ""); code != http.StatusBadRequest {
		t.Errorf("limit too large = %d %s", code, raw)
	}

	// 404s: unknown OLT, unknown ONU, not a number; an ONU without
	// history has an empty one.
	for _, p := range []string{"/api/v1/olts/nope/onus/1/1/history", "/api/v1/olts/olt-1/onus/1/99/history", "/api/v1/olts/olt-1/onus/x/1/history",
		"/api/v1/olts/nope/onus/1/1", "/api/v1/olts/olt-1/onus/9/9"} {
		if code, out, raw := f.do("GET", p, ""); code != http.StatusNotFound || out["error"] == "" {
			t.Errorf("%s = %d %s, want 404", p, code, raw)
		}
	}
	if out := f.must("GET", "/api/v1/olts/olt-1/onus/1/2/history", "", http.StatusOK); out["total"] != float64(0) || len(out["history"].([]any)) != 0 {
		t.Errorf("ONU without history: %v", out)
	}
}

func TestONUPointInTime(t *testing.T) {
	f := historyFixture(t)
	base := "/api/v1/olts/olt-1/onus/1/1"

	// Now: the onu_data row.
	out := f.must("GET", base, "", http.StatusOK)
	if out["olt_id"] != "olt-1" || out["serial"] != "HWTC00000001" || out["rx_power_dbm"] != -21.0 || out["description"] != "cliente" {
		t.Errorf("current state %v", out)
	}

	for _, tc := range []struct {
		at   time.Time
		want map[string]any
	}{
		{t0, map[string]any{"status": "ONLINE", "rx_power_dbm": -20.5, "serial": "HWTC00000001", "description": "", "last_up_at": nil}},
		{t0.Add(90 * time.Minute), map[string]any{"status": "ONLINE", "rx_power_dbm": -26.25}},
		{t0.Add(2*time.Hour + time.Minute), map[string]any{"status": "OFFLINE", "rx_power_dbm": nil, "removed_at": nil}},
		{t0.Add(3 * time.Hour), map[string]any{"status": "ONLINE", "rx_power_dbm": -21.0, "last_up_at": "2026-01-01T02:59:00Z", "description": ""}},
		{time.Now(), map[string]any{"status": "ONLINE", "description": "cliente"}},
	} {
		out := f.must("GET", base+"?at="+rfc(tc.at), "", http.StatusOK)
		for k, v := range tc.want {
			if out[k] != v {
				t.Errorf("at %s: %s = %v, want %v (%v)", tc.at, k, out[k], v, out)
			}
		}
		if out["first_seen"] != "2026-01-01T00:00:00Z" || out["olt_id"] != "olt-1" || out["pon_index"] != float64(1) {
			t.Errorf("at %s: %v", tc.at, out)
		}
	}
	out = f.must("GET", base+"?at="+rfc(t0.Add(150*time.Minute)), "", http.StatusOK)
	if ch := out["changed_at"].(map[string]any); ch["status"] != "2026-01-01T02:00:00Z" || ch["serial"] != "2026-01-01T00:00:00Z" || out["last_changed"] != "2026-01-01T02:00:00Z" {
		t.Errorf("changed_at %v", out)
	}

	// Before its first reading: 404 saying so.
	code, _, raw := f.do("GET", base+"?at="+rfc(t0.Add(-time.Second)), "")
	if code != http.StatusNotFound || !strings.Contains(raw, "did not exist yet") || !strings.Contains(raw, "2026-01-01T00:00:00Z") {
		t.Errorf("before the first reading = %d %s", code, raw)
	}
	// An ONU without history has no past state.
	if code, _, raw := f.do("GET", "/api/v1/olts/olt-1/onus/1/2?at="+rfc(t0), ""); code != http.StatusNotFound || !strings.Contains(raw, "no history") {
		t.Errorf("no history = %d %s", code, raw)
	}
	if code, out, _ := f.do("GET", base+"?at=soon", ""); code != http.StatusBadRequest || out["field"] != "at" {
		t.Errorf("bad at = %d %v", code, out)
	}
}

func TestONUSearchBySerial(t *testing.T) {
	f := historyFixture(t)
	serials := func(out map[string]any) string {
		var s []string
		for _, x := range out["onus"].([]any) {
			m := x.(map[string]any)
			s = append(s, m["olt_id"].(string)+":"+m["serial"].(string))
		}
		return strings.Join(s, ",")
	}
	out := f.must("GET", "/api/v1/onus?serial=HWTC00000003", "", http.StatusOK)
	if serials(out) != "olt-2:HWTC00000003" || out["total"] != float64(1) {
		t.Errorf("exact: %v", out)
	}
	if m := out["onus"].([]any)[0].(map[string]any); m["olt_name"] != "Norte" || m["pon_index"] != float64(3) || m["rx_power_dbm"] != -19.0 {
		t.Errorf("found ONU %v", m)
	}
	if got := serials(f.must("GET", "/api/v1/onus?serial=HWTC*", "", http.StatusOK)); got != "olt-1:HWTC00000001,olt-1:HWTC00000002,olt-2:HWTC00000003" {
		t.Errorf("prefix across OLTs: %s", got)
	}
	if got := serials(f.must("GET", "/api/v1/onus?serial=HWTC*&status=offline", "", http.StatusOK)); got != "olt-1:HWTC00000002" {
		t.Errorf("prefix and status: %s", got)
	}
	out = f.must("GET", "/api/v1/onus?serial=HWTC*&limit=1&offset=2", "", http.StatusOK)
	if serials(out) != "olt-2:HWTC00000003" || out["total"] != float64(3) || out["count"] != float64(1) {
		t.Errorf("page: %v", out)
	}
	for _, q := range []string{"HWTC0000000", "hwtc*", "HWTC_*", "%25*"} {
		if out := f.must("GET", "/api/v1/onus?serial="+q, "", http.StatusOK); out["total"] != float64(0) {
			t.Errorf("%s matched %v", q, out)
		}
	}
	for _, q := range []string{"", "?serial=", "?serial=*", "?serial=HW*TC", "?serial=HWTC*&sort=nope"} {
		if code, out, raw := f.do("GET", "/api/v1/onus"+q, ""); code != http.StatusBadRequest || out["field"] == "" {
			t.Errorf("%q = %d %s, want 400", q, code, raw)
		}
	}
}

// An ONU's last_seen is the later of its row's (its last change) and its
// OLT's last complete walk, unless the walk marked it removed; the list,
// the one-ONU answer and the serial search agree, and sort by it.
func TestONULastSeenComesFromTheLastWalk(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	walk := t0.Add(48 * time.Hour)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := f.db.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at) VALUES ('olt-1', 'Centro', '10.0.0.1', 161, 'huawei', true, now())`)
	exec(`INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, status, first_seen, last_seen, removed_at) VALUES
		('olt-1', 1, 1, 'HWTC00000001', 'ONLINE', $1, $1, NULL),
		('olt-1', 1, 2, 'HWTC00000002', 'ONLINE', $1, $1 + interval '1 hour', $1 + interval '2 hours'),
		('olt-1', 1, 3, 'HWTC00000003', 'ONLINE', $1, $2::timestamptz + interval '1 minute', NULL)`, t0, walk)
	exec(`INSERT INTO onu_walks (olt_id, execution_id, seen_at) VALUES ('olt-1', 'e7', $1)`, walk)
	want := map[float64]string{
		1: walk.Format(time.RFC3339),                  // unchanged since t0, read by the walk
		2: t0.Add(time.Hour).Format(time.RFC3339),     // removed: its own
		3: walk.Add(time.Minute).Format(time.RFC3339), // changed after the walk
	}
	out := f.must("GET", "/api/v1/olts/olt-1/onus?sort=-last_seen", "", http.StatusOK)
	var order []float64
	for _, x := range out["onus"].([]any) {
		o := x.(map[string]any)
		id := o["onu_id"].(float64)
		order = append(order, id)
		if o["last_seen"] != want[id] {
			t.Errorf("list: onu %v last_seen %v, want %s", id, o["last_seen"], want[id])
		}
	}
	if len(order) != 3 || order[0] != 3 || order[1] != 1 || order[2] != 2 {
		t.Errorf("sorted by -last_seen: %v, want [3 1 2]", order)
	}
	if o := f.must("GET", "/api/v1/olts/olt-1/onus/1/1", "", http.StatusOK); o["last_seen"] != want[1] {
		t.Errorf("one onu: last_seen %v, want %s", o["last_seen"], want[1])
	}
	s := f.must("GET", "/api/v1/onus?serial=HWTC00000001", "", http.StatusOK)
	if got := s["onus"].([]any); len(got) != 1 || got[0].(map[string]any)["last_seen"] != want[1] {
		t.Errorf("search: %v, want last_seen %s", got, want[1])
	}
}
