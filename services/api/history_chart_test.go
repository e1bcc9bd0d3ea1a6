package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// chartText renders a chart's points as "hour:min/max/last" (or
// "hour:min/max/onus" for a PON), "-" for null.
func chartText(t *testing.T, out map[string]any, last string) string {
	t.Helper()
	num := func(v any) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprint(v)
	}
	var parts []string
	for _, x := range out["points"].([]any) {
		p := x.(map[string]any)
		at, err := time.Parse(time.RFC3339, p["at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, fmt.Sprintf("%s:%s/%s/%s", at.Sub(t0), num(p["min"]), num(p["max"]), num(p[last])))
	}
	return strings.Join(parts, " ")
}

// An ONU's and a PON's chart of a numeric field: every change under 7
// days, the hourly rollups from 7 days on (what each says of the same
// life agrees), the value held at the start, and the errors.
func TestONUAndPONCharts(t *testing.T) {
	f := historyFixture(t)
	// The rollups of the fixture's Rx changes, as the projector writes them.
	for _, r := range []struct {
		h            int
		mn, mx, last any
		lastAt, seq  int
	}{
		{0, -20.5, -20.5, -20.5, 0, 10},
		{1, -26.25, -20.5, -26.25, 1, 11},
		{2, -26.25, -26.25, nil, 2, 12},
		{3, -21.0, -21.0, -21.0, 3, 13},
	} {
		if _, err := f.db.Exec(context.Background(), `INSERT INTO onu_history_hourly (olt_id, pon_index, onu_id, field, hour, min_value, max_value, last_value, last_at, last_seq)
			VALUES ('olt-1', 1, 1, 'rx_power_dbm', $1, $2, $3, $4, $5, $6)`, t0.Add(time.Duration(r.h)*time.Hour), r.mn, r.mx, r.last,
			t0.Add(time.Duration(r.lastAt)*time.Hour), r.seq); err != nil {
			t.Fatal(err)
		}
	}
	// The PON's rollups, as the projector writes them with the ONUs'.
	if _, err := f.db.Exec(context.Background(), `INSERT INTO pon_history_hourly (olt_id, pon_index, field, hour, min_value, max_value, onus)
		SELECT olt_id, pon_index, field, hour, min(min_value), max(max_value), count(*) FROM onu_history_hourly GROUP BY 1, 2, 3, 4`); err != nil {
		t.Fatal(err)
	}
	onu := "/api/v1/olts/olt-1/onus/1/1/chart"
	pon := "/api/v1/olts/olt-1/pons/1/chart"
	for _, tc := range []struct {
		name, path, source, points string
		initial                    any
	}{
		{"ONU, a few hours: every change", onu + "?from=" + rfc(t0.Add(-time.Hour)) + "&to=" + rfc(t0.Add(4*time.Hour)), "changes",
			"0s:-20.5/-20.5/-20.5 1h0m0s:-26.25/-26.25/-26.25 2h0m0s:-/-/- 3h0m0s:-21/-21/-21", nil},
		{"ONU, from within a change's span", onu + "?from=" + rfc(t0.Add(90*time.Minute)) + "&to=" + rfc(t0.Add(4*time.Hour)), "changes",
			"2h0m0s:-/-/- 3h0m0s:-21/-21/-21", -26.25},
		{"ONU, 10 days: the hours", onu + "?from=" + rfc(t0.Add(90*time.Minute)) + "&to=" + rfc(t0.Add(240*time.Hour)), "hourly",
			"1h0m0s:-26.25/-20.5/-26.25 2h0m0s:-26.25/-26.25/- 3h0m0s:-21/-21/-21", -20.5},
		{"ONU, 30 days", onu + "?field=rx_power_dbm&from=" + rfc(t0.Add(-24*time.Hour)) + "&to=" + rfc(t0.Add(29*24*time.Hour)), "hourly",
			"0s:-20.5/-20.5/-20.5 1h0m0s:-26.25/-20.5/-26.25 2h0m0s:-26.25/-26.25/- 3h0m0s:-21/-21/-21", nil},
		{"ONU, another field", onu + "?field=tx_power_dbm&from=" + rfc(t0) + "&to=" + rfc(t0.Add(30*24*time.Hour)), "hourly", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := f.must("GET", tc.path, "", http.StatusOK)
			if out["source"] != tc.source || out["initial"] != tc.initial {
				t.Errorf("source %v initial %v, want %s %v", out["source"], out["initial"], tc.source, tc.initial)
			}
			if got := chartText(t, out, "last"); got != tc.points {
				t.Errorf("points\n%s\nwant\n%s", got, tc.points)
			}
		})
	}
	for _, tc := range []struct{ name, path, source string }{
		{"PON, a few hours", pon + "?from=" + rfc(t0) + "&to=" + rfc(t0.Add(4*time.Hour)), "changes"},
		{"PON, 30 days", pon + "?from=" + rfc(t0.Add(-24*time.Hour)) + "&to=" + rfc(t0.Add(29*24*time.Hour)), "hourly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := f.must("GET", tc.path, "", http.StatusOK)
			want := "0s:-20.5/-20.5/1 1h0m0s:-26.25/-20.5/1 2h0m0s:-26.25/-26.25/1 3h0m0s:-21/-21/1"
			if got := chartText(t, out, "onus"); out["source"] != tc.source || got != want {
				t.Errorf("source %v points\n%s\nwant %s\n%s", out["source"], got, tc.source, want)
			}
		})
	}
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{onu + "?field=status", http.StatusBadRequest, "numeric field"},
		{pon + "?field=nope", http.StatusBadRequest, "numeric field"},
		{onu + "?from=" + rfc(t0.Add(time.Hour)) + "&to=" + rfc(t0), http.StatusBadRequest, "is after to"},
		{pon + "?from=" + rfc(t0) + "&to=" + rfc(t0.Add(500*24*time.Hour)), http.StatusBadRequest, "at most 400 days"},
		{"/api/v1/olts/nope/pons/1/chart", http.StatusNotFound, "no OLT"},
		{"/api/v1/olts/olt-1/pons/x/chart", http.StatusNotFound, "no PON"},
		{"/api/v1/olts/olt-1/onus/1/99/chart", http.StatusNotFound, "no ONU"},
	} {
		code, _, raw := f.do("GET", tc.path, "")
		if code != tc.code || !strings.Contains(raw, tc.want) {
			t.Errorf("GET %s = %d %s, want %d %q", tc.path, code, raw, tc.code, tc.want)
		}
	}
}
