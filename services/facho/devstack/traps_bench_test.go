package devstack_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

// BenchmarkTrapToStatus prints the time from a simulated OLT sending an
// ONU's dying-gasp trap to the ONU's new status committed, through the
// whole system (oltsim -> UDP -> trapd -> FACHO_TRAP -> projector ->
// onu_data): measured when the onu.changed of source trap, which the
// projector publishes right after the commit, is read (an upper bound of
// the commit). One ONU at a time, up to 256 ONUs of one OLT
// (b.N rounds of 64), at 10 and at 50 traps/s:
//
//	go test -run '^$' -bench TrapToStatus -benchtime 2x ./services/facho/devstack/
func BenchmarkTrapToStatus(b *testing.B) {
	for _, rate := range []int{10, 50} {
		b.Run(fmt.Sprintf("%d_per_s", rate), func(b *testing.B) { benchTrapToStatus(b, time.Second/time.Duration(rate)) })
	}
}

func benchTrapToStatus(b *testing.B, gap time.Duration) {
	const community, perRound = "bench-trap-community", 64
	if b.N > 4 {
		b.Fatal("at most 4 rounds of 64 ONUs (-benchtime 4x)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir: b.TempDir(), NATSPort: -1, DatabaseURL: pgtest.URL(b), APIAddr: "127.0.0.1:0", APIToken: token, Pollers: 1,
		Planner: planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Fleet: oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "olt-b", Listen: "127.0.0.1:0", Community: community,
			Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 4, ONUsPerPort: 64}, Seed: 2}}},
	}, zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.WarnLevel))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			b.Errorf("stop: %v", err)
		}
	}()
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	if _, err := devstack.ConfigureProfile(ctx, client, s.Fleet.OLTs(), "huawei-ma5800", devstack.DemoOptions{Community: community, IntervalSeconds: 3600}); err != nil {
		b.Fatal(err)
	}
	olt := s.Fleet.OLT("olt-b")
	onus := olt.ONUs()
	for _, o := range onus {
		if err := olt.PatchONU(o.Index, oltsim.ONUPatch{Online: ptr(true)}); err != nil {
			b.Fatal(err)
		}
	}
	waitFor(b, "every ONU polled online", 120*time.Second, func() (bool, string) {
		var n int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FROM onu_data WHERE olt_id = 'olt-b' AND status = 'ONLINE'`).Scan(&n)
		return n == len(onus), fmt.Sprintf("%d of %d online", n, len(onus))
	})
	// No confirmation poll (the get job disabled): a poll reading an ONU
	// offline before its trap is applied would supersede the trap, and
	// this measures the trap's path alone.
	if err := client.Do(ctx, http.MethodPatch, "/api/v1/jobs/huawei-ma5800-optical", map[string]any{"enabled": false}, nil); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[[2]int64]time.Time{}
	cons, err := s.JS.OrderedConsumer(ctx, streams.StreamONU, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.SubjectONU("olt-b", streams.ONUStatusChanged)}, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		now := time.Now()
		if _, ev, err := streams.Decode[streams.ONUChanged](m.Data()); err == nil && ev.Source == streams.ONUChangeSourceTrap {
			mu.Lock()
			seen[[2]int64{ev.PonIndex, ev.ONUID}] = now
			mu.Unlock()
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	if err := olt.SetTrapTarget(oltsim.TrapTarget{Dest: s.TrapAddr}); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	b.ResetTimer()
	for r := range b.N {
		sent := map[[2]int64]time.Time{}
		for _, o := range onus[r*perRound : (r+1)*perRound] {
			sent[[2]int64{o.PonIndex, int64(o.ID)}] = time.Now()
			if err := olt.PatchONU(o.Index, oltsim.ONUPatch{Online: ptr(false), DownCause: oltsim.DownCauseDyingGasp}); err != nil {
				b.Fatal(err)
			}
			time.Sleep(gap)
		}
		waitFor(b, "the round's status changes", 60*time.Second, func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for k := range sent {
				if _, ok := seen[k]; ok {
					n++
				}
			}
			return n == len(sent), fmt.Sprintf("%d of %d", n, len(sent))
		})
		mu.Lock()
		for k, at := range sent {
			lat = append(lat, seen[k].Sub(at))
		}
		mu.Unlock()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99_ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max_ms")
	b.ReportMetric(float64(len(lat)), "traps")
}
