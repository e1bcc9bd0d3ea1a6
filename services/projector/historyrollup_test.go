package projector

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// hourlyRow is an onu_history_hourly row as the tests compare it.
type hourlyRow struct {
	ONU            int64
	Field          string
	Hour           time.Time
	Min, Max, Last *float64
	LastSeq        int64
}

func (h hourlyRow) String() string {
	f := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("%d %s %s min %s max %s last %s@%d", h.ONU, h.Field, h.Hour.UTC().Format("01-02T15"), f(h.Min), f(h.Max), f(h.Last), h.LastSeq)
}

func (r *rig) hourly() string {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), `SELECT onu_id, field, hour, min_value, max_value, last_value, last_seq
		FROM onu_history_hourly ORDER BY onu_id, field, hour`)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var h hourlyRow
		if err := rows.Scan(&h.ONU, &h.Field, &h.Hour, &h.Min, &h.Max, &h.Last, &h.LastSeq); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, h.String())
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return strings.Join(out, "\n")
}

// The projector rolls each numeric field up by hour as it writes its
// changes: the range of the values held during the hour (the value before
// its first change included) and the value at its end (none: offline);
// text fields are not rolled up. RebuildHourly recomputes the same rows
// from onu_history alone, replacing whatever the table had.
func TestHourlyRollup(t *testing.T) {
	r := newRig(t)
	r.startWith(Config{})
	// 10:00 UTC yesterday: a recent day whatever the date, and the hours
	// the test writes (10:00 to 13:00) never cross midnight, so each
	// rebuild below covers exactly one day.
	h0 := time.Now().UTC().Truncate(24 * time.Hour).Add(-14 * time.Hour)
	o := huaweiONU{id: 1, serial: 0xBEEF, desc: "casa 1", online: true, rx: -2000}
	steps := []struct {
		at time.Time
		rx int64
		on bool
	}{
		{h0.Add(5 * time.Minute), -2000, true},           // discovered at -20
		{h0.Add(10 * time.Minute), -2350, true},          // -23.5
		{h0.Add(20 * time.Minute), -2100, true},          // -21
		{h0.Add(65 * time.Minute), -2500, true},          // next hour: from -21 to -25
		{h0.Add(70 * time.Minute), 0, false},             // offline: no reading
		{h0.Add(3 * time.Hour), -1950, true},             // back at -19.5, two hours later
		{h0.Add(3*time.Hour + time.Minute), -1950, true}, // no change
	}
	var last uint64
	for i, s := range steps {
		o.rx, o.online = s.rx, s.on
		if !s.on {
			o.rx = 2147483647
		}
		last = r.publish(streams.SubjectVarbinds("olt-h"), batch("olt-h", fmt.Sprintf("e%d", i), 1, s.at, o))
	}
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, last)
	hour := func(n int) string { return h0.Add(time.Duration(n) * time.Hour).Format("01-02T15") }
	want := strings.Join([]string{
		"1 rx_power_dbm " + hour(0) + " min -23.5 max -20 last -21@3",
		"1 rx_power_dbm " + hour(1) + " min -25 max -21 last -@5",
		"1 rx_power_dbm " + hour(3) + " min -19.5 max -19.5 last -19.5@6",
	}, "\n")
	got := r.hourly()
	if got != want {
		t.Fatalf("rollup\n%s\nwant\n%s", got, want)
	}

	// Recomputed from the raw rows, over a table that lost a row and has
	// a wrong one.
	if _, err := r.pool.Exec(context.Background(), `DELETE FROM onu_history_hourly WHERE hour = $1`, h0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.pool.Exec(context.Background(), `UPDATE onu_history_hourly SET min_value = -99 WHERE hour = $1`, h0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	rep, err := RebuildHourly(context.Background(), r.pool, h0, h0.Add(3*time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Days != 1 || rep.Inserted != 3 || rep.Deleted != 2 {
		t.Errorf("rebuild report %+v, want 1 day, 2 rows replaced, 3 written", rep)
	}
	if got := r.hourly(); got != want {
		t.Fatalf("rebuilt rollup\n%s\nwant\n%s", got, want)
	}
	// The PON rollup, live and recomputed over a wrong row.
	wantPON := strings.Join([]string{
		"4194304000 rx_power_dbm " + hour(0) + " -23.5/-20/1",
		"4194304000 rx_power_dbm " + hour(1) + " -25/-21/1",
		"4194304000 rx_power_dbm " + hour(3) + " -19.5/-19.5/1",
	}, "\n")
	if got := r.ponHourly(); got != wantPON {
		t.Errorf("PON rollup\n%s\nwant\n%s", got, wantPON)
	}
	if _, err := r.pool.Exec(context.Background(), `UPDATE pon_history_hourly SET onus = 7, min_value = -99`); err != nil {
		t.Fatal(err)
	}
	rep, err = RebuildHourly(context.Background(), r.pool, h0, h0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.ponHourly(); rep.PONRows != 3 || got != wantPON {
		t.Errorf("rebuilt PON rollup (%d rows)\n%s\nwant 3 rows\n%s", rep.PONRows, got, wantPON)
	}
}
