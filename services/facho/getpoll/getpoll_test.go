// Package getpoll_test runs GET polling of discovered ONUs end to end: a
// simulated OLT over real SNMP/UDP, the poller and the projector in
// process with their own NATS identities (permissions enforced), embedded
// JetStream and a real Postgres.
package getpoll_test

import (
	"context"
	"math"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/poller"
	"github.com/facho-olt/facho/services/projector"
	"github.com/facho-olt/facho/streams"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const hwBase = "1.3.6.1.4.1.2011.6.128.1.1.2"

var columns = []streams.OIDSpec{
	{ID: "hw-serial", OID: hwBase + ".43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
	{ID: "hw-desc", OID: hwBase + ".43.1.9", Field: streams.FieldDescription, Decoder: streams.Decoder{Kind: "string"}},
	{ID: "hw-status", OID: hwBase + ".46.1.15", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ONLINE", "2": "OFFLINE"}}},
	{ID: "hw-rx", OID: hwBase + ".51.1.4", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "scaled", Scale: 0.01, NoReading: ptr(int64(2147483647))}},
}

func ptr[T any](v T) *T { return &v }

// A discovery finds 1,024 ONUs; some change on the OLT; a GET of the 4
// columns at every discovered ONU leaves onu_data equal to the simulator.
func TestGetOf1024ONUsLandsInONUData(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	pool := pgtest.New(t)
	key, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := secret.ParseKey(key)
	box, err := secret.NewBox(raw)
	if err != nil {
		t.Fatal(err)
	}
	const community = "get-poll-community"
	sealed, err := box.Seal(community)
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{
		Name: "olt-1k", Listen: "127.0.0.1:0", Community: community, Profile: "huawei-ma5800", Seed: 7,
		Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 8, ONUsPerPort: 128},
	}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	sim := fleet.OLT("olt-1k")
	if n := len(sim.ONUs()); n != 1024 {
		t.Fatalf("simulator has %d ONUs", n)
	}

	_, pollerJS := env.Connect(t, natsauth.Poller)
	_, projectorJS := env.Connect(t, natsauth.Projector)
	done := make(chan error, 2)
	go func() {
		done <- poller.Run(ctx, poller.Config{PollerID: "p1", Workers: 1, GetChunk: 30, GetConcurrency: 2},
			poller.Deps{JS: pollerJS, Log: zerolog.Nop(), Box: box})
	}()
	go func() {
		done <- projector.Run(ctx, projector.Config{FetchWait: 100 * time.Millisecond},
			projector.Deps{JS: projectorJS, DB: pool, Log: zerolog.Nop()})
	}()
	defer func() {
		cancel()
		for i := 0; i < 2; i++ {
			if err := <-done; err != nil {
				t.Errorf("service: %v", err)
			}
		}
	}()

	addr := sim.Addr()
	node := func(exec, kind string, cols []streams.OIDSpec) streams.NodeDue {
		return streams.NodeDue{ExecutionID: exec, NodeID: "job-" + kind + ".olt-1k", JobID: "job-" + kind, JobName: kind,
			OLTID: "olt-1k", BrandID: "huawei", IndexScheme: streams.IndexSchemePonONU, Kind: kind,
			Target: streams.Target{Host: addr.IP.String(), Port: addr.Port, CommunityEnc: sealed}, OIDs: cols,
			Priority: 40, IntervalSeconds: 300, TimeoutSeconds: 120, ScheduledAt: time.Now().UTC()}
	}
	run := func(n streams.NodeDue) streams.ExecutionSucceeded {
		t.Helper()
		b, err := streams.EncodeWithID(n.ExecutionID, "test", time.Now(), n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.JS.Publish(ctx, streams.SubjectNodeDue(n.OLTID), b); err != nil {
			t.Fatal(err)
		}
		var status string
		var failedONUs int
		eventually(t, "execution "+n.ExecutionID, func() bool {
			err := pool.QueryRow(ctx, `SELECT status, failed_onus FROM executions WHERE id = $1`, n.ExecutionID).Scan(&status, &failedONUs)
			return err == nil && (status == "SUCCESS" || status == "FAILED")
		})
		if status != "SUCCESS" || failedONUs != 0 {
			t.Fatalf("%s: %s with %d failed ONUs", n.ExecutionID, status, failedONUs)
		}
		ev := succeeded(t, ctx, env.JS, n.ExecutionID)
		// Every batch of it is in onu_data before we look.
		vs, _ := env.JS.Stream(ctx, streams.StreamVarbinds)
		info, _ := vs.Info(ctx)
		eventually(t, "varbinds projected", func() bool {
			var cp uint64
			err := pool.QueryRow(ctx, `SELECT last_seq FROM checkpoints WHERE consumer = $1`, streams.ConsumerProjectorVarbinds).Scan(&cp)
			return err == nil && cp >= info.State.LastSeq
		})
		return ev
	}

	// The discovery reads serials only: it finds the ONUs, the projector
	// publishes them as discovered.
	disc := run(node("disc-1", streams.KindDiscovery, columns[:1]))
	if disc.Varbinds != 1024 {
		t.Fatalf("discovery read %d varbinds", disc.Varbinds)
	}
	eventually(t, "1024 discovered events", func() bool {
		s, err := env.JS.Stream(ctx, streams.StreamONU)
		if err != nil {
			return false
		}
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs >= 1024
	})
	// The OLT changes after the discovery: the get must see it.
	changed := 0
	for i, o := range sim.ONUs() {
		if i%37 == 0 {
			if err := sim.SetONUOnline(o.Index, !o.Online); err != nil {
				t.Fatal(err)
			}
			changed++
		}
	}

	get := run(node("get-1", streams.KindGet, columns))
	if get.ONUs != 1024 || get.Varbinds != 4096 || get.FailedVarbinds != 0 {
		t.Fatalf("get: %d ONUs, %d varbinds, %d failed", get.ONUs, get.Varbinds, get.FailedVarbinds)
	}
	rows := onuRows(t, ctx, pool)
	want := sim.ONUs()
	if len(rows) != len(want) {
		t.Fatalf("onu_data has %d rows, the simulator %d ONUs", len(rows), len(want))
	}
	online := 0
	for _, o := range want {
		r, ok := rows[[2]int64{o.PonIndex, int64(o.ID)}]
		if !ok {
			t.Fatalf("onu %s missing", o.Index)
		}
		status := "OFFLINE"
		if o.Online {
			status, online = "ONLINE", online+1
		}
		if r.serial != o.Serial || r.desc != o.Description || r.status != status {
			t.Errorf("onu %s: row %+v, simulator %+v", o.Index, r, o)
		}
		switch {
		case math.IsNaN(o.RxPowerDBm) && r.rx != nil:
			t.Errorf("onu %s: rx %v, want no reading", o.Index, *r.rx)
		case !math.IsNaN(o.RxPowerDBm) && (r.rx == nil || math.Abs(*r.rx-o.RxPowerDBm) > 1e-6):
			t.Errorf("onu %s: rx %v, want %v", o.Index, r.rx, o.RxPowerDBm)
		}
	}
	t.Logf("1024 ONUs x 4 columns in onu_data as the simulator has them (%d online, %d changed after the discovery); get: %d ms",
		online, changed, get.DurationMS)
}

type row struct {
	serial, desc, status string
	rx                   *float64
}

func onuRows(t *testing.T, ctx context.Context, pool *pgxpool.Pool) map[[2]int64]row {
	t.Helper()
	rs, err := pool.Query(ctx, `SELECT pon_index, onu_id, serial, description, status, rx_power_dbm FROM onu_data WHERE olt_id = 'olt-1k'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[[2]int64]row{}
	for rs.Next() {
		var k [2]int64
		var r row
		if err := rs.Scan(&k[0], &k[1], &r.serial, &r.desc, &r.status, &r.rx); err != nil {
			t.Fatal(err)
		}
		out[k] = r
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func succeeded(t *testing.T, ctx context.Context, js jetstream.JetStream, exec string) streams.ExecutionSucceeded {
	t.Helper()
	s, err := js.Stream(ctx, streams.StreamExec)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, streams.SubjectExec("olt-1k", streams.PhaseSucceeded))
	if err != nil {
		t.Fatal(err)
	}
	_, ev, err := streams.Decode[streams.ExecutionSucceeded](m.Data)
	if err != nil || ev.ExecutionID != exec {
		t.Fatalf("last succeeded event %+v (%v), want %s", ev, err, exec)
	}
	return ev
}

// eventually polls cond; the limit only bounds a hung test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
