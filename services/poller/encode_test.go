package poller

import (
	"bytes"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// The batch encoder writes exactly what streams.EncodeWithID writes.
func TestBatchEncoderMatchesEncodeWithID(t *testing.T) {
	node := streams.NodeDue{
		ExecutionID: "exec-1", JobID: "job-1", OLTID: "olt-a", BrandID: "huawei", IndexScheme: "pon.onu", OIDs: huaweiColumns,
	}
	odd := streams.NodeDue{
		ExecutionID: "exec-\"2\"", JobID: "jöb<&>", OLTID: "olt-b", BrandID: "", IndexScheme: "fiberhome",
		Index: &streams.IndexSpec{}, OIDs: append(huaweiColumns[:3:3], streams.OIDSpec{ID: "x<", OID: "1.3.6.1.2", Field: "f", IndexSuffix: "1"}),
	}
	at := time.Date(2026, 11, 23, 10, 0, 1, 123456000, time.UTC)
	types := []string{streams.VTInteger, streams.VTOctetString, streams.VTOID, streams.VTIPAddress, streams.VTCounter32, streams.VTGauge32,
		streams.VTTimeTicks, streams.VTCounter64, streams.VTNull, streams.VTNoSuchObject, streams.VTNoSuchInstance, streams.VTEndOfMibView,
		streams.VTOpaque, "BitString", "Weird\"Type\x01"}
	var row streams.VarbindRow
	row.Index = "4194304000.1"
	for i, ty := range types {
		row.Values = append(row.Values, streams.RowValue{Column: i % 4, Type: ty, Value: []string{"", "0a1b", "-12", "1.3.6", "a<b>&c", "ünï\u2028", "x\ny"}[i%7]})
	}
	for _, tc := range []struct {
		name string
		node streams.NodeDue
		b    streams.VarbindBatch
	}{
		{"empty last", node, streams.VarbindBatch{Last: true}},
		{"empty varbinds", node, streams.VarbindBatch{Varbinds: []streams.Varbind{}}},
		{"rows", node, streams.VarbindBatch{Rows: []streams.VarbindRow{row, {Index: "1.2"}, row}}},
		{"both", odd, streams.VarbindBatch{Varbinds: []streams.Varbind{{OID: "1.3.6.1.2.0", Type: streams.VTInteger, Value: "5"}, {OID: "1.<3>", Type: "T\"", Value: "\\"}},
			Rows: []streams.VarbindRow{row}, Last: true, JobKind: "discovery"}},
		{"job kind", node, streams.VarbindBatch{Rows: []streams.VarbindRow{row}, JobKind: "we\"ird<"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			b.ExecutionID, b.JobID, b.OLTID, b.BrandID, b.IndexScheme, b.Index = tc.node.ExecutionID, tc.node.JobID, tc.node.OLTID, tc.node.BrandID, tc.node.IndexScheme, tc.node.Index
			b.LeaseRevision, b.Batch, b.Columns, b.CollectedAt = 4242, 7, tc.node.OIDs, at
			want, err := streams.EncodeWithID("exec-1:1:7", "poller", at.Add(time.Second), b)
			if err != nil {
				t.Fatal(err)
			}
			enc, err := newBatchEncoder(tc.node)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ { // the buffer is reused
				got := enc.encode("exec-1:1:7", "poller", at.Add(time.Second), b)
				if !bytes.Equal(got, want) {
					t.Fatalf("encoder wrote\n%s\nEncodeWithID\n%s", got, want)
				}
			}
			if _, back, err := streams.Decode[streams.VarbindBatch](want); err != nil || back.VarbindCount() != b.VarbindCount() {
				t.Fatalf("decode: %v (%d varbinds)", err, back.VarbindCount())
			}
		})
	}
}

func BenchmarkBatchEncode(b *testing.B) {
	node := streams.NodeDue{ExecutionID: "exec-1", JobID: "job-1", OLTID: "olt-a", BrandID: "huawei", IndexScheme: "pon.onu", OIDs: huaweiColumns}
	batch := streams.VarbindBatch{ExecutionID: "exec-1", JobID: "job-1", OLTID: "olt-a", BrandID: "huawei", IndexScheme: "pon.onu",
		Columns: huaweiColumns, CollectedAt: time.Now().UTC(), LeaseRevision: 9, Batch: 3}
	for i := 0; i < 125; i++ { // 500 varbinds
		batch.Rows = append(batch.Rows, streams.VarbindRow{Index: "4194304000." + string(rune('0'+i%10)), Values: []streams.RowValue{
			{Column: 0, Type: streams.VTOctetString, Value: "48575443a1b2c3d4"}, {Column: 1, Type: streams.VTOctetString, Value: "6f6e752d31323334"},
			{Column: 2, Type: streams.VTInteger, Value: "1"}, {Column: 3, Type: streams.VTInteger, Value: "-2150"}}})
	}
	b.Run("encoding/json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := streams.EncodeWithID("exec-1:1:3", "poller", time.Now(), batch); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("batchEncoder", func(b *testing.B) {
		enc, _ := newBatchEncoder(node)
		for i := 0; i < b.N; i++ {
			enc.encode("exec-1:1:3", "poller", time.Now(), batch)
		}
	})
}
