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

// BenchmarkHistoryCharts prints the latency of 30-day charts of ONUs and
// of PONs through the API at 1,024,000 ONUs (1,000 OLTs x 8 PONs x 128
// ONUs) with 30 days of history, beside, in the same run, the same PON
// charts aggregated from the ONUs' rollups (how the API answered before
// pon_history_hourly) and computed from every raw change:
//
//	go test -run '^$' -bench HistoryCharts -benchtime 1x ./services/api
//
// The data is generated with SQL (generate_series) into the day
// partitions migration 020 and 022 lay out, a day at a time in time
// order, as the projector writes it (a PON's or an ONU's rows of a day
// are spread among every other ONU's, not side by side): the measured
// OLT's 8 PONs of 128 ONUs have an ONU rollup row every hour of the 30
// days (every hour had a change, 737,280 rows), and the first PON a raw
// change every 5 minutes (1.1 M raw rows); every other ONU has a rollup
// row a day (30.7 M rows: a full hourly rollup of a million ONUs, 737 M
// rows, does not fit this box's disk and time). The PON rollups are the
// ONU rollups aggregated by PON and hour, as the projector and the
// rebuild write them (5.8 M rows). The charts are requested of several
// ONUs and of each of the 8 PONs in turn (each PON's first request is its
// first read), 24 requests each: the median and the slowest, once just
// written (no page all-visible: the charts read the heap) and once
// vacuumed, as autovacuum leaves the days gone by (the charts read the
// rollups' key indexes only).
func BenchmarkHistoryCharts(b *testing.B) {
	const (
		olts, pons, onusPerPON = 1000, 8, 128
		days                   = 30
		targetOLT              = "olt-0"
		firstPON               = 4194304000
		runs                   = 24 // 3 rounds of the 8 PONs
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
	generating := time.Now()
	total := map[string]int64{}
	exec := func(what, sql string, args ...any) {
		b.Helper()
		tag, err := db.Exec(ctx, sql, args...)
		if err != nil {
			b.Fatalf("%s: %v", what, err)
		}
		total[what] += tag.RowsAffected()
	}
	fmt.Printf("generating %d ONUs x %d days of history (%s .. %s)\n", olts*pons*onusPerPON, days, start.Format(time.DateOnly), end.Format(time.DateOnly))
	for d := start; d.Before(end); d = d.Add(24 * time.Hour) {
		for _, t := range []string{"onu_history", "onu_history_hourly", "pon_history_hourly"} {
			if _, err := db.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s_p%s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')`,
				t, d.Format("20060102"), t, d.Format(time.RFC3339), d.Add(24*time.Hour).Format(time.RFC3339))); err != nil {
				b.Fatal(err)
			}
		}
	}
	exec("olts", `INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at) VALUES ($1, 'bench', '10.0.0.1', 161, 'huawei', true, now())`, targetOLT)
	exec("onu_data of the measured OLT", `INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, status, rx_power_dbm, first_seen, last_seen)
		SELECT $1, $2::bigint + p * 256, o, 'HWTC' || lpad(to_hex(p * 128 + o), 8, '0'), 'ONLINE', -20, $3, $3
		FROM generate_series(0, $4 - 1) p, generate_series(0, $5 - 1) o`, targetOLT, firstPON, start, pons, onusPerPON)
	for d := range days {
		day := start.Add(time.Duration(d) * 24 * time.Hour)
		// ONU rollups of the day in time order: every other ONU's row of
		// the day (at an hour of its own) among the measured OLT's hourly
		// rows. n numbers the ONUs: OLT n / 1024, PON n / 128 % 8, ONU
		// n % 128; the measured OLT's are 0 .. 1023.
		exec("ONU rollups", `INSERT INTO onu_history_hourly (olt_id, pon_index, onu_id, field, hour, min_value, max_value, last_value, last_at, last_seq)
			SELECT 'olt-' || (n / ($3::int * $4::int)), $2::bigint + (n / $4::int % $3::int) * 256, n % $4::int, 'rx_power_dbm', h,
				-20 - (n % 700) / 100.0 - (i % 7) / 10.0, -19 - (n % 700) / 100.0, -19.5 - (n % 700) / 100.0 - (i % 5) / 10.0, h + interval '55 minutes', $6::int * 24 + i
			FROM (SELECT n, n % 24 AS i FROM generate_series($3::int * $4::int, $5::int - 1) n
				UNION ALL SELECT n, i FROM generate_series(0, $3::int * $4::int - 1) n, generate_series(0, 23) i) x,
				LATERAL (SELECT $1::timestamptz + i * interval '1 hour' AS h) y
			ORDER BY h, n`, day, firstPON, pons, onusPerPON, olts*pons*onusPerPON, d)
		// The PONs' rollups of the day: the ONUs' by PON and hour, as the
		// projector and the rebuild write them.
		exec("PON rollups", `INSERT INTO pon_history_hourly (olt_id, pon_index, field, hour, min_value, max_value, onus)
			SELECT olt_id, pon_index, field, hour, min(min_value), max(max_value), count(*) FROM onu_history_hourly
			WHERE hour >= $1 AND hour < $1::timestamptz + interval '24 hours' GROUP BY 1, 2, 3, 4 ORDER BY hour`, day)
	}
	exec("raw changes of the first PON", `INSERT INTO onu_history (olt_id, pon_index, onu_id, field, old_value, new_value, at, execution_id, stream_seq)
		SELECT $1, $2, o, 'rx_power_dbm', (-20 - ((i + 6) % 7) / 10.0)::text, (-20 - (i % 7) / 10.0)::text, $3::timestamptz + i * interval '5 minutes', 'e', i
		FROM generate_series(0, $5 * 288 - 1) i, generate_series(0, $4 - 1) o ORDER BY i, o`, targetOLT, firstPON, start, onusPerPON, days)
	exec("analyze", `ANALYZE onu_history_hourly, pon_history_hourly, onu_history, onu_data`)
	for _, w := range []string{"ONU rollups", "PON rollups", "raw changes of the first PON"} {
		fmt.Printf("  %-30s %10d rows\n", w, total[w])
	}
	for _, t := range []string{"onu_history_hourly", "pon_history_hourly"} {
		var size string
		if err := db.QueryRow(ctx, `SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = $1::regclass`, t).Scan(&size); err != nil {
			b.Fatal(err)
		}
		fmt.Printf("  %-30s %10s with its indexes\n", t, size)
	}
	fmt.Printf("generated in %s\n", time.Since(generating).Round(time.Second))

	// latency runs f(0 .. n-1) and returns the median and the slowest.
	latency := func(n int, f func(i int) error) (time.Duration, time.Duration) {
		var ds []time.Duration
		for i := range n {
			t := time.Now()
			if err := f(i); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t))
		}
		slices.Sort(ds)
		return ds[len(ds)/2], ds[len(ds)-1]
	}
	get := func(path func(i int) string, wantPoints int) func(i int) error {
		return func(i int) error {
			p := path(i)
			req, err := http.NewRequest("GET", srv.URL+p, nil)
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
				return fmt.Errorf("GET %s: %d %.200s (%v)", p, resp.StatusCode, raw, err)
			}
			if out.Source != "hourly" || len(out.Points) != wantPoints {
				return fmt.Errorf("GET %s: source %s, %d points, want hourly and %d", p, out.Source, len(out.Points), wantPoints)
			}
			return nil
		}
	}
	rng := "?field=rx_power_dbm&from=" + url.QueryEscape(start.Format(time.RFC3339)) + "&to=" + url.QueryEscape(end.Add(-time.Second).Format(time.RFC3339))
	pon := func(i int) int64 { return firstPON + int64(i%pons)*256 }
	// A different ONU each time, on each PON in turn.
	onuPath := func(i int) string {
		return fmt.Sprintf("/api/v1/olts/%s/onus/%d/%d/chart%s", targetOLT, pon(i), (i*37+7)%onusPerPON, rng)
	}
	ponPath := func(i int) string { return fmt.Sprintf("/api/v1/olts/%s/pons/%d/chart%s", targetOLT, pon(i), rng) }
	// sql runs a query of the PON i % 8 and checks it answers rows.
	sql := func(q string) func(i int) error {
		return func(i int) error {
			rows, err := db.Query(ctx, q, targetOLT, pon(i), start, end)
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			if n == 0 {
				return fmt.Errorf("chart: no rows")
			}
			return rows.Err()
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	// measure prints the API's charts of ONUs and PONs beside the PON
	// charts aggregated from the ONUs' rollups as before
	// pon_history_hourly (the PON's ONUs from onu_data, their rollup rows
	// by hour; SQL only, no HTTP or JSON), over the same PONs.
	measure := func(state string) (onuMed, ponMed, ponMax time.Duration) {
		onuMed, onuMax := latency(runs, get(onuPath, days*24))
		ponMed, ponMax = latency(runs, get(ponPath, days*24))
		oldPONMed, oldPONMax := latency(runs, sql(`SELECT hour, min(min_value), max(max_value), count(*) FROM onu_history_hourly
			WHERE olt_id = $1 AND pon_index = $2 AND onu_id = ANY(ARRAY(SELECT onu_id FROM onu_data WHERE olt_id = $1 AND pon_index = $2))
			AND field = 'rx_power_dbm' AND hour > $3::timestamptz - interval '1 hour' AND hour < $4 GROUP BY hour ORDER BY hour`))
		fmt.Printf("%s:\n", state)
		fmt.Printf("  30-day chart of an ONU (API, %d points), %d ONUs of %d PONs: median %7.1f ms, slowest %7.1f ms\n",
			days*24, runs, pons, ms(onuMed), ms(onuMax))
		fmt.Printf("  30-day chart of a PON of %d ONUs (API, %d points), %d requests over %d PONs: median %7.1f ms, slowest %7.1f ms\n",
			onusPerPON, days*24, runs, pons, ms(ponMed), ms(ponMax))
		fmt.Printf("    aggregated from its ONUs' rollups as before (SQL only, same PONs): median %7.1f ms (%.1fx), slowest %7.1f ms (%.1fx)\n",
			ms(oldPONMed), ms(oldPONMed)/ms(ponMed), ms(oldPONMax), ms(oldPONMax)/ms(ponMax))
		return onuMed, ponMed, ponMax
	}
	b.ResetTimer()
	measure("just written (no page all-visible yet: the charts read the heap)")
	b.StopTimer()
	// Vacuumed, as autovacuum leaves the days gone by (their pages
	// all-visible: the charts read the rollups' key indexes only).
	vacuuming := time.Now()
	exec("vacuum", `VACUUM onu_history_hourly, pon_history_hourly`)
	fmt.Printf("vacuumed in %s\n", time.Since(vacuuming).Round(time.Second))
	b.StartTimer()
	onuMed, ponMed, ponMax := measure("vacuumed")
	b.StopTimer()
	rawONUMed, _ := latency(5, func(int) error {
		return sql(`SELECT at, new_value FROM onu_history WHERE olt_id = $1 AND pon_index = $2 AND onu_id = 7 AND field = 'rx_power_dbm'
		AND at >= $3 AND at < $4 ORDER BY at, stream_seq`)(0)
	})
	rawPONMed, _ := latency(5, func(int) error {
		return sql(`SELECT date_trunc('hour', at, 'UTC'), min(least(old_value::float8, new_value::float8)), max(greatest(old_value::float8, new_value::float8)), count(DISTINCT onu_id)
		FROM onu_history WHERE olt_id = $1 AND pon_index = $2 AND field = 'rx_power_dbm' AND at >= $3 AND at < $4 GROUP BY 1 ORDER BY 1`)(0)
	})
	fmt.Printf("from every raw change (SQL only): an ONU's chart median %7.1f ms (%.1fx the API's vacuumed), the first PON's %7.1f ms (%.1fx)\n",
		ms(rawONUMed), ms(rawONUMed)/ms(onuMed), ms(rawPONMed), ms(rawPONMed)/ms(ponMed))
	b.ReportMetric(ms(onuMed), "ms/onu-chart")
	b.ReportMetric(ms(ponMed), "ms/pon-chart")
	b.ReportMetric(ms(ponMax), "ms/pon-chart-slowest")
}
