package projector

import (
	"context"
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
