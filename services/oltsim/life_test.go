package oltsim

import (
	"fmt"
	"testing"
	"time"
)

func lifeConfig() OLTConfig {
	c := huaweiConfig("hw", 2, 16)
	c.Life = Life{OfflinePercent: 10, OnlinePercent: 30, RxDriftDBm: 0.5, AddPercent: 50, RemovePercent: 50}
	return c
}

func TestLifeIsDeterministic(t *testing.T) {
	run := func() []string {
		f := startFleet(t, FleetConfig{OLTs: []OLTConfig{lifeConfig()}})
		o := f.OLT("hw")
		var states []string
		for i := 0; i < 5; i++ {
			o.Tick()
			states = append(states, fmt.Sprint(o.ONUs()))
		}
		return states
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("tick %d differs between runs", i+1)
		}
	}
	if a[0] == a[4] {
		t.Error("life changed nothing in 5 ticks")
	}
}

func TestLifeChangesServedTable(t *testing.T) {
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{lifeConfig()}})
	o := f.OLT("hw")
	before := o.ONUs()
	g := client(t, o, "public")
	for i := 0; i < 10; i++ {
		o.Tick()
	}
	after := o.ONUs()
	pdus, err := g.BulkWalkAll(huaweiBase + ".46.1.15")
	if err != nil {
		t.Fatal(err)
	}
	if len(pdus) != len(after) {
		t.Fatalf("walk %d rows, ONUs() %d", len(pdus), len(after))
	}
	for i, p := range pdus {
		want := 2
		if after[i].Online {
			want = 1
		}
		if p.Name != huaweiBase+".46.1.15."+after[i].Index || p.Value.(int) != want {
			t.Errorf("row %d: %s=%v, want %s=%d", i, p.Name, p.Value, after[i].Index, want)
		}
	}
	changed := 0
	for i := range min(len(before), len(after)) {
		if before[i] != after[i] && !(before[i].RxPowerDBm != before[i].RxPowerDBm) {
			changed++
		}
	}
	if changed == 0 && len(before) == len(after) {
		t.Error("nothing changed")
	}
	for _, u := range after {
		if u.Online && (u.RxPowerDBm > -8 || u.RxPowerDBm < -28) {
			t.Errorf("rx out of range: %v", u.RxPowerDBm)
		}
	}
}

func TestLifeOffByDefaultAndReboot(t *testing.T) {
	c := huaweiConfig("hw", 1, 8)
	c.Life.Interval = 5 * time.Millisecond // interval without rates: still off
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{c}})
	o := f.OLT("hw")
	before := fmt.Sprint(o.ONUs())
	time.Sleep(30 * time.Millisecond)
	if fmt.Sprint(o.ONUs()) != before {
		t.Error("ONUs changed with life off")
	}
	g := client(t, o, "public")
	time.Sleep(50 * time.Millisecond)
	up := func() uint32 {
		r, err := g.Get([]string{".1.3.6.1.2.1.1.3.0"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Variables[0].Value.(uint32)
	}
	u1 := up()
	if u1 < 4 {
		t.Errorf("uptime %d ticks after 80ms", u1)
	}
	o.Reboot()
	if u2 := up(); u2 >= u1 {
		t.Errorf("uptime after reboot %d, before %d", u2, u1)
	}
}

func TestLifeAutomaticTicks(t *testing.T) {
	c := lifeConfig()
	c.Life.Interval = 5 * time.Millisecond
	c.Life.RebootPercent = 100
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{c}})
	o := f.OLT("hw")
	before := fmt.Sprint(o.ONUs())
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && fmt.Sprint(o.ONUs()) == before {
		time.Sleep(5 * time.Millisecond)
	}
	if fmt.Sprint(o.ONUs()) == before {
		t.Error("automatic ticks changed nothing")
	}
	if o.Uptime() > time.Second {
		t.Errorf("uptime %v with reboot every tick", o.Uptime())
	}
}
