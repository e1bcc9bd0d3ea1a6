package projector

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/facho-olt/facho/streams"
)

// Two replicas with 4 partitions lead 2 each; when one stops the other
// leads all 4; every batch is applied once and in order per OLT: a
// rebuild equals what they left, row for row.
func TestPartitionsSpreadOverReplicas(t *testing.T) {
	r := newRig(t)
	r.widePool(Config{Partitions: 4}.WithDefaults().DBConns())
	g := &workGen{t: t, js: r.js, base: time.Now().UTC().Truncate(time.Second).Add(-time.Hour)}
	const olts = 12
	g.onuWalks(0, 10, olts)
	g.wait()
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	cfg := Config{Partitions: 4}
	stopA := r.runProjector(cfg, regA)
	leader := "facho_projector_varbind_leader"
	r.eventually("one replica leads the 4 partitions", func() bool { return gaugeOf(t, regA, leader) == 4 })
	stopB := r.runProjector(cfg, regB)
	r.eventually("the replicas lead 2 partitions each", func() bool {
		return gaugeOf(t, regA, leader) == 2 && gaugeOf(t, regB, leader) == 2
	})
	g.onuWalks(10, 30, olts)
	g.wait()
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, r.lastSeq(streams.StreamVarbinds))

	stopA()
	r.eventually("the other replica leads the 4 partitions", func() bool { return gaugeOf(t, regB, leader) == 4 })
	g.onuWalks(30, 40, olts)
	g.wait()
	last := r.lastSeq(streams.StreamVarbinds)
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, last)
	for i := range 4 {
		r.waitAckFloor(streams.StreamVarbinds, streams.ConsumerProjectorVarbindsPartition(i, 4), last)
		if c, err := r.consumerCheckpoint(streams.ConsumerProjectorVarbindsPartition(i, 4)); err != nil || c != last {
			t.Errorf("partition %d: checkpoint %d (%v), want %d", i, c, err, last)
		}
	}
	stopB()
	if n := r.count(`SELECT count(DISTINCT olt_id) FROM onu_data`); n != olts {
		t.Fatalf("onu_data holds %d OLTs, want %d", n, olts)
	}
	r.liveVsRebuild(ReadModelONUData)
}

// A replica configured with another partition count stands by while one
// of the running count leads, and leads once it stopped.
func TestOtherPartitionCountStandsBy(t *testing.T) {
	r := newRig(t)
	r.widePool(Config{Partitions: 2}.WithDefaults().DBConns())
	g := &workGen{t: t, js: r.js, base: time.Now().UTC().Truncate(time.Second).Add(-time.Hour)}
	g.onuWalks(0, 2, 4)
	g.wait()
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	leader := "facho_projector_varbind_leader"
	stopA := r.runProjector(Config{Partitions: 2}, regA)
	r.eventually("the 2-partition replica leads both", func() bool { return gaugeOf(t, regA, leader) == 2 })
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, r.lastSeq(streams.StreamVarbinds))
	r.runProjector(Config{}, regB)
	time.Sleep(3 * time.Second)
	if got := gaugeOf(t, regB, leader); got != 0 {
		t.Fatalf("a replica of 1 partition leads %v beside one of 2", got)
	}
	stopA()
	r.eventually("the 1-partition replica leads", func() bool { return gaugeOf(t, regB, leader) == 1 })
	r.eventually("the 2-partition durables deleted", func() bool {
		for i := range 2 {
			if _, err := r.js.Consumer(context.Background(), streams.StreamVarbinds, streams.ConsumerProjectorVarbindsPartition(i, 2)); !errors.Is(err, jetstream.ErrConsumerNotFound) {
				return false
			}
		}
		return true
	})
	g.onuWalks(2, 4, 4)
	g.wait()
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, r.lastSeq(streams.StreamVarbinds))
	var leftovers int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM pending_events WHERE events IS NOT NULL`).Scan(&leftovers); err != nil || leftovers != 0 {
		t.Fatalf("pending events left: %d (%v)", leftovers, err)
	}
	r.liveVsRebuild(ReadModelONUData)
}

// widePool gives the rig a pool of its database with room for two
// replicas of conns connections each.
func (r *rig) widePool(conns int32) {
	r.t.Helper()
	cfg := r.pool.Config().Copy()
	cfg.MaxConns = 2*conns + 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(pool.Close)
	r.pool = pool
}
