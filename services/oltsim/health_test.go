package oltsim

import (
	"strconv"
	"testing"
)

// Each vendor serves its health tables from the OLT's health state, and a
// patch (a failed fan, a PON port down) shows in the next walk.
func TestHealthTablesFollowTheState(t *testing.T) {
	for _, tc := range []struct {
		profile  string
		fan, cpu string // column OIDs (fan "" when the vendor has none)
		cpuScale int
	}{
		{"huawei-ma5800", "1.3.6.1.4.1.2011.5.25.31.1.1.10.1.7", "1.3.6.1.4.1.2011.2.6.7.1.1.2.1.5", 1},
		{"zte-c300", "1.3.6.1.4.1.3902.1082.10.10.2.3.11.1.3", "1.3.6.1.4.1.3902.1082.10.1.2.4.1.9", 1},
		{"fiberhome-an5516", "", "1.3.6.1.4.1.5875.800.3.9.8.1.1.5", 100},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			f := startFleet(t, FleetConfig{OLTs: []OLTConfig{{Name: "o", Listen: "127.0.0.1:0", Community: "public",
				Profile: tc.profile, Shape: Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 2}, Seed: 5}}})
			o := f.OLT("o")
			g := client(t, o, "public")
			rows := func(col string) map[string]int {
				t.Helper()
				pdus, err := g.BulkWalkAll(col)
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]int{}
				for _, p := range pdus {
					switch v := p.Value.(type) {
					case int:
						out[p.Name[len(col)+2:]] = v
					case uint:
						out[p.Name[len(col)+2:]] = int(v)
					}
				}
				return out
			}
			h := o.Health()
			cpus := rows(tc.cpu)
			if len(cpus) != len(h.Boards) || len(h.Boards) == 0 {
				t.Fatalf("cpu rows %v, boards %+v", cpus, h.Boards)
			}
			for _, b := range h.Boards {
				if cpus[b.Index] != b.CPUPercent*tc.cpuScale {
					t.Errorf("board %s cpu %d, want %d", b.Index, cpus[b.Index], b.CPUPercent*tc.cpuScale)
				}
			}
			oper := "1.3.6.1.2.1.2.2.1.8"
			pon := strconv.FormatInt(h.PONs[1].Index, 10)
			if rows(oper)[pon] != 1 {
				t.Fatalf("pon %s not up before the patch", pon)
			}
			p := HealthPatch{PONs: map[string]bool{pon: false}}
			if tc.fan != "" {
				p.Fans = map[string]bool{h.Fans[0].Index: false}
			}
			if err := o.PatchHealth(p); err != nil {
				t.Fatal(err)
			}
			if got := rows(oper); got[pon] != 2 || got[strconv.FormatInt(h.PONs[0].Index, 10)] != 1 {
				t.Errorf("oper states after the patch %v: want %s down (2), the other up", got, pon)
			}
			if tc.fan != "" {
				if got := rows(tc.fan); got[h.Fans[0].Index] != 2 || got[h.Fans[1].Index] != 1 {
					t.Errorf("fans after the patch %v: want %s failed (2)", got, h.Fans[0].Index)
				}
			}
			if err := o.PatchHealth(HealthPatch{Fans: map[string]bool{"9.9": false}}); err == nil {
				t.Error("an unknown fan was accepted")
			}
		})
	}
}
