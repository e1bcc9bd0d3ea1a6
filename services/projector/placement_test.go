package projector

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

func serialVB(pon, onu string, serial string) streams.Varbind {
	return streams.Varbind{OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3." + pon + "." + onu, Type: streams.VTOctetString, Value: hex.EncodeToString([]byte(serial))}
}

// An ONU missing from a complete walk of the ONU table is marked removed
// (with when) and an onu.removed event is published; seen again, it is
// present again. A walk of another table removes nothing.
func TestONURemovedAfterACompleteWalk(t *testing.T) {
	r := newRig(t)
	r.start()
	ctx := context.Background()
	cols := huaweiColumns[:1]
	walk := func(exec string, rev uint64, last bool, cols []streams.OIDSpec, vbs ...streams.Varbind) {
		seq := r.publish(streams.SubjectVarbinds("olt-r"), streams.VarbindBatch{ExecutionID: exec, JobID: "disc", OLTID: "olt-r", IndexScheme: SchemePonONU,
			LeaseRevision: rev, Batch: 1, Columns: cols, CollectedAt: time.Now().UTC(), Varbinds: vbs, Last: last})
		r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	}
	removedAt := func(onu int64) *time.Time {
		var at *time.Time
		if err := r.pool.QueryRow(ctx, `SELECT removed_at FROM onu_data WHERE olt_id = 'olt-r' AND pon_index = 4194312192 AND onu_id = $1`, onu).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	walk("e1", 1, true, cols, serialVB("4194312192", "1", "HWTC00000001"), serialVB("4194312192", "2", "HWTC00000002"))
	if removedAt(1) != nil || removedAt(2) != nil {
		t.Fatal("onus removed after the walk that found them")
	}
	// A batch that is not the last one, and a walk of the Rx table, remove nothing.
	walk("e2", 2, false, cols, serialVB("4194312192", "1", "HWTC00000001"))
	walk("e3", 3, true, huaweiColumns[3:], streams.Varbind{OID: "1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4.4194312192.1", Type: streams.VTInteger, Value: "-1850"})
	if removedAt(2) != nil {
		t.Fatal("onu 2 removed by an incomplete walk or a walk of another table")
	}
	walk("e4", 4, true, cols, serialVB("4194312192", "1", "HWTC00000001"))
	if removedAt(1) != nil || removedAt(2) == nil {
		t.Fatalf("after a complete walk without onu 2: removed_at %v, %v", removedAt(1), removedAt(2))
	}
	var removed []streams.ONUChanged
	r.eventually("onu.removed published", func() bool {
		removed = removed[:0]
		for _, ev := range r.onuEvents() {
			if ev.Change == streams.ONURemoved {
				removed = append(removed, ev)
			}
		}
		return len(removed) > 0
	})
	if len(removed) != 1 || removed[0].ONUID != 2 || removed[0].Current.Serial != "HWTC00000002" || removed[0].ExecutionID != "e4" {
		t.Errorf("removed events %+v", removed)
	}
	walk("e5", 5, true, cols, serialVB("4194312192", "1", "HWTC00000001"), serialVB("4194312192", "2", "HWTC00000002"))
	if removedAt(2) != nil {
		t.Error("onu 2 seen again is still removed")
	}
	r.eventually("onu 2 discovered again", func() bool {
		n := 0
		for _, ev := range r.onuEvents() {
			if ev.Change == streams.ONUDiscovered && ev.ONUID == 2 {
				n++
			}
		}
		return n == 2
	})
}

// Varbinds the projector cannot place are counted per execution and, when a
// complete walk places none or few of them, logged as a WARNING.
func TestUnplacedVarbindsCountedAndWarned(t *testing.T) {
	r := newRig(t)
	r.start()
	ctx := context.Background()
	bad := []streams.Varbind{
		{OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3.4194312192", Type: streams.VTOctetString, Value: "41"},    // bad index
		{OID: "1.3.6.1.4.1.2011.6.128.1.1.2.46.1.15.4194312192.1", Type: streams.VTOctetString, Value: "41"}, // enum of text: wrong type
		{OID: "1.3.6.1.4.1.9.9.9.1.1", Type: streams.VTInteger, Value: "1"},                                  // unknown column
	}
	for i, last := range []bool{false, true} {
		seq := r.publish(streams.SubjectVarbinds("olt-u"), streams.VarbindBatch{ExecutionID: "eu", JobID: "disc", OLTID: "olt-u", IndexScheme: SchemePonONU,
			LeaseRevision: 1, Batch: i + 1, Columns: huaweiColumns, CollectedAt: time.Now().UTC(), Varbinds: bad, Last: last})
		r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	}
	var placed, unplaced int
	var reasons map[string]int
	if err := r.pool.QueryRow(ctx, `SELECT placed_varbinds, unplaced_varbinds, unplaced_reasons FROM execution_placement WHERE execution_id = 'eu'`).Scan(&placed, &unplaced, &reasons); err != nil {
		t.Fatal(err)
	}
	if placed != 0 || unplaced != 6 || reasons[SkipBadIndex] != 2 || reasons[SkipWrongType] != 2 || reasons[SkipUnknownColumn] != 2 {
		t.Errorf("placement placed %d unplaced %d %v", placed, unplaced, reasons)
	}
	var audit streams.AuditEvent
	r.eventually("VARBINDS_UNPLACED audit event", func() bool {
		s, err := r.js.Stream(ctx, streams.StreamAudit)
		if err != nil {
			return false
		}
		msg, err := s.GetLastMsgForSubject(ctx, streams.SubjectAudit(AuditCategory))
		if err != nil {
			return false
		}
		_, audit, err = streams.Decode[streams.AuditEvent](msg.Data)
		return err == nil
	})
	if audit.Kind != AuditVarbindsUnplaced || audit.Level != streams.LevelWarning || audit.OLTID != "olt-u" || audit.Details["unplaced_varbinds"] != float64(6) {
		t.Errorf("audit %+v", audit)
	}
	if got := r.streamMsgs(streams.StreamAudit); got != 1 {
		t.Errorf("%d audit events, want 1 (only the complete walk's last batch warns)", got)
	}
}
