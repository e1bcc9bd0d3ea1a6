package projector

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// walkBatch is batch n of one attempt (execution exec under lease rev),
// as a FiberHome or V-SOL walk reads it: the ONUs in noRx have no optical
// row, so the batch holds no Rx varbind for them.
func walkBatch(exec string, rev uint64, n int, last bool, collected time.Time, noRx []int64, onus ...huaweiONU) streams.VarbindBatch {
	b := batch("olt-x", exec, n, collected, onus...)
	b.LeaseRevision, b.Last = rev, last
	kept := b.Varbinds[:0]
	for _, v := range b.Varbinds {
		omit := false
		for _, id := range noRx {
			if v.OID == fmt.Sprintf("%s51.1.4.%d.%d", hwBase, pon0, id) {
				omit = true
			}
		}
		if !omit {
			kept = append(kept, v)
		}
	}
	b.Varbinds = kept
	return b
}

func rxOf(t *testing.T, got map[ONUKey]onuRow, id int64) *float64 {
	t.Helper()
	row, ok := got[ONUKey{pon0, id}]
	if !ok {
		t.Fatalf("onu %d missing", id)
	}
	return row.RxPowerDBm
}

func wantRx(t *testing.T, got map[ONUKey]onuRow, id int64, want float64) {
	t.Helper()
	if rx := rxOf(t, got, id); rx == nil || *rx != want {
		t.Errorf("onu %d rx %v, want %v", id, rx, want)
	}
}

