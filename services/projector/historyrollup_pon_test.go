package projector

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/pgtest"
)

// ponHourly renders pon_history_hourly as "pon field hour min/max/onus".
func (r *rig) ponHourly() string {
	r.t.Helper()
	return r.ponRows(`SELECT pon_index, field, hour, min_value, max_value, onus FROM pon_history_hourly ORDER BY 1, 2, 3`)
}

// ponOfONUHourly renders onu_history_hourly aggregated by PON as
// ponHourly renders pon_history_hourly: what it must hold.
func (r *rig) ponOfONUHourly() string {
	r.t.Helper()
	return r.ponRows(`SELECT pon_index, field, hour, min(min_value), max(max_value), count(*) FROM onu_history_hourly GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`)
}

func (r *rig) ponRows(sql string) string {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), sql)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	f := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	var out []string
	for rows.Next() {
		var (
			pon, onus int64
			field     string
			hour      time.Time
			mn, mx    *float64
		)
		if err := rows.Scan(&pon, &field, &hour, &mn, &mx, &onus); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s %s %s/%s/%d", pon, field, hour.UTC().Format("01-02T15"), f(mn), f(mx), onus))
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return strings.Join(out, "\n")
}

// The PON rollup is the ONU rollup aggregated by PON, field and hour,
// however the changes are split into transactions, and a replay of
// changes already rolled up changes neither: the ONUs of an hour are
// counted once each.
func TestPONHourlyRollup(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	h0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	num := func(s string) optText { return optText{s, s != ""} }
	type change struct {
		pon, onu int64
		field    string
		old, new string
		at       time.Duration
	}
	changes := []change{
		{1, 1, "rx_power_dbm", "", "-20", 5 * time.Minute},
		{1, 2, "rx_power_dbm", "", "-22.5", 6 * time.Minute},
		{1, 1, "rx_power_dbm", "-20", "-24", 10 * time.Minute},
		{2, 1, "rx_power_dbm", "", "-18", 11 * time.Minute},
		{1, 1, "tx_power_dbm", "", "2.5", 12 * time.Minute},
		{1, 2, "rx_power_dbm", "-22.5", "-21", 20 * time.Minute},
		{1, 1, "rx_power_dbm", "-24", "", 65 * time.Minute}, // next hour: offline
		{1, 2, "rx_power_dbm", "-21", "-19", 70 * time.Minute},
		{1, 1, "rx_power_dbm", "", "-23", 3 * time.Hour},
		{1, 3, "rx_power_dbm", "", "-25", 3*time.Hour + time.Minute},
	}
	// upsert rolls changes[from:to] up in a transaction.
	upsert := func(from, to int) {
		t.Helper()
		var h hourlyRows
		for i := from; i < to; i++ {
			c := changes[i]
			h.push("olt-p", ONUKey{PonIndex: c.pon, ONUID: c.onu}, c.field, num(c.old), num(c.new), h0.Add(c.at), uint64(100+i))
		}
		if err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error { return h.upsert(ctx, tx) }); err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Join([]string{
		"1 rx_power_dbm 11-20T10 -24/-20/2",
		"1 rx_power_dbm 11-20T11 -24/-19/2",
		"1 rx_power_dbm 11-20T13 -25/-23/2",
		"1 tx_power_dbm 11-20T10 2.5/2.5/1",
		"2 rx_power_dbm 11-20T10 -18/-18/1",
	}, "\n")
	for _, tc := range []struct {
		name  string
		split []int // the transactions' first changes
	}{
		{"one transaction", []int{0}},
		{"a transaction per change", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"an hour over two transactions", []int{0, 2, 7, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, table := range []string{"onu_history_hourly", "pon_history_hourly"} {
				if _, err := r.pool.Exec(ctx, `DELETE FROM `+table); err != nil {
					t.Fatal(err)
				}
			}
			for i, from := range tc.split {
				to := len(changes)
				if i+1 < len(tc.split) {
					to = tc.split[i+1]
				}
				upsert(from, to)
			}
			if got := r.ponHourly(); got != want {
				t.Fatalf("PON rollup\n%s\nwant\n%s", got, want)
			}
			// A replay: all of it again, then a part.
			upsert(0, len(changes))
			upsert(2, 6)
			if got := r.ponHourly(); got != want {
				t.Fatalf("PON rollup after a replay\n%s\nwant\n%s", got, want)
			}
			if got, agg := r.ponHourly(), r.ponOfONUHourly(); got != agg {
				t.Fatalf("PON rollup\n%s\nis not the ONU rollup by PON\n%s", got, agg)
			}
		})
	}
}

// BenchmarkHourlyUpsert measures the projector's rollup statement per
// transaction of 1,024 ONUs' Rx changes (8 PONs of 128), a transaction
// per 5-minute poll (so one in 12 inserts the hour's rows, the others
// merge into them), over a year of day partitions: the ONU rollup alone
// with the key it had before migration 022 beside the ONU and PON
// rollups (the key carrying the values), in the same run, each on a
// database of its own:
//
//	go test -run '^$' -bench HourlyUpsert -benchtime 300x -count 3 ./services/projector
func BenchmarkHourlyUpsert(b *testing.B) {
	const onusPerPON, pons = 128, 8
	onuOnly := `WITH c AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::float8[], $6::float8[], $7::timestamptz[], $8::bigint[])
		AS u(olt, pon, onu, field, o, n, at, seq))
	INSERT INTO onu_history_hourly AS t (olt_id, pon_index, onu_id, field, hour, min_value, max_value, last_value, last_at, last_seq) ` +
		hourlyAggregate + hourlyMerge
	for _, bc := range []struct{ name, sql, setup string }{
		// As before migration 022: the key without the values.
		{"onu rollup only", onuOnly, `ALTER TABLE onu_history_hourly DROP CONSTRAINT onu_history_hourly_pkey,
			ADD PRIMARY KEY (olt_id, pon_index, onu_id, field, hour)`},
		{"onu and pon rollups", "", ""}, // hourlyRows.upsert
	} {
		b.Run(bc.name, func(b *testing.B) {
			pool := pgtest.New(b)
			ctx := context.Background()
			if bc.setup != "" {
				if _, err := pool.Exec(ctx, bc.setup); err != nil {
					b.Fatal(err)
				}
			}
			day := time.Now().UTC().Truncate(24 * time.Hour)
			// A year of day partitions, as a year's retention keeps.
			for d := 1; d <= 365; d++ {
				from := day.Add(-time.Duration(d) * 24 * time.Hour)
				for _, t := range []string{"onu_history_hourly", "pon_history_hourly"} {
					if _, err := pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')`,
						partitionName(t, from), t, from.Format(time.RFC3339), from.Add(24*time.Hour).Format(time.RFC3339))); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ResetTimer()
			for i := range b.N {
				var h hourlyRows
				at := day.Add(time.Duration(i) * 5 * time.Minute)
				for n := range pons * onusPerPON {
					k := ONUKey{PonIndex: pon0 + int64(n/onusPerPON)*256, ONUID: int64(n % onusPerPON)}
					old, cur := fmt.Sprint(-20-float64((i+n)%7)/10), fmt.Sprint(-20-float64((i+n+1)%7)/10)
					h.push("olt-bench", k, "rx_power_dbm", optText{old, true}, optText{cur, true}, at, uint64(i+1))
				}
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					if bc.sql == "" {
						return h.upsert(ctx, tx)
					}
					_, err := tx.Exec(ctx, bc.sql, h.olt, h.pon, h.onu, h.field, h.old, h.new, h.at, h.seq)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*pons*onusPerPON)/b.Elapsed().Seconds(), "changes/s")
		})
	}
}
