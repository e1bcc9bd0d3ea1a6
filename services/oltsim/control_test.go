package oltsim

import (
	"math"
	"testing"
)

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

// A power drop set on one Huawei ONU is what an SNMP walk of the Rx
// column reads; offline, the ONU reads "no reading" and keeps the value it
// was given meanwhile, which it serves once back; the other ONUs keep
// theirs; out-of-range and unknown ONUs are refused.
func TestSetONURxPower(t *testing.T) {
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{huaweiConfig("hw", 1, 4)}})
	o := f.OLT("hw")
	g := client(t, o, "public")
	const rx = "1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4"
	const noReading = 2147483647
	readRx := func() map[string]int {
		t.Helper()
		pdus, err := g.BulkWalkAll(rx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, p := range pdus {
			out[p.Name[len(rx)+2:]] = p.Value.(int)
		}
		return out
	}
	before := readRx()
	var target ONU
	for _, u := range o.ONUs() {
		if u.Online {
			target = u
			break
		}
	}
	if !target.Online {
		t.Fatal("no online onu")
	}

	if err := o.SetONURxPower(target.Index, -29); err != nil {
		t.Fatal(err)
	}
	after := readRx()
	if got := after[target.Index]; got != -2900 {
		t.Errorf("rx of onu %s = %d, want -2900", target.Index, got)
	}
	if u, _ := o.ONU(target.Index); u.RxPowerDBm != -29 {
		t.Errorf("ground truth rx %v, want -29", u.RxPowerDBm)
	}
	for idx, v := range before {
		if idx != target.Index && after[idx] != v {
			t.Errorf("onu %s: rx %d, was %d", idx, after[idx], v)
		}
	}

	if err := o.SetONUOnline(target.Index, false); err != nil {
		t.Fatal(err)
	}
	if err := o.SetONURxPower(target.Index, -19.456); err != nil { // repaired while offline
		t.Fatal(err)
	}
	if got := readRx()[target.Index]; got != noReading {
		t.Errorf("offline onu %s reads %d, want no reading", target.Index, got)
	}
	if err := o.SetONUOnline(target.Index, true); err != nil {
		t.Fatal(err)
	}
	if got := readRx()[target.Index]; got != -1946 {
		t.Errorf("onu %s back reads %d, want -1946 (0.01 dB)", target.Index, got)
	}

	for _, bad := range []float64{-40.01, 10.5, math.NaN()} {
		if err := o.SetONURxPower(target.Index, bad); err == nil {
			t.Errorf("rx %v accepted", bad)
		}
	}
	if err := o.SetONURxPower("999.999", -20); err == nil {
		t.Error("unknown index accepted")
	}
	if err := o.PatchONU(target.Index, ONUPatch{}); err == nil {
		t.Error("empty patch accepted")
	}
}
