package projector

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/projection/projectiontest"
	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/streams"
)

// healthReading is reading n of an OLT with pons PON ports: every port
// flaps (up on even readings, down on odd ones), fan 2 fails from reading
// 3, the last port is gone from reading 5 and back from reading 8, and
// every fourth reading covers the chassis alone. Readings come in pairs
// with the same observed_at: the history's trim meets ties.
func healthReading(olt string, n, pons int, t0 time.Time) streams.OLTHealth {
	cpu := float64(10 + n%7)
	h := streams.OLTHealth{OLTID: olt, ExecutionID: fmt.Sprintf("e-%s-%d", olt, n), JobID: "health",
		ObservedAt: t0.Add(time.Duration(n/2) * time.Minute),
		Chassis:    &streams.ChassisHealth{CPUPercent: &cpu, Boards: 2}}
	if n%4 == 3 {
		h.Tables = []string{streams.HealthChassis}
		return h
	}
	h.Tables = []string{streams.HealthChassis, streams.HealthFans, streams.HealthPONs, streams.HealthUplinks}
	fan := streams.UnitOK
	if n >= 3 {
		fan = streams.UnitFailed
	}
	h.Fans = []streams.UnitHealth{{Index: "1", Status: streams.UnitOK}, {Index: "2", Name: "fan 2", Status: fan}}
	oper := streams.PortUp
	if n%2 == 1 {
		oper = streams.PortDown
	}
	for i := range pons {
		if i == pons-1 && n >= 5 && n < 8 {
			continue
		}
		rx := -20.5 - float64(i)/10
		h.PONs = append(h.PONs, streams.PONHealth{PonIndex: int64(i), Index: fmt.Sprint(i), Name: fmt.Sprintf("0/1/%d", i),
			AdminState: streams.PortUp, OperState: oper, RxPowerDBm: &rx})
	}
	h.Uplinks = []streams.UplinkHealth{{Index: "100", Name: "xge0", AdminState: streams.PortUp, OperState: oper}}
	return h
}

// `facho rebuild olt_health` gives the rows the live consumer made: the
// last reading of each OLT, its PON ports, and the history of changes,
// trimmed to the newest 1000 of an OLT as the live projection trims it
// (ties in observed_at included); identical again after the rebuilt rows
// were swapped in and more readings went live on top of them, and the
// same rows back after the live tables were damaged. A reading that
// reports a row twice is dead-lettered, live and rebuilt alike.
func TestRebuildOLTHealthEqualsLive(t *testing.T) {
	r := newRig(t)
	r.start()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	var last uint64
	publish := func(olt string, from, to, pons int) {
		for n := from; n < to; n++ {
			last = r.publish(streams.SubjectOLTHealth(olt), healthReading(olt, n, pons, t0))
		}
	}
	publish("olt-big", 0, 90, 24) // 24 ports and an uplink flapping: more than 1000 changes
	publish("olt-a", 0, 10, 4)
	publish("olt-b", 0, 3, 2)
	dup := healthReading("olt-a", 10, 4, t0)
	dup.PONs = append(dup.PONs, dup.PONs[0])
	last = r.publish(streams.SubjectOLTHealth("olt-a"), dup)
	r.waitCheckpoint(streams.ConsumerProjectorHealth, last)
	if n := r.streamMsgs(streams.StreamDLQ); n != 1 {
		t.Fatalf("%d dead letters, want 1 (the reading with a row twice)", n)
	}
	if n := r.healthHistory("olt-big"); n != maxHealthHistory {
		t.Fatalf("olt-big: %d history rows, want the newest %d", n, maxHealthHistory)
	}

	model := r.readModel(ReadModelOLTHealth)
	projectiontest.RebuildEqualsLive(t, r.js, r.pool, model)

	// Live readings on top of the swapped-in rows (their ids are new):
	// the trim keeps what a rebuild keeps.
	publish("olt-big", 90, 100, 24)
	publish("olt-b", 3, 6, 2)
	r.waitCheckpoint(streams.ConsumerProjectorHealth, last)
	if rep := r.rebuild(ReadModelOLTHealth, true); !rep.Identical {
		t.Fatalf("after live readings on rebuilt rows: %s", rep)
	}

	projectiontest.Snapshot(t, r.pool, "health_before_damage", model.Tables)
	for _, q := range []string{
		`UPDATE olt_health SET cpu_percent = 99, fans_failed = 0 WHERE olt_id = 'olt-a'`,
		`DELETE FROM olt_pon_health WHERE olt_id = 'olt-b' AND idx = '0'`,
		`DELETE FROM olt_health_history WHERE olt_id = 'olt-big' AND component = 'uplink'`,
		`INSERT INTO olt_health_history (olt_id, component, idx, field, new_value, observed_at, stream_seq) VALUES ('olt-z', 'fan', '1', 'status', 'failed', now(), 1)`,
	} {
		if _, err := r.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := replay.Rebuild(ctx, r.js, r.pool, model, replay.RebuildOptions{Log: zerolog.Nop()})
	if err != nil || !rep.Swapped {
		t.Fatalf("rebuild of damaged rows: swapped %v, err %v: %s", rep.Swapped, err, rep)
	}
	for table, n := range projectiontest.Diff(t, r.pool, "health_before_damage", model.Tables) {
		if n != 0 {
			t.Errorf("%s: %d rows differ from before the damage", table, n)
		}
	}
}

func (r *rig) healthHistory(olt string) int {
	r.t.Helper()
	var n int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM olt_health_history WHERE olt_id = $1`, olt).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}
