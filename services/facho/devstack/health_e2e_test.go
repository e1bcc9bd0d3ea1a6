package devstack_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
)

type healthUnit struct {
	Index  string `json:"index"`
	Status string `json:"status"`
}

type healthAPI struct {
	ObservedAt time.Time `json:"observed_at"`
	Tables     []string  `json:"tables"`
	Chassis    struct {
		CPUPercent    *float64 `json:"cpu_percent"`
		MemoryPercent *float64 `json:"memory_percent"`
		TemperatureC  *float64 `json:"temperature_c"`
		Boards        int      `json:"boards"`
	} `json:"chassis"`
	Fans    []healthUnit `json:"fans"`
	PSUs    []healthUnit `json:"psus"`
	Uplinks []struct {
		Index     string `json:"index"`
		Name      string `json:"name"`
		OperState string `json:"oper_state"`
		InErrors  *int64 `json:"in_errors"`
	} `json:"uplinks"`
	FansFailed int `json:"fans_failed"`
	PONsDown   int `json:"pons_down"`
	Changes    []struct {
		Component string `json:"component"`
		Index     string `json:"index"`
		Field     string `json:"field"`
		Old       string `json:"old"`
		New       string `json:"new"`
	} `json:"changes"`
}

type ponAPI struct {
	PonIndex     int64    `json:"pon_index"`
	OnusTotal    int64    `json:"onus_total"`
	AdminState   *string  `json:"admin_state"`
	OperState    *string  `json:"oper_state"`
	TxPowerDBm   *float64 `json:"tx_power_dbm"`
	RxPowerDBm   *float64 `json:"rx_power_dbm"`
	TemperatureC *float64 `json:"temperature_c"`
}

