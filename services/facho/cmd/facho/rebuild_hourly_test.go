package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/facho-olt/facho/pkg/pgtest"
)

// facho rebuild onu_history_hourly recomputes the hourly rollups from
// onu_history alone (no NATS): the rows of the range replaced by what the
// raw changes say, numeric fields only; an empty history is said so.
func TestRebuildHourlyCommand(t *testing.T) {
	dbURL := pgtest.URL(t)
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return dbURL
		}
		return ""
	}
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"rebuild", "onu_history_hourly"}, getenv, &out, &errOut); err != nil || !strings.Contains(out.String(), "onu_history is empty") {
		t.Fatalf("empty history: %v %q", err, out.String())
	}
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for _, r := range []struct {
		field    string
		old, new any
		at       time.Time
		seq      int
	}{
		{"rx_power_dbm", nil, "-20", t0.Add(time.Minute), 1},
		{"status", nil, "ONLINE", t0.Add(time.Minute), 1},
		{"rx_power_dbm", "-20", "-24.5", t0.Add(30 * time.Minute), 2},
		{"rx_power_dbm", "-24.5", nil, t0.Add(25 * time.Hour), 3},
	} {
		if _, err := db.Exec(ctx, `INSERT INTO onu_history (olt_id, pon_index, onu_id, field, old_value, new_value, at, execution_id, stream_seq)
			VALUES ('olt-1', 4194304000, 1, $1, $2, $3, $4, 'e', $5)`, r.field, r.old, r.new, r.at, r.seq); err != nil {
			t.Fatal(err)
		}
	}
	// A stale row of the range, to be replaced.
	if _, err := db.Exec(ctx, `INSERT INTO onu_history_hourly (olt_id, pon_index, onu_id, field, hour, min_value, max_value, last_value, last_at, last_seq)
		VALUES ('olt-1', 4194304000, 1, 'rx_power_dbm', $1, -99, -99, -99, $1, 9)`, t0.Add(5*time.Hour)); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(ctx, []string{"rebuild", "onu_history_hourly", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-02T23:00:00Z"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("rebuild: %v (%s)", err, errOut.String())
	}
	if !strings.Contains(out.String(), "2 days (2026-01-01 .. 2026-01-02) recomputed from onu_history: 1 rows replaced, 2 written") {
		t.Errorf("report %q", out.String())
	}
	rows, err := db.Query(ctx, `SELECT hour, min_value, max_value, last_value FROM onu_history_hourly ORDER BY hour`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var h time.Time
		var mn, mx, last *float64
		if err := rows.Scan(&h, &mn, &mx, &last); err != nil {
			t.Fatal(err)
		}
		s := h.UTC().Format("02T15") + " " + fmtNum(mn) + " " + fmtNum(mx) + " " + fmtNum(last)
		got = append(got, s)
	}
	if want := "01T10 -24.5 -20 -24.5,02T11 -24.5 -24.5 -"; strings.Join(got, ",") != want {
		t.Errorf("rollup %q, want %q", strings.Join(got, ","), want)
	}
}

func fmtNum(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', -1, 64)
}
