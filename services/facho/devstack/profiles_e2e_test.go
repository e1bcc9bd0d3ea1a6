package devstack_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
)

type profileONU struct {
	PonIndex     int64    `json:"pon_index"`
	ONUID        int64    `json:"onu_id"`
	Serial       string   `json:"serial"`
	Status       string   `json:"status"`
	PortName     string   `json:"port_name"`
	ONUIndex     string   `json:"onu_index"`
	DistanceM    *float64 `json:"distance_m"`
	TxPowerDBm   *float64 `json:"tx_power_dbm"`
	RxPowerDBm   *float64 `json:"rx_power_dbm"`
	TemperatureC *float64 `json:"temperature_c"`
}

// An operator adds OLTs of four vendors with brand_id "auto" and nothing
// else: the profiles' brands, OIDs and jobs are created and assigned, the
// whole pipeline polls them, and their ONUs land with port names and the
// vendors' fields.
func TestOLTsAddedByProfileArePolled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sims := map[string]string{"hw": "huawei-ma5800", "zte": "zte-c300", "fh": "fiberhome-an5516", "vsol": "vsol-v1600g"}
	var fleet oltsim.FleetConfig
	seed := int64(30)
	for name, profile := range sims {
		seed++
		fleet.OLTs = append(fleet.OLTs, oltsim.OLTConfig{Name: name, Listen: "127.0.0.1:0", Community: "e2e-secret-community",
			Profile: profile, Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 4}, Seed: seed})
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
		var out map[string]any
		if err := client.Do(ctx, http.MethodPost, "/api/v1/olts", body, &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	port := map[string]func(o oltsim.ONU) string{
		"hw":   func(o oltsim.ONU) string { return fmt.Sprintf("0/%d/%d:%d", o.Slot, o.Port, o.ID) },
		"zte":  func(o oltsim.ONU) string { return fmt.Sprintf("gpon-onu_1/%d/%d:%d", o.Slot, o.Port, o.ID) },
		"fh":   func(o oltsim.ONU) string { return fmt.Sprintf("%d/%d:%d", o.Slot, o.Port, o.ID) },
		"vsol": func(o oltsim.ONU) string { return fmt.Sprintf("GPON0/%d:%d", o.Port, o.ID) },
	}
	for name := range sims {
		want := s.Fleet.OLT(name).ONUs()
		var got struct {
			ONUs []profileONU `json:"onus"`
		}
		waitFor(t, "ONUs of "+name, 60*time.Second, func() (bool, string) {
			got.ONUs = nil
			if err := client.Do(ctx, http.MethodGet, "/api/v1/olts/"+name+"/onus", nil, &got); err != nil {
				return false, err.Error()
			}
			named := 0
			for _, o := range got.ONUs {
				if o.Serial != "" && o.PortName != "" {
					named++
				}
			}
			return named == len(want), fmt.Sprintf("%d of %d onus with serial and port name", named, len(want))
		})
		by := map[[2]int64]profileONU{}
		for _, o := range got.ONUs {
			by[[2]int64{o.PonIndex, o.ONUID}] = o
		}
		for _, w := range want {
			g := by[[2]int64{w.PonIndex, int64(w.ID)}]
			if g.Serial != w.Serial || g.PortName != port[name](w) || g.ONUIndex != w.Index {
				t.Errorf("%s onu %s: serial %q port %q index %q, want %q %q %q", name, w.Index, g.Serial, g.PortName, g.ONUIndex, w.Serial, port[name](w), w.Index)
			}
			if name == "hw" || name == "zte" { // distance is in their discovery
				if w.Online && (g.DistanceM == nil || *g.DistanceM != float64(w.DistanceM)) || !w.Online && g.DistanceM != nil {
					t.Errorf("%s onu %s: distance %v, want %d (online %v)", name, w.Index, g.DistanceM, w.DistanceM, w.Online)
				}
			}
		}
		if name == "fh" || name == "vsol" { // their optical job is a walk: it ran too
			waitFor(t, "optical readings of "+name, 60*time.Second, func() (bool, string) {
				got.ONUs = nil
				if err := client.Do(ctx, http.MethodGet, "/api/v1/olts/"+name+"/onus", nil, &got); err != nil {
					return false, err.Error()
				}
				ok := 0
				for _, o := range got.ONUs {
					for _, w := range want {
						if w.PonIndex == o.PonIndex && int64(w.ID) == o.ONUID && w.Online == (o.TxPowerDBm != nil) && w.Online == (o.TemperatureC != nil) &&
							(!w.Online || math.Abs(*o.TxPowerDBm-w.TxPowerDBm) < 0.006) {
							ok++
						}
					}
				}
				return ok == len(want), fmt.Sprintf("%d of %d onus with the simulator's tx and temperature", ok, len(want))
			})
		}
	}
}
