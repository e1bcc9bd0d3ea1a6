package devstack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/alerter"
	"github.com/facho-olt/facho/services/availability"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
	"github.com/facho-olt/facho/streams"
)

// TestAlertsAgainstSimulator runs the whole system (planner, pollers over
// real SNMP/UDP, projector, alerter) against a simulated Huawei OLT of 2
// PONs x 16 ONUs and a real Alertmanager whose webhook receiver is this
// test: a fiber cut of the 16 ONUs of one PON is one pon_outage
// notification (no ONU notified on its own), resolved when they return; a
// single ONU offline and one at -31.5 dBm are one alert each.
func TestAlertsAgainstSimulator(t *testing.T) {
	rcv := newAlertReceiver(t, "onu_id")
	amURL := startAlertmanager(t, alertmanagerBin(t), rcv.URL)
	var mu = &rcv.mu
	got := rcv.got

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hold := time.Second
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir: t.TempDir(), NATSPort: -1, DatabaseURL: pgtest.URL(t), APIAddr: "127.0.0.1:0", APIToken: token, Pollers: 1,
		Planner: planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Fleet: oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "olt-a", Listen: "127.0.0.1:0", Community: "e2e-secret-community",
			Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 16}, Seed: 1}}},
		Alerter: alerter.Config{AlertmanagerURLs: []string{amURL}, Tick: 100 * time.Millisecond, Rules: alerter.Rules{Global: alerter.Override{ONUDownHold: &hold}}},
	}, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	olt := s.Fleet.OLTs()[0]
	onus := olt.ONUs()
	for _, o := range onus { // a healthy OLT to start from
		if err := olt.PatchONU(o.Index, oltsim.ONUPatch{Online: ptr(true), RxPowerDBm: ptr(-20.0)}); err != nil {
			t.Fatal(err)
		}
	}
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	ids, err := devstack.ConfigureHuawei(ctx, client, s.Fleet.OLTs(), devstack.DemoOptions{Community: "e2e-secret-community", IntervalSeconds: 10})
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
	count := func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= len(want), fmt.Sprint(got)
	}
	waitFor(t, "the outage and the two ONU alerts in Alertmanager's receiver", 60*time.Second, count)
	for _, o := range onus {
		if o.PonIndex == cutPON {
			if err := olt.SetONUOnline(o.Index, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	want["pon_outage/resolved/"] = 1
	waitFor(t, "the outage resolved in Alertmanager's receiver", 60*time.Second, count)
	time.Sleep(3 * time.Second) // room for a duplicate to show
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Errorf("alertmanager notified %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("alertmanager notified %v, want %v", got, want)
			break
		}
	}
	var rows, inhibited int
	if err := s.DB.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE inhibited) FROM alerts WHERE rule = 'onu_down'`).Scan(&rows, &inhibited); err != nil {
		t.Fatal(err)
	}
	if rows != 17 || inhibited != 16 {
		t.Errorf("onu_down alerts: %d, %d inhibited; want 17, 16", rows, inhibited)
	}
}

func ptr[T any](v T) *T { return &v }

// cutPONAndTwoONUs scripts the alerting scenario on olt: a fiber cut (every
// ONU of the first ONU's PON offline), one more ONU offline on another PON
// and one at -31.5 dBm. It returns the cut PON and the ONUs of the other
// PONs (other[0] offline, other[1] at -31.5 dBm).
func cutPONAndTwoONUs(t testing.TB, olt *oltsim.OLT, onus []oltsim.ONU) (int64, []oltsim.ONU) {
	t.Helper()
	cutPON := onus[0].PonIndex
	var other []oltsim.ONU
	for _, o := range onus {
		if o.PonIndex == cutPON {
			if err := olt.SetONUOnline(o.Index, false); err != nil { // the fiber cut
				t.Fatal(err)
			}
		} else {
			other = append(other, o)
		}
	}
	if err := olt.SetONUOnline(other[0].Index, false); err != nil {
		t.Fatal(err)
	}
	if err := olt.SetONURxPower(other[1].Index, -31.5); err != nil {
		t.Fatal(err)
	}
	return cutPON, other
}

// alertmanagerBin is the Alertmanager binary (Debian's, or
// FACHO_ALERTMANAGER_BIN); the test is skipped without one.
func alertmanagerBin(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("FACHO_ALERTMANAGER_BIN"), "/usr/bin/prometheus-alertmanager"} {
		if _, err := os.Stat(p); p != "" && err == nil {
			return p
		}
	}
	t.Skip("no Alertmanager: apt-get install prometheus-alertmanager")
	return ""
}

// alertReceiver is Alertmanager's webhook receiver: how many times each
// alertname/status/<label> was notified, and when first.
type alertReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	got   map[string]int
	first map[string]time.Time
}

func newAlertReceiver(t *testing.T, label string) *alertReceiver {
	t.Helper()
	r := &alertReceiver{got: map[string]int{}, first: map[string]time.Time{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		var n struct {
			Alerts []struct {
				Status string            `json:"status"`
				Labels map[string]string `json:"labels"`
			} `json:"alerts"`
		}
		if err := json.Unmarshal(b, &n); err != nil {
			t.Errorf("alertmanager webhook: %v", err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, a := range n.Alerts {
			k := a.Labels["alertname"] + "/" + a.Status + "/" + a.Labels[label]
			r.got[k]++
			if _, seen := r.first[k]; !seen {
				r.first[k] = time.Now()
			}
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func startAlertmanager(t testing.TB, bin, receiver string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf("route:\n  receiver: test\n  group_by: [alertname, olt_id, pon]\n  group_wait: 200ms\n  group_interval: 500ms\n  repeat_interval: 1h\nreceivers:\n  - name: test\n    webhook_configs:\n      - url: %s/am\n        send_resolved: true\n", receiver)
	if err := os.WriteFile(filepath.Join(dir, "am.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "am.yml"), "--storage.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--cluster.listen-address=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitFor(t, "alertmanager ready", 30*time.Second, func() (bool, string) {
		resp, err := http.Get(url + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	return url
}

// TestDeadOLTReachesAlertmanager: an OLT that stops answering reaches the
// NOC within 60 s of its first unanswered request, with the production
// timings of availability (recheck 15 s, unavailable after 45 s; an
// available OLT probed every 15 s, not 60, so the test does not wait a
// minute for the silence to be noticed): the availability service marks it
// unreachable, then unavailable, the alerter fires olt_unreachable and
// Alertmanager's receiver gets it once; it is resolved when the OLT answers.
func TestDeadOLTReachesAlertmanager(t *testing.T) {
	if testing.Short() {
		t.Skip("about 90 s with production availability timings")
	}
	rcv := newAlertReceiver(t, "olt_id")
	amURL := startAlertmanager(t, alertmanagerBin(t), rcv.URL)
	var mu = &rcv.mu
	got := rcv.got

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir: t.TempDir(), NATSPort: -1, DatabaseURL: pgtest.URL(t), APIAddr: "127.0.0.1:0", APIToken: token, Pollers: 1,
		Planner: planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Fleet: oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "olt-a", Listen: "127.0.0.1:0", Community: "e2e-secret-community",
			Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 4}, Seed: 1}}},
		Availability: availability.Config{Recheck: 15 * time.Second, UnavailableAfter: 45 * time.Second, ProbeInterval: 15 * time.Second},
		Alerter:      alerter.Config{AlertmanagerURLs: []string{amURL}, Tick: 100 * time.Millisecond},
	}, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	if _, err := devstack.ConfigureHuawei(ctx, client, s.Fleet.OLTs(), devstack.DemoOptions{Community: "e2e-secret-community", IntervalSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	availability := func() oltAvailability {
		var a oltAvailability
		_ = client.Do(ctx, http.MethodGet, "/api/v1/olts/olt-a", nil, &a)
		return a
	}
	waitFor(t, "olt-a available", 30*time.Second, func() (bool, string) {
		a := availability()
		return a.state() == streams.AvailabilityAvailable, a.state()
	})

	s.Fleet.OLT("olt-a").SetFaults(oltsim.Faults{NoAnswer: true})
	var since time.Time
	waitFor(t, "olt-a unreachable", 30*time.Second, func() (bool, string) {
		a := availability()
		if a.AvailabilitySince != nil {
			since = *a.AvailabilitySince
		}
		return a.state() != streams.AvailabilityAvailable && a.AvailabilitySince != nil, a.state()
	})
	fired := func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return got["olt_unreachable/firing/olt-a"] > 0, fmt.Sprint(got)
	}
	waitFor(t, "olt_unreachable in Alertmanager's receiver", 90*time.Second, fired)
	mu.Lock()
	took := rcv.first["olt_unreachable/firing/olt-a"].Sub(since)
	mu.Unlock()
	t.Logf("olt_unreachable reached Alertmanager's receiver %s after the first unanswered request", took.Round(time.Millisecond))
	if took > 60*time.Second {
		t.Errorf("olt_unreachable reached the receiver %s after the first unanswered request, want within 60 s", took)
	}

	s.Fleet.OLT("olt-a").SetFaults(oltsim.Faults{})
	waitFor(t, "olt_unreachable resolved in Alertmanager's receiver", 60*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return got["olt_unreachable/resolved/olt-a"] > 0, fmt.Sprint(got)
	})
	time.Sleep(2 * time.Second) // room for a duplicate to show
	mu.Lock()
	defer mu.Unlock()
	if got["olt_unreachable/firing/olt-a"] != 1 || got["olt_unreachable/resolved/olt-a"] != 1 {
		t.Errorf("alertmanager notified %v, want olt_unreachable firing and resolved once each", got)
	}
}
