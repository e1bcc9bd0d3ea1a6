package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/api"
	"github.com/facho-olt/facho/streams"
)

// BenchmarkHistoryCharts prints the latency of a 30-day chart of one ONU
// and of one PON through the API at 1,024,000 ONUs (1,000 OLTs x 8 PONs x
// 128 ONUs) with 30 days of history, beside the same charts computed from
// every raw change, in the same run:
//
//	go test -run '^$' -bench HistoryCharts -benchtime 1x ./services/api
//
// The data is generated with SQL (generate_series) into the day
// partitions: the measured PON's 128 ONUs have a rollup row every hour of
// the 30 days (every hour had a change) and a raw change every 5 minutes
// (1.1 M raw rows); every other ONU has a rollup row a day (30.7 M rows:
// a full hourly rollup of a million ONUs, 737 M rows, does not fit this
// box's disk and time). The charts read the rollups through the index by
// ONU, so their cost is that of the measured PON's rows, not the table's
// size.
func BenchmarkHistoryCharts(b *testing.B) {
	const (
		olts, pons, onusPerPON = 1000, 8, 128
		days                   = 30
		targetOLT              = "olt-0"
		targetPON              = 4194304000
	)
	ctx := context.Background()
	env := jstest.Start(b, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(b)
	k, _ := secret.NewKey()
	key, _ := secret.ParseKey(k)
	box, err := secret.NewBox(key)
	if err != nil {
		b.Fatal(err)
	}
	h, err := api.NewHandler(ctx, api.Config{Tokens: []string{token}}, api.Deps{JS: env.JS, DB: db, Box: box, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)

	end := time.Now().UTC().Truncate(24 * time.Hour)
	start := end.Add(-days * 24 * time.Hour)
	exec := func(what, sql string, args ...any) {
		b.Helper()
		t := time.Now()
		tag, err := db.Exec(ctx, sql, args...)
		if err != nil {
			b.Fatalf("%s: %v", what, err)
		}
		fmt.Printf("  %-44s %10d rows in %s\n", what, tag.RowsAffected(), time.Since(t).Round(time.Millisecond))
	}
	fmt.Printf("generating %d ONUs x %d days of history (%s .. %s)\n", olts*pons*onusPerPON, days, start.Format(time.DateOnly), end.Format(time.DateOnly))
	for d := start; d.Before(end); d = d.Add(24 * time.Hour) {
		for _, t := range []string{"onu_history", "onu_history_hourly"} {
			if _, err := db.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s_p%s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')`,
				t, d.Format("20060102"), t, d.Format(time.RFC3339), d.Add(24*time.Hour).Format(time.RFC3339))); err != nil {
				b.Fatal(err)
			}
		}
	}
	exec("olts", `INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at) VALUES ($1, 'bench', '10.0.0.1', 161, 'huawei', true, now())`, targetOLT)
	exec("onu_data of the measured OLT", `INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, status, rx_power_dbm, first_seen, last_seen)
		SELECT $1, $2::bigint + p * 256, o, 'HWTC' || lpad(to_hex(p * 128 + o), 8, '0'), 'ONLINE', -20, $3, $3
		FROM generate_series(0, $4 - 1) p, generate_series(0, $5 - 1) o`, targetOLT, targetPON, start, pons, onusPerPON)
	// Every other ONU: one rollup row a day, at an hour of its own.
	exec("rollup: a row a day of every other ONU", `INSERT INTO onu_history_hourly (olt_id, pon_index, onu_id, field, hour, min_value, max_value, last_value, last_at, last_seq)
		SELECT 'olt-' || (n / ($3 * $4)), $2::bigint + (n / $4 % $3) * 256, n % $4, 'rx_power_dbm', h, -20 - (n % 700) / 100.0, -19 - (n % 700) / 100.0, -19.5 - (n % 700) / 100.0, h + interval '5 minutes', d
		FROM generate_series($4, $5 - 1) n, generate_series(0, $6 - 1) d, LATERAL (SELECT $1::timestamptz + d * interval '24 hours' + (n % 24) * interval '1 hour' AS h) x`,
		start, targetPON, pons, onusPerPON, olts*pons*onusPerPON, days)
	exec("rollup: every hour of the measured PON", `INSERT INTO onu_history_hourly (olt_id, pon_index, onu_id, field, hour, min_value, max_value, last_value, last_at, last_seq)
		SELECT $1, $2, o, 'rx_power_dbm', h, -21 - o / 100.0, -19 - o / 100.0, -20 - (i % 7) / 10.0, h + interval '55 minutes', i
		FROM generate_series(0, $4 - 1) o, generate_series(0, $5 * 24 - 1) i, LATERAL (SELECT $3::timestamptz + i * interval '1 hour' AS h) x`,
		targetOLT, targetPON, start, onusPerPON, days)
	exec("raw: a change every 5 minutes of the PON", `INSERT INTO onu_history (olt_id, pon_index, onu_id, field, old_value, new_value, at, execution_id, stream_seq)
		SELECT $1, $2, o, 'rx_power_dbm', (-20 - ((i + 6) % 7) / 10.0)::text, (-20 - (i % 7) / 10.0)::text, $3::timestamptz + i * interval '5 minutes', 'e', i
		FROM generate_series(0, $4 - 1) o, generate_series(0, $5 * 288 - 1) i`, targetOLT, targetPON, start, onusPerPON, days)
	exec("analyze", `ANALYZE onu_history_hourly, onu_history, onu_data`)
	var size string
	if err := db.QueryRow(ctx, `SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'onu_history_hourly'::regclass`).Scan(&size); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("onu_history_hourly: %s with its indexes\n", size)

	// latency runs f n times and returns the median and the slowest.
	latency := func(n int, f func() error) (time.Duration, time.Duration) {
		var ds []time.Duration
		for range n {
			t := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t))
		}
		slices.Sort(ds)
		return ds[len(ds)/2], ds[len(ds)-1]
	}
	get := func(path string, wantPoints int) func() error {
		return func() error {
			req, err := http.NewRequest("GET", srv.URL+path, nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			var out struct {
				Source string            `json:"source"`
				Points []json.RawMessage `json:"points"`
			}
			if err := json.Unmarshal(raw, &out); err != nil || resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET %s: %d %.200s (%v)", path, resp.StatusCode, raw, err)
			}
			if out.Source != "hourly" || len(out.Points) != wantPoints {
				return fmt.Errorf("GET %s: source %s, %d points, want hourly and %d", path, out.Source, len(out.Points), wantPoints)
			}
			return nil
		}
	}
	rng := "?field=rx_power_dbm&from=" + url.QueryEscape(start.Format(time.RFC3339)) + "&to=" + url.QueryEscape(end.Add(-time.Second).Format(time.RFC3339))
	onuPath := fmt.Sprintf("/api/v1/olts/%s/onus/%d/%d/chart%s", targetOLT, targetPON, 7, rng)
	ponPath := fmt.Sprintf("/api/v1/olts/%s/pons/%d/chart%s", targetOLT, targetPON, rng)
	raw := func(sql string) func() error {
		return func() error {
			rows, err := db.Query(ctx, sql, targetOLT, targetPON, start, end)
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			if n == 0 {
				return fmt.Errorf("raw chart: no rows")
			}
			return rows.Err()
		}
	}
	const runs = 21
	b.ResetTimer()
	onuMed, onuMax := latency(runs, get(onuPath, days*24))
	ponMed, ponMax := latency(runs, get(ponPath, days*24))
	b.StopTimer()
	rawONUMed, _ := latency(5, raw(`SELECT at, new_value FROM onu_history WHERE olt_id = $1 AND pon_index = $2 AND onu_id = 7 AND field = 'rx_power_dbm'
		AND at >= $3 AND at < $4 ORDER BY at, stream_seq`))
	rawPONMed, _ := latency(5, raw(`SELECT date_trunc('hour', at, 'UTC'), min(least(old_value::float8, new_value::float8)), max(greatest(old_value::float8, new_value::float8)), count(DISTINCT onu_id)
		FROM onu_history WHERE olt_id = $1 AND pon_index = $2 AND field = 'rx_power_dbm' AND at >= $3 AND at < $4 GROUP BY 1 ORDER BY 1`))
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("30-day chart of one ONU (API, hourly rollups, %d points):  median %7.1f ms, slowest %7.1f ms of %d; from every raw change (SQL only): %7.1f ms (%.1fx)\n",
		days*24, ms(onuMed), ms(onuMax), runs, ms(rawONUMed), ms(rawONUMed)/ms(onuMed))
	fmt.Printf("30-day chart of one PON (API, hourly rollups, %d ONUs):     median %7.1f ms, slowest %7.1f ms of %d; from every raw change (SQL only): %7.1f ms (%.1fx)\n",
		onusPerPON, ms(ponMed), ms(ponMax), runs, ms(rawPONMed), ms(rawPONMed)/ms(ponMed))
	b.ReportMetric(ms(onuMed), "ms/onu-chart")
	b.ReportMetric(ms(ponMed), "ms/pon-chart")
}
