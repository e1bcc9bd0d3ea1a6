package projector

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/streams"
)

// applyHealth keeps the newest reading: an older or redelivered one changes
// nothing; a table the reading does not cover keeps what was stored; state
// changes land in the history once.
func TestApplyHealthIsIdempotent(t *testing.T) {
	pool := pgtest.New(t)
	ctx := context.Background()
	m, err := newHealthMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	temp := 41.0
	read := func(at time.Time, fan, pon string) streams.OLTHealth {
		return streams.OLTHealth{OLTID: "olt-1", ExecutionID: "e", JobID: "j", ObservedAt: at,
			Tables:  []string{streams.HealthChassis, streams.HealthFans, streams.HealthPONs},
			Chassis: &streams.ChassisHealth{TemperatureC: &temp, Boards: 1},
			Fans:    []streams.UnitHealth{{Index: "0.1", Status: fan}, {Index: "0.2", Status: streams.UnitOK}},
			PONs:    []streams.PONHealth{{PonIndex: 7, Index: "7", Name: "0/1/7", AdminState: streams.PortUp, OperState: pon}}}
	}
	apply := func(h streams.OLTHealth, seq int64) int {
		t.Helper()
		var n int
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			n, err = applyHealth(ctx, tx, h, seq, m)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	state := func() (seq int64, fansFailed int, oper string, history int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT h.stream_seq, h.fans_failed, p.oper_state, (SELECT count(*) FROM olt_health_history)
			FROM olt_health h JOIN olt_pon_health p USING (olt_id)`).Scan(&seq, &fansFailed, &oper, &history); err != nil {
			t.Fatal(err)
		}
		return
	}
	if n := apply(read(t0, streams.UnitOK, streams.PortUp), 10); n != 0 {
		t.Errorf("first reading, all well: %d history rows, want 0", n)
	}
	if n := apply(read(t0.Add(time.Minute), streams.UnitFailed, streams.PortDown), 12); n != 2 {
		t.Errorf("fan failed and pon down: %d history rows, want 2", n)
	}
	// Redelivered and older readings change nothing.
	if n := apply(read(t0.Add(time.Minute), streams.UnitFailed, streams.PortDown), 12); n != -1 {
		t.Errorf("redelivered: %d, want -1", n)
	}
	if n := apply(read(t0, streams.UnitOK, streams.PortUp), 11); n != -1 {
		t.Errorf("older: %d, want -1", n)
	}
	if seq, failed, oper, history := state(); seq != 12 || failed != 1 || oper != streams.PortDown || history != 2 {
		t.Errorf("stored seq %d fans_failed %d oper %s history %d, want 12 1 down 2", seq, failed, oper, history)
	}
	// A reading of the chassis alone keeps the fans and the PON ports.
	chassis := streams.OLTHealth{OLTID: "olt-1", ObservedAt: t0.Add(2 * time.Minute), Tables: []string{streams.HealthChassis},
		Chassis: &streams.ChassisHealth{TemperatureC: &temp, Boards: 1}}
	apply(chassis, 13)
	if seq, failed, oper, history := state(); seq != 13 || failed != 1 || oper != streams.PortDown || history != 2 {
		t.Errorf("after a chassis-only reading: seq %d fans_failed %d oper %s history %d, want 13 1 down 2", seq, failed, oper, history)
	}
	var tables []string
	if err := pool.QueryRow(ctx, `SELECT tables FROM olt_health`).Scan(&tables); err != nil || len(tables) != 3 {
		t.Errorf("tables %v (%v), want the three read so far", tables, err)
	}
}
