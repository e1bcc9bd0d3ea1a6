package oltsim

import "testing"

// Taking one ONU offline changes its status row and, for a FiberHome,
// removes its optical row; the others stay as they were.
func TestSetONUOnline(t *testing.T) {
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{{Name: "fh", Listen: "127.0.0.1:0", Community: "public",
		Profile: "fiberhome-an5516", Shape: Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 4}, Seed: 3}}})
	o := f.OLT("fh")
	g := client(t, o, "public")
	const status, rx = "1.3.6.1.4.1.5875.800.3.10.1.1.11", "1.3.6.1.4.1.5875.800.3.9.3.3.1.6"
	before := o.ONUs()
	var target ONU
	for _, u := range before {
		if u.Online {
			target = u
			break
		}
	}
	if !target.Online {
		t.Fatal("no online onu to take offline")
	}
	rows := func(col string) map[string]int {
		t.Helper()
		pdus, err := g.BulkWalkAll(col)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, p := range pdus {
			out[p.Name[len(col)+2:]] = p.Value.(int)
		}
		return out
	}
	if _, ok := rows(rx)[target.Index]; !ok {
		t.Fatalf("online onu %s has no optical row", target.Index)
	}

	if err := o.SetONUOnline(target.Index, false); err != nil {
		t.Fatal(err)
	}
	if got := rows(status)[target.Index]; got != 2 {
		t.Errorf("status of onu %s = %d, want 2 (offline)", target.Index, got)
	}
	optical := rows(rx)
	if _, ok := optical[target.Index]; ok {
		t.Errorf("offline onu %s still has an optical row", target.Index)
	}
	online := 0
	for _, u := range before {
		if u.Online && u.Index != target.Index {
			online++
			if _, ok := optical[u.Index]; !ok {
				t.Errorf("onu %s lost its optical row", u.Index)
			}
		}
	}
	if len(optical) != online {
		t.Errorf("%d optical rows, want %d", len(optical), online)
	}

	if err := o.SetONUOnline(target.Index, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := rows(rx)[target.Index]; !ok {
		t.Errorf("onu %s back online has no optical row", target.Index)
	}
	if err := o.SetONUOnline("999.999", false); err == nil {
		t.Error("unknown index accepted")
	}
}
