package projector

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

const hwBase = "1.3.6.1.4.1.2011.6.128.1.1.2."

const pon0 = int64(4194304000)

// huaweiONU is what the simulated OLT says of one ONU.
type huaweiONU struct {
	id     int64
	serial uint32
	desc   string
	online bool
	rx     int64 // 0.01 dBm; 2147483647 = no reading
}

func (o huaweiONU) varbinds(pon int64) []streams.Varbind {
	idx := fmt.Sprintf(".%d.%d", pon, o.id)
	status := int64(2)
	if o.online {
		status = 1
	}
	s := o.serial
	return []streams.Varbind{
		vb(hwBase+"43.1.3"+idx, octets([]byte{'H', 'W', 'T', 'C', byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)})),
		vb(hwBase+"43.1.9"+idx, octets([]byte(o.desc))),
		vb(hwBase+"46.1.15"+idx, integerVB(status)),
		vb(hwBase+"51.1.4"+idx, integerVB(o.rx)),
	}
}

func (o huaweiONU) row(pon int64) onuRow {
	r := onuRow{PonIndex: pon, ONUID: o.id, Serial: fmt.Sprintf("HWTC%08X", o.serial), Description: o.desc, Status: "OFFLINE"}
	if o.online {
		r.Status = "ONLINE"
	}
	if o.rx != 2147483647 {
		v := float64(o.rx) / 100
		r.RxPowerDBm = &v
	}
	return r
}

func batch(olt, exec string, n int, collected time.Time, onus ...huaweiONU) streams.VarbindBatch {
	b := streams.VarbindBatch{ExecutionID: exec, JobID: "job-1", OLTID: olt, BrandID: "huawei", IndexScheme: SchemePonONU,
		LeaseRevision: 1, Batch: n, Columns: huaweiColumns, CollectedAt: collected}
	for _, o := range onus {
		b.Varbinds = append(b.Varbinds, o.varbinds(pon0)...)
	}
	return b
}

func sameRow(a, b onuRow) bool {
	if a.PonIndex != b.PonIndex || a.ONUID != b.ONUID || a.Serial != b.Serial || a.Description != b.Description || a.Status != b.Status {
		return false
	}
	if (a.RxPowerDBm == nil) != (b.RxPowerDBm == nil) {
		return false
	}
	return a.RxPowerDBm == nil || *a.RxPowerDBm-*b.RxPowerDBm < 1e-9 && *b.RxPowerDBm-*a.RxPowerDBm < 1e-9
}