// The Last batch of a walk clears the Rx power of every ONU whose optical
// row the walk did not read, and says so in an "updated" event; a non-Last
// batch never clears; a second copy of the Last batch changes nothing.
func TestLastBatchClearsTheRxOfONUsWithoutAnOpticalRow(t *testing.T) {
	r := newRig(t)
	stop := r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	onus := []huaweiONU{
		{id: 0, serial: 10, desc: "c0", online: true, rx: -2000},
		{id: 1, serial: 11, desc: "c1", online: true, rx: -2100},
		{id: 2, serial: 12, desc: "c2", online: true, rx: -2200},
		{id: 3, serial: 13, desc: "c3", online: true, rx: -2300},
	}
	subject := streams.SubjectVarbinds("olt-x")
	r.publish(subject, walkBatch("e1", 1, 1, false, t0, nil, onus[0], onus[1]))
	seq := r.publish(subject, walkBatch("e1", 1, 2, true, t0, nil, onus[2], onus[3]))
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	got := r.onus("olt-x")
	for _, o := range onus {
		wantRx(t, got, o.id, float64(o.rx)/100)
	}

	// The second walk: ONU 1 went offline (its optical row is gone, in the
	// first batch); ONU 3 too (in the last batch); 0 and 2 read new values.
	t1 := t0.Add(5 * time.Minute)
	onus[0].rx, onus[2].rx = -1900, -2250
	onus[1].online, onus[3].online = false, false
	seq = r.publish(subject, walkBatch("e2", 2, 1, false, t1, []int64{1}, onus[0], onus[1]))
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	got = r.onus("olt-x")
	if got[ONUKey{pon0, 1}].Status != "OFFLINE" {
		t.Fatalf("onu 1 %+v, want OFFLINE", got[ONUKey{pon0, 1}])
	}
	wantRx(t, got, 1, -21) // a batch that is not the last clears nothing
	wantRx(t, got, 3, -23)

	lastBatch := walkBatch("e2", 2, 2, true, t1, []int64{3}, onus[2], onus[3])
	seq = r.publish(subject, lastBatch)
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	got = r.onus("olt-x")
	wantRx(t, got, 0, -19)
	wantRx(t, got, 2, -22.5)
	for _, id := range []int64{1, 3} {
		if row := got[ONUKey{pon0, id}]; row.RxPowerDBm != nil || row.Status != "OFFLINE" {
			t.Errorf("onu %d %+v, want OFFLINE without rx", id, row)
		}
	}

	// 4 discovered; e2: 0 updated, 1 status, then 2 updated, 3 status
	// (one event, rx cleared in it), 1 updated (rx cleared).
	const wantEvents = 9
	r.eventually("9 onu events", func() bool { return r.streamMsgs(streams.StreamONU) == wantEvents })
	var cleared1, status3 bool
	for _, e := range r.onuEvents() {
		if e.ExecutionID != "e2" {
			continue
		}
		switch {
		case e.ONUID == 1 && e.Change == streams.ONUUpdated:
			cleared1 = e.Previous != nil && e.Previous.RxPowerDBm != nil && *e.Previous.RxPowerDBm == -21 &&
				e.Previous.Status == "OFFLINE" && e.Current.RxPowerDBm == nil && e.Current.Status == "OFFLINE"
		case e.ONUID == 3:
			if e.Change != streams.ONUStatusChanged || status3 {
				t.Errorf("onu 3: unexpected event %+v", e)
			}
			status3 = e.Previous != nil && e.Previous.RxPowerDBm != nil && e.Current.RxPowerDBm == nil && e.Current.Status == "OFFLINE"
		}
	}
	if !cleared1 || !status3 {
		t.Errorf("events of the cleared onus: onu 1 updated %v, onu 3 status_changed %v", cleared1, status3)
	}

	// The same Last batch again as a new message (a poller re-publishing
	// after a lost ack, past the duplicate window): the checkpoint does not
	// skip it, the SQL must change nothing.
	before := r.onus("olt-x")
	r.publish(subject, lastBatch)
	// A Last batch that did not read the Rx column clears nothing.
	statusOnly := streams.VarbindBatch{ExecutionID: "e3", OLTID: "olt-x", IndexScheme: SchemePonONU, LeaseRevision: 3, Batch: 1, Last: true,
		Columns: huaweiColumns[2:3], CollectedAt: t1.Add(time.Minute), Varbinds: []streams.Varbind{vb(fmt.Sprintf("%s46.1.15.%d.0", hwBase, pon0), integerVB(1))}}
	seq = r.publish(subject, statusOnly)
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	r.waitAckFloor(streams.StreamVarbinds, streams.ConsumerProjectorVarbinds, seq)
	after := r.onus("olt-x")
	for k, b := range before {
		if !sameRow(after[k], b) {
			t.Errorf("onu %+v changed: %+v -> %+v", k, b, after[k])
		}
	}

	// A replay of the whole stream (the consumer recreated) changes
	// nothing either.
	stop()
	if err := r.js.DeleteConsumer(context.Background(), streams.StreamVarbinds, streams.ConsumerProjectorVarbinds); err != nil {
		t.Fatal(err)
	}
	if err := streams.Provision(context.Background(), r.js, streams.Options{Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.waitAckFloor(streams.StreamVarbinds, streams.ConsumerProjectorVarbinds, seq)
	after = r.onus("olt-x")
	for k, b := range before {
		if !sameRow(after[k], b) {
			t.Errorf("replay changed onu %+v: %+v -> %+v", k, b, after[k])
		}
	}
	// Give the outbox a chance to publish anything it wrongly queued.
	var pending int
	r.eventually("empty outbox", func() bool {
		return r.pool.QueryRow(context.Background(), `SELECT count(*) FROM onu_event_outbox`).Scan(&pending) == nil && pending == 0
	})
	if n := r.streamMsgs(streams.StreamONU); n != wantEvents {
		t.Fatalf("%d onu events after the copies and the replay, want %d", n, wantEvents)
	}
}

// Each attempt is its own reader: an Rx value read only by a failed first
// attempt of an execution is cleared by the Last batch of its retry.
func TestRetryDoesNotInheritTheRxReadsOfTheFailedAttempt(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	subject := streams.SubjectVarbinds("olt-x")
	a := huaweiONU{id: 0, serial: 1, desc: "a", online: true, rx: -2000}
	b := huaweiONU{id: 1, serial: 2, desc: "b", online: true, rx: -2100}
	// Attempt 1 (lease 7) reads both, then fails: no Last batch.
	r.publish(subject, walkBatch("e1", 7, 1, false, t0, nil, a, b))
	// Attempt 2 (lease 8): ONU a has gone offline meanwhile.
	a.online = false
	seq := r.publish(subject, walkBatch("e1", 8, 1, true, t0.Add(time.Minute), []int64{0}, a, b))
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	got := r.onus("olt-x")
	if row := got[ONUKey{pon0, 0}]; row.RxPowerDBm != nil || row.Status != "OFFLINE" {
		t.Errorf("onu a %+v, want OFFLINE without rx", row)
	}
	wantRx(t, got, 1, -21)
	// What each attempt read is recorded per attempt: the retry's Rx read
	// of b, and nothing more of a's.
	var reads []string
	rows, err := r.pool.Query(context.Background(), `SELECT s.attempt || '/' || k.onu_id || '/' || k.rx_read
		FROM onu_walk_seen s, unnest(s.onu_id, s.rx_read) AS k(onu_id, rx_read) WHERE s.olt_id = 'olt-x' ORDER BY 1`)
	if err == nil {
		reads, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if want := []string{"e1:8/0/false", "e1:8/1/true"}; err != nil || fmt.Sprint(reads) != fmt.Sprint(want) {
		t.Errorf("onu_walk_seen %v (%v), want %v: the failed attempt's records gone, the retry's kept", reads, err, want)
	}
}

// An empty Last batch (the walk found no optical rows at all) clears every
// Rx power of the OLT, and only of that OLT.
func TestEmptyLastBatchClearsTheWholeOLT(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	o := huaweiONU{id: 5, serial: 5, desc: "c5", online: true, rx: -2000}
	r.publish(streams.SubjectVarbinds("olt-x"), walkBatch("e1", 1, 1, true, t0, nil, o))
	other := batch("olt-y", "e9", 1, t0, o)
	other.Last = true
	r.publish(streams.SubjectVarbinds("olt-y"), other)
	empty := streams.VarbindBatch{ExecutionID: "e2", OLTID: "olt-x", IndexScheme: SchemePonONU, LeaseRevision: 2, Batch: 1, Last: true,
		Columns: huaweiColumns[3:], CollectedAt: t0.Add(time.Minute)}
	if err := empty.Validate(); err != nil {
		t.Fatalf("empty last batch: %v", err)
	}
	seq := r.publish(streams.SubjectVarbinds("olt-x"), empty)
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	if rx := rxOf(t, r.onus("olt-x"), 5); rx != nil {
		t.Errorf("olt-x onu 5 rx %v after an empty walk", *rx)
	}
	wantRx(t, r.onus("olt-y"), 5, -20)
}