// The health of each simulated vendor (chassis, fans, power supplies,
// uplinks, PON ports) lands in the read model as the simulator's state says,
// through the whole pipeline (health job, poller, olt.health, projector,
// API); a failed fan and a PON port going down show in the first reading
// taken after them, with their state changes in the history.
func TestOLTHealthOfEachVendorIsTheSimulatorsTruth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sims := map[string]string{"hw": "huawei-ma5800", "zte": "zte-c300", "fh": "fiberhome-an5516"}
	var fleet oltsim.FleetConfig
	seed := int64(70)
	for _, name := range []string{"hw", "zte", "fh"} {
		seed++
		fleet.OLTs = append(fleet.OLTs, oltsim.OLTConfig{Name: name, Listen: "127.0.0.1:0", Community: "e2e-secret-community",
			Profile: sims[name], Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 3, ONUsPerPort: 2}, Seed: seed})
	}
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir: t.TempDir(), NATSPort: -1, DatabaseURL: pgtest.URL(t), APIAddr: "127.0.0.1:0", APIToken: token, Pollers: 2,
		Planner: planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Fleet:   fleet,
	}, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	for name := range sims {
		sim := s.Fleet.OLT(name)
		body := map[string]any{"id": name, "name": name, "ip": "127.0.0.1", "port": sim.Addr().Port, "community": "e2e-secret-community", "brand_id": "auto"}
		var out struct {
			Assigned []string `json:"assigned"`
		}
		if err := client.Do(ctx, http.MethodPost, "/api/v1/olts", body, &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.ContainsFunc(out.Assigned, func(j string) bool { return len(j) > 7 && j[len(j)-7:] == "-health" }) {
			t.Fatalf("%s: no health job assigned: %v", name, out.Assigned)
		}
	}
	readHealth := func(name string) (healthAPI, error) {
		var h healthAPI
		err := client.Do(ctx, http.MethodGet, "/api/v1/olts/"+name+"/health", nil, &h)
		return h, err
	}
	readPONs := func(name string) ([]ponAPI, error) {
		var out struct {
			PONs []ponAPI `json:"pons"`
		}
		err := client.Do(ctx, http.MethodGet, "/api/v1/olts/"+name+"/pons", nil, &out)
		return out.PONs, err
	}
	for name, profile := range sims {
		truth := s.Fleet.OLT(name).Health()
		var h healthAPI
		waitFor(t, "health of "+name, 60*time.Second, func() (bool, string) {
			var err error
			h, err = readHealth(name)
			if err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		// Expected values from the simulator's state: the chassis is the
		// highest over its boards.
		maxOf := func(f func(oltsim.Board) int) float64 {
			m := math.Inf(-1)
			for _, b := range truth.Boards {
				m = math.Max(m, float64(f(b)))
			}
			return m
		}
		wantCPU, wantMem, wantTemp := maxOf(func(b oltsim.Board) int { return b.CPUPercent }), maxOf(func(b oltsim.Board) int { return b.MemoryPercent }),
			maxOf(func(b oltsim.Board) int { return b.TemperatureC })
		if h.Chassis.CPUPercent == nil || *h.Chassis.CPUPercent != wantCPU || h.Chassis.MemoryPercent == nil || *h.Chassis.MemoryPercent != wantMem ||
			h.Chassis.TemperatureC == nil || *h.Chassis.TemperatureC != wantTemp {
			t.Errorf("%s chassis cpu %v mem %v temp %v, want %v %v %v", name, h.Chassis.CPUPercent, h.Chassis.MemoryPercent, h.Chassis.TemperatureC, wantCPU, wantMem, wantTemp)
		}
		if len(h.Fans) != len(truth.Fans) || len(h.PSUs) != len(truth.PSUs) {
			t.Errorf("%s: %d fans %d psus, want %d %d", name, len(h.Fans), len(h.PSUs), len(truth.Fans), len(truth.PSUs))
		}
		for i, f := range truth.Fans {
			if i < len(h.Fans) && (h.Fans[i].Index != f.Index || h.Fans[i].Status != "ok") {
				t.Errorf("%s fan %d: %+v, want %s ok", name, i, h.Fans[i], f.Index)
			}
		}
		if len(h.Uplinks) != len(truth.Uplinks) {
			t.Fatalf("%s: uplinks %+v, want %d", name, h.Uplinks, len(truth.Uplinks))
		}
		for i, u := range truth.Uplinks {
			g := h.Uplinks[i]
			if g.Index != strconv.FormatUint(uint64(u.Index), 10) || g.Name != u.Name || g.OperState != "up" || g.InErrors == nil || *g.InErrors != int64(u.InErrors) {
				t.Errorf("%s uplink %d: %+v, want %+v", name, i, g, u)
			}
		}
		pons, err := readPONs(name)
		if err != nil {
			t.Fatal(err)
		}
		by := map[int64]ponAPI{}
		for _, p := range pons {
			by[p.PonIndex] = p
		}
		for _, p := range truth.PONs {
			g, ok := by[p.Index]
			if !ok || g.OperState == nil || *g.OperState != "up" || g.AdminState == nil || *g.AdminState != "up" {
				t.Errorf("%s pon %d: %+v, want admin and oper up", name, p.Index, g)
				continue
			}
			if profile == "huawei-ma5800" {
				if g.TxPowerDBm == nil || math.Abs(*g.TxPowerDBm-float64(p.TxCenti)/100) > 1e-9 || g.RxPowerDBm == nil ||
					math.Abs(*g.RxPowerDBm-float64(p.RxCenti)/100) > 1e-9 || g.TemperatureC == nil || *g.TemperatureC != float64(p.TemperatureC) {
					t.Errorf("%s pon %d optics tx %v rx %v temp %v, want %d %d (0.01 dBm) %d", name, p.Index, g.TxPowerDBm, g.RxPowerDBm, g.TemperatureC, p.TxCenti, p.RxCenti, p.TemperatureC)
				}
			}
		}
	}

	// A fan fails and a PON port goes down on the Huawei; the health job
	// runs every 10 s from now on.
	hw := s.Fleet.OLT("hw")
	truth := hw.Health()
	var job map[string]any
	if err := client.Do(ctx, http.MethodGet, "/api/v1/jobs/huawei-ma5800-health", nil, &job); err != nil {
		t.Fatal(err)
	}
	job["interval_seconds"] = 10
	if err := client.Do(ctx, http.MethodPut, "/api/v1/jobs/huawei-ma5800-health", job, nil); err != nil {
		t.Fatal(err)
	}
	fan, pon := truth.Fans[1].Index, strconv.FormatInt(truth.PONs[2].Index, 10)
	if err := hw.PatchHealth(oltsim.HealthPatch{Fans: map[string]bool{fan: false}, PONs: map[string]bool{pon: false}}); err != nil {
		t.Fatal(err)
	}
	patched := time.Now()
	var h healthAPI
	waitFor(t, "a reading taken after the failures", 60*time.Second, func() (bool, string) {
		var err error
		h, err = readHealth("hw")
		if err != nil {
			return false, err.Error()
		}
		return h.ObservedAt.After(patched.Add(time.Second)), fmt.Sprintf("last reading at %s", h.ObservedAt)
	})
	// The first reading after the failures has them.
	if h.FansFailed != 1 || h.PONsDown != 1 {
		t.Errorf("fans_failed %d pons_down %d, want 1 1", h.FansFailed, h.PONsDown)
	}
	for _, f := range h.Fans {
		if want := map[bool]string{true: "failed", false: "ok"}[f.Index == fan]; f.Status != want {
			t.Errorf("fan %s: %s, want %s", f.Index, f.Status, want)
		}
	}
	var sawFan, sawPON bool
	for _, c := range h.Changes {
		sawFan = sawFan || c.Component == "fan" && c.Index == fan && c.Old == "ok" && c.New == "failed"
		sawPON = sawPON || c.Component == "pon" && c.Index == pon && c.Field == "oper_state" && c.Old == "up" && c.New == "down"
	}
	if !sawFan || !sawPON {
		t.Errorf("history %+v: want the fan %s ok->failed and the pon %s up->down", h.Changes, fan, pon)
	}
	pons, err := readPONs("hw")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pons {
		want := "up"
		if strconv.FormatInt(p.PonIndex, 10) == pon {
			want = "down"
		}
		if p.OperState == nil || *p.OperState != want {
			t.Errorf("pon %d oper_state %v, want %s", p.PonIndex, p.OperState, want)
		}
	}
	// And each fires its alert: one per fan, one per PON port.
	waitFor(t, "the health alerts of hw", 60*time.Second, func() (bool, string) {
		var out struct {
			Alerts []struct {
				Rule string `json:"rule"`
				Pon  string `json:"pon"`
			} `json:"alerts"`
		}
		if err := client.Do(ctx, http.MethodGet, "/api/v1/alerts?olt_id=hw", nil, &out); err != nil {
			return false, err.Error()
		}
		rules := map[string]int{}
		for _, a := range out.Alerts {
			rules[a.Rule]++
			if a.Rule == "pon_port_down" && a.Pon != truth.PONs[2].Name {
				return false, fmt.Sprintf("pon_port_down on pon %q, want %q", a.Pon, truth.PONs[2].Name)
			}
		}
		return rules["olt_fan_failed"] == 1 && rules["pon_port_down"] == 1, fmt.Sprintf("firing: %v", rules)
	})
}
