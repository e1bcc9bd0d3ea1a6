package projector

import (
	"context"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// TestTrapSetsONUStatus: a decoded dying-gasp trap for a known ONU sets its
// status at once (onu_data, onu_history with source trap, an onu.changed
// of source trap) and requests a confirmation poll (a manual run of the
// OLT's get job); a trap older than the ONU's last poll, one for an ONU no
// poll found, and one that does not name an ONU status change only
// record the trap.
func TestTrapSetsONUStatus(t *testing.T) {
	r := newRig(t)
	r.start()
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	r.publish(streams.SubjectBrand("hw"), streams.BrandUpserted{ID: "hw", Name: "Huawei", IndexScheme: streams.IndexSchemePonONU})
	r.publish(streams.SubjectOLT("olt-1"), streams.OLTUpserted{ID: "olt-1", Name: "OLT 1", IP: "192.0.2.1", Port: 161, BrandID: "hw", CommunityEnc: "v1:x", Enabled: true})
	r.publish(streams.SubjectJob("optical"), streams.JobUpserted{ID: "optical", Name: "optical", BrandID: "hw", Kind: streams.KindGet, OIDIDs: []string{"o"},
		IntervalSeconds: 300, TimeoutSeconds: 60, Priority: 40, Enabled: true})
	cfgSeq := r.publish(streams.SubjectAssignment("optical", "olt-1"), streams.JobOLTAssigned{JobID: "optical", OLTID: "olt-1", Enabled: true})
	r.waitCheckpoint(streams.ConsumerProjectorConfig, cfgSeq)
	// Two ONUs a poll read a minute ago.
	for _, onu := range []int64{1, 2} {
		if _, err := r.pool.Exec(ctx, `INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, status, first_seen, last_seen, last_execution_id)
			VALUES ('olt-1', 4194304000, $1, 'HWTC0001', 'ONLINE', $2, $2, 'e0')`, onu, t0.Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	pon := int64(4194304000)
	id := func(v int64) *int64 { return &v }
	trap := func(trapID, kind string, onu *int64, at time.Time) uint64 {
		t.Helper()
		raw, err := streams.EncodeWithID(trapID, "test", at, streams.TrapReceived{OLTID: "olt-1", Source: "192.0.2.1:40000", Version: streams.TrapV2c,
			TrapOID: "1.3.6.1.4.1.2011.6.128.1.1.2.0.22", Varbinds: []streams.TrapVarbind{{OID: "1.3.6.1.2.1.1.3.0", Type: "TimeTicks", Value: "5"}},
			Receiver: "trapd-1", ReceivedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		r.publishRaw(streams.SubjectTrap("olt-1"), raw)
		b, err := streams.EncodeWithID(trapID+":decoded", "test", at, streams.TrapDecoded{OLTID: "olt-1", TrapID: trapID, Profile: "huawei-ma5800",
			Rule: "r", Kind: kind, PonIndex: &pon, ONUID: onu, At: at})
		if err != nil {
			t.Fatal(err)
		}
		return r.publishRaw(streams.SubjectTrap("olt-1"), b)
	}
	status := func(onu int64) (st, cause string) {
		t.Helper()
		if err := r.pool.QueryRow(ctx, `SELECT status, last_down_cause FROM onu_data WHERE olt_id = 'olt-1' AND pon_index = $1 AND onu_id = $2`, pon, onu).
			Scan(&st, &cause); err != nil {
			t.Fatal(err)
		}
		return
	}

	seq := trap("t1", streams.TrapKindDyingGasp, id(1), t0)
	r.waitCheckpoint(streams.ConsumerProjectorTraps, seq)
	if st, cause := status(1); st != "DYING_GASP" || cause != "DYING_GASP" {
		t.Fatalf("status %s cause %s after a dying gasp trap", st, cause)
	}
	var hist int
	if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM onu_history WHERE olt_id = 'olt-1' AND onu_id = 1 AND field = 'status'
		AND old_value = 'ONLINE' AND new_value = 'DYING_GASP' AND source = 'trap' AND stream_seq = $1`, -int64(seq)).Scan(&hist); err != nil || hist != 1 {
		t.Fatalf("history rows of the trap: %d (%v)", hist, err)
	}
	r.eventually("the onu.changed of the trap", func() bool { return len(r.onuEvents()) == 1 })
	ev := r.onuEvents()[0]
	if ev.Change != streams.ONUStatusChanged || ev.Source != streams.ONUChangeSourceTrap || ev.TrapID != "t1" || ev.Current.Status != "DYING_GASP" ||
		ev.Previous == nil || ev.Previous.Status != "ONLINE" || ev.ONUID != 1 {
		t.Fatalf("onu.changed %+v", ev)
	}
	r.eventually("the confirmation run request", func() bool { return r.streamMsgs(streams.StreamSchedule) == 1 })
	s, _ := r.js.Stream(ctx, streams.StreamSchedule)
	m, err := s.GetLastMsgForSubject(ctx, streams.SubjectManualRun("olt-1"))
	if err != nil {
		t.Fatal(err)
	}
	_, req, err := streams.Decode[streams.NodeRunRequested](m.Data)
	if err != nil || req.JobID != "optical" || req.NodeID != "optical.olt-1" || req.ExecutionID == "" {
		t.Fatalf("run request %+v (%v)", req, err)
	}

	// Another ONU's trap in the same window: its status changes, the
	// confirmation is the same request (one per OLT and window).
	seq = trap("t2", streams.TrapKindLOS, id(2), t0.Add(time.Millisecond))
	r.waitCheckpoint(streams.ConsumerProjectorTraps, seq)
	if st, _ := status(2); st != "LOS" {
		t.Fatalf("status %s after a LOS trap", st)
	}
	r.eventually("the second onu.changed", func() bool { return len(r.onuEvents()) == 2 })
	if n := r.streamMsgs(streams.StreamSchedule); n != 1 {
		t.Fatalf("%d run requests in one window, want 1", n)
	}

	// A trap older than the ONU's last poll reading: recorded, not applied.
	if _, err := r.pool.Exec(ctx, `UPDATE onu_data SET status = 'ONLINE', last_seen = $1 WHERE olt_id = 'olt-1' AND onu_id = 1`, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	seq = trap("t3", streams.TrapKindOffline, id(1), t0.Add(30*time.Second))
	// An ONU no poll found, and a PON event.
	trap("t4", streams.TrapKindDyingGasp, id(99), t0.Add(time.Minute))
	seq = trap("t5", streams.TrapKindPONDown, nil, t0.Add(time.Minute))
	r.waitCheckpoint(streams.ConsumerProjectorTraps, seq)
	if st, _ := status(1); st != "ONLINE" {
		t.Fatalf("a trap older than the poll changed the status to %s", st)
	}
	var n int
	if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM onu_data WHERE olt_id = 'olt-1'`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d onus (%v): a trap created one", n, err)
	}
	rows, err := r.pool.Query(ctx, `SELECT trap_id, kind, applied, varbinds IS NOT NULL FROM traps WHERE olt_id = 'olt-1' ORDER BY stream_seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := map[string]bool{"t1": true, "t2": true, "t3": false, "t4": false, "t5": false}
	got := 0
	for rows.Next() {
		var tid, kind string
		var applied, raw bool
		if err := rows.Scan(&tid, &kind, &applied, &raw); err != nil {
			t.Fatal(err)
		}
		got++
		if applied != want[tid] || !raw || kind == "" {
			t.Errorf("trap %s: kind %q applied %v raw %v", tid, kind, applied, raw)
		}
	}
	if got != len(want) {
		t.Fatalf("%d trap rows, want %d", got, len(want))
	}
	if len(r.onuEvents()) != 2 {
		t.Fatalf("%d onu events, want 2", len(r.onuEvents()))
	}
}

// TestTrapsBounded: only the newest TrapsKeep traps of an OLT are kept.
func TestTrapsBounded(t *testing.T) {
	r := newRig(t)
	r.startWith(Config{TrapsKeep: 5})
	var seq uint64
	for i := range 40 {
		seq = r.publish(streams.SubjectTrap("olt-1"), streams.TrapReceived{OLTID: "olt-1", Source: "192.0.2.1:1", Version: streams.TrapV2c,
			TrapOID: "1.3.6.1.6.3.1.1.5.1", Receiver: "trapd-1", ReceivedAt: time.Now().Add(time.Duration(i) * time.Millisecond)})
	}
	r.waitCheckpoint(streams.ConsumerProjectorTraps, seq)
	var n int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM traps WHERE olt_id = 'olt-1'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < 5 || n > 5+trapsPruneEvery {
		t.Fatalf("%d traps kept, want 5..%d", n, 5+trapsPruneEvery)
	}
}
