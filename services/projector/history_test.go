package projector

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

type histRow struct {
	Field    string
	Old, New string // "-" for NULL
	Exec     string
}

func (r *rig) history(olt string, onu int64) []histRow {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), `SELECT field, COALESCE(old_value, '-'), COALESCE(new_value, '-'), execution_id
		FROM onu_history WHERE olt_id = $1 AND onu_id = $2 ORDER BY stream_seq, field`, olt, onu)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	var out []histRow
	for rows.Next() {
		var h histRow
		if err := rows.Scan(&h.Field, &h.Old, &h.New, &h.Exec); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

// lifeBatch is one complete walk of ONU 7's OLT (serial, description,
// status and, when it has an optical row, Rx power), as one row.
func lifeBatch(exec string, n int, at time.Time, o huaweiONU, optical bool) streams.VarbindBatch {
	b := batch("olt-h", exec, n, at, o)
	b.Last = true
	if !optical {
		b.Varbinds = b.Varbinds[:3]
	}
	// As the poller publishes it since issue 10: one row per ONU.
	var row streams.VarbindRow
	for _, v := range b.Varbinds {
		for i, c := range b.Columns {
			if strings.HasPrefix(v.OID, c.OID+".") {
				row.Index = strings.TrimPrefix(v.OID, c.OID+".")
				row.Values = append(row.Values, streams.RowValue{Column: i, Type: v.Type, Value: v.Value})
			}
		}
	}
	b.Varbinds, b.Rows = nil, []streams.VarbindRow{row}
	return b
}

// An ONU's life (online, a power drop, offline without an optical row,
// back online, a poll that changes nothing) yields exactly its history
// rows and one event per real change, whose fields match the rows.
func TestONULifeYieldsItsHistory(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	o := huaweiONU{id: 7, serial: 0xABCD, desc: "casa 7", online: true, rx: -2000}
	var last uint64
	step := func(exec string, at time.Duration, optical bool) {
		last = r.publish(streams.SubjectVarbinds("olt-h"), lifeBatch(exec, 1, t0.Add(at), o, optical))
	}
	step("e1", 0, true) // discovered
	o.rx = -2750
	step("e2", 5*time.Minute, true) // power drop
	o.online = false
	step("e3", 10*time.Minute, false) // offline: no optical row
	o.online, o.rx = true, -2010
	step("e4", 15*time.Minute, true) // back
	step("e5", 20*time.Minute, true) // nothing changed
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, last)

	want := []histRow{
		{"description", "-", "casa 7", "e1"},
		{"onu_index", "-", "4194304000.7", "e1"},
		{"port_name", "-", "4194304000:7", "e1"},
		{"rx_power_dbm", "-", "-20", "e1"},
		{"serial", "-", "HWTC0000ABCD", "e1"},
		{"status", "-", "ONLINE", "e1"},
		{"rx_power_dbm", "-20", "-27.5", "e2"},
		{"rx_power_dbm", "-27.5", "-", "e3"},
		{"status", "ONLINE", "OFFLINE", "e3"},
		{"rx_power_dbm", "-", "-20.1", "e4"},
		{"status", "OFFLINE", "ONLINE", "e4"},
	}
	got := r.history("olt-h", 7)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("history\n got %v\nwant %v", got, want)
	}
	r.eventually("4 onu events", func() bool { return r.streamMsgs(streams.StreamONU) == 4 })
	var kinds []string
	for _, e := range r.onuEvents() {
		kinds = append(kinds, e.Change+"/"+e.ExecutionID)
	}
	wantKinds := []string{streams.ONUDiscovered + "/e1", streams.ONUUpdated + "/e2", streams.ONUStatusChanged + "/e3", streams.ONUStatusChanged + "/e4"}
	if fmt.Sprint(kinds) != fmt.Sprint(wantKinds) {
		t.Fatalf("events %v, want %v", kinds, wantKinds)
	}
	// A write per real change only: the row was last written by e4, the
	// unchanged poll e5 wrote nothing to it but is the OLT's last walk,
	// which the ONU's last_seen comes from.
	var exec, walk string
	var seen, walkAt time.Time
	if err := r.pool.QueryRow(context.Background(), `SELECT d.last_execution_id, d.last_seen, w.execution_id, w.seen_at
		FROM onu_data d JOIN onu_walks w USING (olt_id) WHERE d.olt_id = 'olt-h' AND d.onu_id = 7`).Scan(&exec, &seen, &walk, &walkAt); err != nil ||
		exec != "e4" || !seen.Equal(t0.Add(15*time.Minute)) || walk != "e5" || !walkAt.Equal(t0.Add(20*time.Minute)) {
		t.Fatalf("row written by %q at %s, last walk %q at %s (%v); want e4 at +15m, e5 at +20m", exec, seen, walk, walkAt, err)
	}
}

// A projector killed between a group's commit and its publish publishes
// the group's events at its next start, each change once.
func TestKilledBetweenCommitAndPublishPublishesOnce(t *testing.T) {
	r := newRig(t)
	var once sync.Once
	killed := make(chan struct{})
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	var onus []huaweiONU
	for i := range 50 {
		onus = append(onus, huaweiONU{id: int64(i), serial: uint32(i + 1), desc: fmt.Sprintf("c%d", i), online: true, rx: -2000 - int64(i)})
	}
	seq := r.publish(streams.SubjectVarbinds("olt-k"), batch("olt-k", "e1", 1, t0, onus...))
	stop := r.startWith(Config{Workers: 1, afterCommit: func() { once.Do(func() { close(killed) }) }})
	<-killed
	stop() // the group is committed; its events may or may not be out
	var pending int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM pending_events WHERE events IS NOT NULL`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 1 {
		t.Fatalf("%d pending rows after the kill, want 1", pending)
	}
	r.start()
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	r.eventually("pending events cleared", func() bool {
		var n int
		_ = r.pool.QueryRow(context.Background(), `SELECT count(*) FROM pending_events WHERE events IS NOT NULL`).Scan(&n)
		return n == 0
	})
	time.Sleep(300 * time.Millisecond)
	evs := r.onuEvents()
	ids := map[int64]int{}
	for _, e := range evs {
		ids[e.ONUID]++
	}
	if len(evs) != 50 || len(ids) != 50 {
		var keys []int64
		for k := range ids {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		t.Fatalf("%d events for %d onus, want 50 once each (%v)", len(evs), len(ids), keys)
	}
	var rows int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(DISTINCT onu_id) FROM onu_history WHERE olt_id = 'olt-k'`).Scan(&rows); err != nil || rows != 50 {
		t.Fatalf("history of %d onus, %v", rows, err)
	}
}
