package devstack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/alerter"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
)

// BenchmarkPollToAlertmanager prints the time from the poll that saw an
// ONU's optical level fall to -31.5 dBm to Alertmanager holding its
// onu_rx_low alert (an immediate rule), p50 and p99, through the whole
// system: planner, poller over real SNMP/UDP against the simulator,
// projector, alerter and a real Alertmanager polled every 5 ms
// (GET /api/v2/alerts). Each round waits until the previous poll is
// over, lowers 4 ONUs (one per PON) and waits for their alerts. Two
// figures bracket the latency from the SNMP response that carried the
// change:
//
//   - from_batch: from the poller's varbind batch (collected_at, which
//     becomes the event's observed_at and the alert's startsAt), taken just
//     after the responses it holds: a lower bound.
//   - from_request: from the first SNMP request the simulator received
//     after the change (its record): an upper bound.
//
// One round per b.N, at most 32 (4 PONs x 32 ONUs, each ONU used once),
// about one 10 s poll interval each:
//
//	go test -run '^$' -bench PollToAlertmanager -benchtime 20x ./services/facho/devstack/
func BenchmarkPollToAlertmanager(b *testing.B) {
	bin := alertmanagerBin(b)
	const pons, perPON, community = 4, 32, "bench-secret-community"
	if b.N > perPON {
		b.Fatalf("at most %d rounds (-benchtime %dx)", perPON, perPON)
	}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer rcv.Close()
	amURL := startAlertmanager(b, bin, rcv.URL)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir: b.TempDir(), NATSPort: -1, DatabaseURL: pgtest.URL(b), APIAddr: "127.0.0.1:0", APIToken: token, Pollers: 1,
		Planner: planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Fleet: oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "olt-a", Listen: "127.0.0.1:0", Community: community,
			Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: pons, ONUsPerPort: perPON}, Seed: 1}}},
		Alerter: alerter.Config{AlertmanagerURLs: []string{amURL}},
	}, zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.WarnLevel))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			b.Errorf("stop: %v", err)
		}
	}()
	olt := s.Fleet.OLTs()[0]
	onus := olt.ONUs()
	byPON := map[int64][]oltsim.ONU{}
	var ponOrder []int64
	for _, o := range onus { // a healthy OLT to start from
		if err := olt.PatchONU(o.Index, oltsim.ONUPatch{Online: ptr(true), RxPowerDBm: ptr(-20.0)}); err != nil {
			b.Fatal(err)
		}
		if byPON[o.PonIndex] == nil {
			ponOrder = append(ponOrder, o.PonIndex)
		}
		byPON[o.PonIndex] = append(byPON[o.PonIndex], o)
	}
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	ids, err := devstack.ConfigureHuawei(ctx, client, s.Fleet.OLTs(), devstack.DemoOptions{Community: community, IntervalSeconds: 10})
	if err != nil {
		b.Fatal(err)
	}
	waitFor(b, "every ONU online in onu_data", 60*time.Second, func() (bool, string) {
		var n int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FROM onu_data WHERE olt_id = $1 AND status = 'ONLINE'`, ids[0]).Scan(&n)
		return n == len(onus), fmt.Sprint(n)
	})

	// idle waits for a poll to end: responses counted since the last
	// reset and nothing in flight for 300 ms.
	idle := func() {
		waitFor(b, "a poll to end", 60*time.Second, func() (bool, string) {
			r := olt.Record()
			if r.Responses == 0 || r.InFlight > 0 || len(r.Timeline) == 0 {
				return false, fmt.Sprintf("%d responses, %d in flight", r.Responses, r.InFlight)
			}
			return time.Since(r.Timeline[len(r.Timeline)-1].At) > 300*time.Millisecond, "busy"
		})
	}
	var fromBatch, fromRequest []time.Duration
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		idle()
		olt.ResetRecord()
		want := map[string]bool{}
		for _, p := range ponOrder {
			o := byPON[p][round]
			if err := olt.SetONURxPower(o.Index, -31.5); err != nil {
				b.Fatal(err)
			}
			want[o.Serial] = true
		}
		changed := time.Now()
		seen := map[string]bool{}
		for deadline := changed.Add(60 * time.Second); len(seen) < len(want); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("round %d: %d of %d onu_rx_low alerts in Alertmanager after 60 s", round, len(seen), len(want))
			}
			now := time.Now()
			for _, a := range amRxLow(b, amURL) {
				if !want[a.Labels["serial"]] || seen[a.Labels["serial"]] {
					continue
				}
				seen[a.Labels["serial"]] = true
				fromBatch = append(fromBatch, now.Sub(a.StartsAt))
				r := olt.Record()
				if len(r.Timeline) == 0 || r.Timeline[0].At.Before(changed) {
					b.Fatalf("round %d: no request recorded after the change", round)
				}
				fromRequest = append(fromRequest, now.Sub(r.Timeline[0].At))
			}
		}
	}
	b.StopTimer()
	p50b, p99b := pct(fromBatch, 0.5), pct(fromBatch, 0.99)
	p50r, p99r := pct(fromRequest, 0.5), pct(fromRequest, 0.99)
	b.ReportMetric(float64(p50b.Microseconds())/1000, "from_batch_p50_ms")
	b.ReportMetric(float64(p99b.Microseconds())/1000, "from_batch_p99_ms")
	b.ReportMetric(float64(p50r.Microseconds())/1000, "from_request_p50_ms")
	b.ReportMetric(float64(p99r.Microseconds())/1000, "from_request_p99_ms")
	b.Logf("poll -> Alertmanager over %d onu_rx_low alerts (%d rounds of %d): from the poller's varbind batch p50 %s, p99 %s, max %s; from the simulator's first request after the change p50 %s, p99 %s, max %s",
		len(fromBatch), b.N, len(ponOrder), p50b, p99b, pct(fromBatch, 1), p50r, p99r, pct(fromRequest, 1))
}

type amAlertView struct {
	Labels   map[string]string `json:"labels"`
	StartsAt time.Time         `json:"startsAt"`
}

func amRxLow(b testing.TB, amURL string) []amAlertView {
	resp, err := http.Get(amURL + "/api/v2/alerts?filter=alertname%3D%22onu_rx_low%22")
	if err != nil {
		b.Fatalf("alertmanager: %v", err)
	}
	defer resp.Body.Close()
	var out []amAlertView
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		b.Fatalf("alertmanager alerts: %v", err)
	}
	return out
}

// pct is quantile q of d (sorted in place); q = 1 is the maximum.
func pct(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[min(len(d)-1, int(q*float64(len(d))))]
}