func TestVarbindsEndToEnd(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	onus := []huaweiONU{
		{id: 0, serial: 0x1A2B3C4D, desc: "cliente 0", online: true, rx: -2150},
		{id: 1, serial: 0x00000002, desc: "cliente 1", online: false, rx: 2147483647},
	}
	seq := r.publish(streams.SubjectVarbinds("olt-a"), batch("olt-a", "e1", 1, t0, onus...))
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	got := r.onus("olt-a")
	if len(got) != 2 {
		t.Fatalf("onu_data has %d rows: %+v", len(got), got)
	}
	for _, o := range onus {
		if g := got[ONUKey{pon0, o.id}]; !sameRow(g, o.row(pon0)) {
			t.Errorf("onu %d = %+v, want %+v", o.id, g, o.row(pon0))
		}
	}
	r.eventually("2 discovered events", func() bool { return r.streamMsgs(streams.StreamONU) == 2 })

	// The second poll: ONU 1 comes online, ONU 0 changes only its power,
	// and a partial batch (status only) leaves the other fields alone.
	onus[1].online, onus[1].rx = true, -1990
	onus[0].rx = -2200
	seq = r.publish(streams.SubjectVarbinds("olt-a"), batch("olt-a", "e2", 1, t0.Add(5*time.Minute), onus...))
	partial := streams.VarbindBatch{ExecutionID: "e3", OLTID: "olt-a", IndexScheme: SchemePonONU, Columns: huaweiColumns[2:3],
		CollectedAt: t0.Add(10 * time.Minute), Varbinds: []streams.Varbind{vb(hwBase+"46.1.15.4194304000.0", integerVB(2))}}
	seq = r.publish(streams.SubjectVarbinds("olt-a"), partial)
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	got = r.onus("olt-a")
	want0 := onus[0].row(pon0)
	want0.Status = "OFFLINE"
	if !sameRow(got[ONUKey{pon0, 0}], want0) || !sameRow(got[ONUKey{pon0, 1}], onus[1].row(pon0)) {
		t.Fatalf("after updates: %+v", got)
	}
	var first, last time.Time
	if err := r.pool.QueryRow(context.Background(), `SELECT first_seen, last_seen FROM onu_data WHERE olt_id='olt-a' AND onu_id=0`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	if !first.Equal(t0) || !last.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("first_seen %s last_seen %s", first, last)
	}

	r.eventually("5 onu events", func() bool { return r.streamMsgs(streams.StreamONU) == 5 })
	evs := r.onuEvents()
	kinds := map[string]int{}
	for _, e := range evs {
		kinds[e.Change]++
	}
	if kinds[streams.ONUDiscovered] != 2 || kinds[streams.ONUStatusChanged] != 2 || kinds[streams.ONUUpdated] != 1 {
		t.Fatalf("event kinds %v", kinds)
	}
	for _, e := range evs {
		if e.Change == streams.ONUStatusChanged && e.ONUID == 1 {
			if e.Previous == nil || e.Previous.Status != "OFFLINE" || e.Current.Status != "ONLINE" || e.ExecutionID != "e2" {
				t.Errorf("status event %+v", e)
			}
		}
	}
	var pending int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM onu_event_outbox`).Scan(&pending); err != nil || pending != 0 {
		t.Errorf("outbox holds %d events (%v)", pending, err)
	}
}

// The same batch twice (two stream messages) and a replay of the whole
// stream from sequence 1 change nothing.
func TestDuplicatesAndReplayChangeNothing(t *testing.T) {
	r := newRig(t)
	stop := r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	b := batch("olt-a", "e1", 1, t0, huaweiONU{id: 3, serial: 3, desc: "c3", online: true, rx: -2000})
	r.publish(streams.SubjectVarbinds("olt-a"), b)
	seq := r.publish(streams.SubjectVarbinds("olt-a"), b) // a new message id: JetStream keeps both
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	r.waitAckFloor(streams.StreamVarbinds, streams.ConsumerProjectorVarbinds, seq)
	before := r.onus("olt-a")
	r.eventually("one discovered event", func() bool { return r.streamMsgs(streams.StreamONU) == 1 })

	// An already-applied sequence is skipped without calling fn.
	applied, err := projection.Apply(context.Background(), r.pool, streams.ConsumerProjectorVarbinds, 1, nil)
	if err != nil || applied {
		t.Fatalf("re-apply of seq 1 = %v, %v", applied, err)
	}

	// Replay: recreate the durable consumer, which delivers from seq 1.
	stop()
	if err := r.js.DeleteConsumer(context.Background(), streams.StreamVarbinds, streams.ConsumerProjectorVarbinds); err != nil {
		t.Fatal(err)
	}
	if err := streams.Provision(context.Background(), r.js, streams.Options{Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.waitAckFloor(streams.StreamVarbinds, streams.ConsumerProjectorVarbinds, seq)
	after := r.onus("olt-a")
	if len(after) != 1 || !sameRow(after[ONUKey{pon0, 3}], before[ONUKey{pon0, 3}]) {
		t.Fatalf("replay changed onu_data: %+v -> %+v", before, after)
	}
	if n := r.streamMsgs(streams.StreamONU); n != 1 {
		t.Fatalf("replay published onu events: %d in stream", n)
	}
	if c, _ := projection.Checkpoint(context.Background(), r.pool, streams.ConsumerProjectorVarbinds); c != seq {
		t.Fatalf("checkpoint %d, want %d", c, seq)
	}
}

// Stopping the projector mid-stream and starting it again loses and
// duplicates nothing; the checkpoint ends at the stream's last sequence.
func TestRestartMidStream(t *testing.T) {
	r := newRig(t)
	const batches, perBatch = 60, 20
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	want := map[ONUKey]onuRow{}
	for i := range batches {
		var onus []huaweiONU
		for j := range perBatch {
			// Batches overlap: each ONU is seen by two batches, the later
			// one wins.
			id := int64((i*perBatch/2 + j) % 500)
			o := huaweiONU{id: id, serial: uint32(id), desc: fmt.Sprintf("c%d-b%d", id, i), online: (i+j)%3 != 0, rx: -1500 - int64(i)}
			onus = append(onus, o)
			want[ONUKey{pon0, id}] = o.row(pon0)
		}
		r.publish(streams.SubjectVarbinds("olt-r"), batch("olt-r", fmt.Sprintf("e%d", i), i, t0.Add(time.Duration(i)*time.Minute), onus...))
	}
	last := r.lastSeq(streams.StreamVarbinds)

	stop := r.start()
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, 10)
	stop()
	mid, err := projection.Checkpoint(context.Background(), r.pool, streams.ConsumerProjectorVarbinds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped at checkpoint %d of %d", mid, last)

	r.start()
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, last)
	r.waitAckFloor(streams.StreamVarbinds, streams.ConsumerProjectorVarbinds, last)
	got := r.onus("olt-r")
	if len(got) != len(want) {
		t.Fatalf("onu_data has %d rows, want %d", len(got), len(want))
	}
	for k, w := range want {
		if !sameRow(got[k], w) {
			t.Fatalf("onu %+v = %+v, want %+v", k, got[k], w)
		}
	}
	c, err := projection.Checkpoint(context.Background(), r.pool, streams.ConsumerProjectorVarbinds)
	if err != nil || c != last {
		t.Fatalf("checkpoint %d (%v), want the stream's last sequence %d", c, err, last)
	}
}

// Undecodable batches go to facho.dlq.projector-varbinds with the reason
// and their stream sequence; the next good batch is applied.
func TestBadInputIsDeadLettered(t *testing.T) {
	r := newRig(t)
	r.start()
	garbage := r.publishRaw(streams.SubjectVarbinds("olt-b"), []byte("\x00\xffnot json"))
	invalid := r.publish(streams.SubjectVarbinds("olt-b"), streams.VarbindBatch{ExecutionID: "e1", OLTID: "olt-b", IndexScheme: SchemePonONU}) // no columns
	badScheme := r.publish(streams.SubjectVarbinds("olt-b"), streams.VarbindBatch{ExecutionID: "e1", OLTID: "olt-b", IndexScheme: "nokia", Columns: huaweiColumns, CollectedAt: time.Now()})
	good := r.publish(streams.SubjectVarbinds("olt-b"), batch("olt-b", "e2", 1, time.Now(), huaweiONU{id: 9, serial: 9, desc: "ok", online: true, rx: -1800}))
	trailing := r.publishRaw(streams.SubjectVarbinds("olt-b"), []byte(`{"id":"x","type":"varbind.batch","version":1,"data":{"olt_id":7}}`))
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, good)
	if got := r.onus("olt-b"); len(got) != 1 {
		t.Fatalf("onu_data: %+v", got)
	}
	r.eventually("4 dead letters", func() bool { return r.streamMsgs(streams.StreamDLQ) == 4 })
	// Dead-lettered messages move the checkpoint too: it says how far the
	// consumer got.
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, trailing)
	if c, _ := projection.Checkpoint(context.Background(), r.pool, streams.ConsumerProjectorVarbinds); c != r.lastSeq(streams.StreamVarbinds) {
		t.Fatalf("checkpoint %d, stream last seq %d", c, r.lastSeq(streams.StreamVarbinds))
	}
	dlq, err := r.js.Stream(context.Background(), streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	wantReason := map[uint64]string{garbage: "envelope", invalid: "no columns", badScheme: "index scheme", trailing: "varbind.batch data"}
	for seq := uint64(1); seq <= 4; seq++ {
		m, err := dlq.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != streams.SubjectDLQ(streams.ConsumerProjectorVarbinds) {
			t.Errorf("dead letter on %s", m.Subject)
		}
		_, dl, err := streams.Decode[streams.DeadLetter](m.Data)
		if err != nil {
			t.Fatal(err)
		}
		frag, ok := wantReason[dl.StreamSeq]
		if !ok || dl.Stream != streams.StreamVarbinds || !contains(dl.Reason, frag) {
			t.Errorf("dead letter seq %d reason %q (want %q)", dl.StreamSeq, dl.Reason, frag)
		}
	}
}

// A database error that a retry can fix (here: the table is briefly
// missing, which says the schema as a whole is unusable: an outage) holds
// the consumer back without losing, reordering or dead-lettering anything,
// however long it lasts.
func TestTransientDatabaseErrorIsRetried(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if _, err := r.pool.Exec(ctx, `ALTER TABLE onu_data RENAME TO onu_data_away`); err != nil {
		t.Fatal(err)
	}
	r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	r.publish(streams.SubjectVarbinds("olt-t"), batch("olt-t", "e1", 1, t0, huaweiONU{id: 1, serial: 1, desc: "first", online: true, rx: -2000}))
	last := r.publish(streams.SubjectVarbinds("olt-t"), batch("olt-t", "e2", 1, t0.Add(time.Minute), huaweiONU{id: 1, serial: 1, desc: "second", online: true, rx: -2100}))
	// Let it fail a few rounds: held (not NAKed), not counted toward the
	// delivery bound.
	r.eventually("tries held through the outage", func() bool {
		mfs, err := r.reg.Gather()
		if err != nil {
			return false
		}
		for _, mf := range mfs {
			if mf.GetName() == "facho_projector_varbind_outage_retries_total" {
				for _, m := range mf.GetMetric() {
					if m.GetCounter().GetValue() >= 3 {
						return true
					}
				}
			}
		}
		return false
	})
	if c, _ := projection.Checkpoint(ctx, r.pool, streams.ConsumerProjectorVarbinds); c != 0 {
		t.Fatalf("checkpoint moved to %d while the table was missing", c)
	}
	if _, err := r.pool.Exec(ctx, `ALTER TABLE onu_data_away RENAME TO onu_data`); err != nil {
		t.Fatal(err)
	}
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, last)
	got := r.onus("olt-t")
	if len(got) != 1 || got[ONUKey{pon0, 1}].Description != "second" {
		t.Fatalf("onu_data %+v, want the second batch's description", got)
	}
	if n := r.streamMsgs(streams.StreamDLQ); n != 0 {
		t.Fatalf("%d dead letters for a transient error", n)
	}
}
