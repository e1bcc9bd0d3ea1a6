package devstack_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/alerter"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
)

// TestAlertsSurviveARestartOfEverything: while a fiber cut, an ONU
// offline and an ONU at -31.5 dBm are firing (each notified once to a real
// Alertmanager), every service of the system is stopped and started again
// on the same NATS storage and database (the simulated OLT keeps its
// state). The polls after the restart see the same ONUs: nothing is
// notified again, and each alert is resolved once when its ONUs are back.
func TestAlertsSurviveARestartOfEverything(t *testing.T) {
	rcv := newAlertReceiver(t, "onu_id")
	amURL := startAlertmanager(t, alertmanagerBin(t), rcv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleet, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "olt-a", Listen: "127.0.0.1:0", Community: "e2e-secret-community",
		Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 16}, Seed: 1}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	hold := time.Second
	cfg := devstack.Config{
		DataDir: t.TempDir(), NATSPort: -1, DatabaseURL: pgtest.URL(t), APIAddr: "127.0.0.1:0", APIToken: token, Pollers: 1,
		Planner: planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Alerter: alerter.Config{AlertmanagerURLs: []string{amURL}, Tick: 100 * time.Millisecond, Rules: alerter.Rules{Global: alerter.Override{ONUDownHold: &hold}}},
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s, err := devstack.Start(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = s.Stop()
		}
	}()
	olt := fleet.OLTs()[0]
	onus := olt.ONUs()
	for _, o := range onus {
		if err := olt.PatchONU(o.Index, oltsim.ONUPatch{Online: ptr(true), RxPowerDBm: ptr(-20.0)}); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := devstack.ConfigureHuawei(ctx, &devstack.Client{BaseURL: s.APIURL, Token: token}, fleet.OLTs(), devstack.DemoOptions{Community: "e2e-secret-community", IntervalSeconds: 10})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "32 ONUs online in onu_data", 60*time.Second, func() (bool, string) {
		var n int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FROM onu_data WHERE olt_id = $1 AND status = 'ONLINE'`, ids[0]).Scan(&n)
		return n == 32, strconv.Itoa(n)
	})

	cutPON, other := cutPONAndTwoONUs(t, olt, onus)
	want := map[string]int{
		"pon_outage/firing/":                             1,
		"onu_down/firing/" + strconv.Itoa(other[0].ID):   1,
		"onu_rx_low/firing/" + strconv.Itoa(other[1].ID): 1,
	}
	seen := func(want map[string]int) func() (bool, string) {
		return func() (bool, string) {
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			for k := range want {
				if rcv.got[k] == 0 {
					return false, fmt.Sprint(rcv.got)
				}
			}
			return true, ""
		}
	}
	waitFor(t, "the three alerts in Alertmanager's receiver", 60*time.Second, seen(want))

	// Every service stops and starts again on the same storage.
	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	stopped = true
	s, err = devstack.Start(ctx, cfg, log)
	if err != nil {
		t.Fatalf("start again: %v", err)
	}
	stopped = false
	var before int
	if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM executions WHERE olt_id = $1 AND status = 'SUCCESS'`, ids[0]).Scan(&before); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two polls after the restart", 60*time.Second, func() (bool, string) {
		var n int
		_ = s.DB.QueryRow(ctx, `SELECT count(*) FROM executions WHERE olt_id = $1 AND status = 'SUCCESS'`, ids[0]).Scan(&n)
		return n >= before+2, strconv.Itoa(n - before)
	})
	time.Sleep(3 * time.Second) // room for a duplicate to reach the receiver

	// Back: each alert resolved once.
	for _, o := range onus {
		if o.PonIndex == cutPON || o.Index == other[0].Index {
			if err := olt.SetONUOnline(o.Index, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := olt.SetONURxPower(other[1].Index, -20); err != nil {
		t.Fatal(err)
	}
	want["pon_outage/resolved/"] = 1
	want["onu_down/resolved/"+strconv.Itoa(other[0].ID)] = 1
	want["onu_rx_low/resolved/"+strconv.Itoa(other[1].ID)] = 1
	waitFor(t, "the three resolutions in Alertmanager's receiver", 60*time.Second, seen(want))
	time.Sleep(3 * time.Second)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if !equalCounts(rcv.got, want) {
		t.Errorf("alertmanager notified %v, want each once: %v", rcv.got, want)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
