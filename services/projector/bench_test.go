package projector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jsrouter"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/streams"
)

// BenchmarkApplyVarbindBatch measures decoding and projecting one batch of
// 1000 Huawei ONUs (4 columns each) into onu_data with its checkpoint and
// ONU-change outbox rows. Every other iteration changes every ONU's power,
// so half the iterations write 1000 outbox events.
func BenchmarkApplyVarbindBatch(b *testing.B) {
	pool := pgtest.New(b)
	m, err := newMetrics(nil)
	if err != nil {
		b.Fatal(err)
	}
	p := &projector{cfg: Config{}.WithDefaults(), db: pool, log: zerolog.Nop(), metrics: m}
	onus := make([]huaweiONU, 1000)
	for i := range onus {
		onus[i] = huaweiONU{id: int64(i % 128), serial: uint32(i), desc: "cliente", online: true, rx: -2000}
	}
	payloads := make([][]byte, 2)
	for v := range payloads {
		bt := streams.VarbindBatch{ExecutionID: "e", OLTID: "olt-bench", IndexScheme: SchemePonONU, Columns: huaweiColumns, CollectedAt: time.Now()}
		for i, o := range onus {
			o.rx -= int64(v)
			bt.Varbinds = append(bt.Varbinds, o.varbinds(pon0+int64(i/128)*256)...)
		}
		data, err := streams.Encode("bench", time.Now(), bt)
		if err != nil {
			b.Fatal(err)
		}
		payloads[v] = data
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seq := uint64(i + 1)
		ch, err := p.decodeVarbinds(jsrouter.Msg{Seq: seq, Data: payloads[i%2]})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := projection.Apply(ctx, pool, streams.ConsumerProjectorVarbinds, seq, ch.Apply); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*len(onus))/b.Elapsed().Seconds(), "onus/s")
}

// BenchmarkDecodeVarbindRows measures what the projector does with a
// varbind batch before Postgres: the envelope and the batch decoded, every
// row placed in its ONU's fields. 1024 Huawei ONUs (4 columns) in rows, as
// the poller publishes a discovery walk.
func BenchmarkDecodeVarbindRows(b *testing.B) {
	bt := streams.VarbindBatch{ExecutionID: "e", OLTID: "olt-bench", IndexScheme: SchemePonONU, Columns: huaweiColumns, CollectedAt: time.Now(), LeaseRevision: 1}
	for i := 0; i < 1024; i++ {
		o := huaweiONU{id: int64(i % 128), serial: uint32(i), desc: "cliente", online: true, rx: -2000}
		var row streams.VarbindRow
		for _, v := range o.varbinds(pon0 + int64(i/128)*256) {
			for c, col := range huaweiColumns {
				if strings.HasPrefix(v.OID, col.OID+".") {
					row.Index = strings.TrimPrefix(v.OID, col.OID+".")
					row.Values = append(row.Values, streams.RowValue{Column: c, Type: v.Type, Value: v.Value})
				}
			}
		}
		bt.Rows = append(bt.Rows, row)
	}
	data, err := streams.Encode("bench", time.Now(), bt)
	if err != nil {
		b.Fatal(err)
	}
	subject := streams.SubjectVarbinds("olt-bench")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := decodeVarbindMsg(subject, uint64(i+1), data)
		if err != nil {
			b.Fatal(err)
		}
		if len(m.Dec.ONUs) != 1024 {
			b.Fatalf("%d onus", len(m.Dec.ONUs))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*1024*4)/b.Elapsed().Seconds(), "varbinds/s")
}
