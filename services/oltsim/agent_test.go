package oltsim

import (
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
)

const huaweiBase = ".1.3.6.1.4.1.2011.6.128.1.1.2"

func TestHuaweiWalkMatchesONUs(t *testing.T) {
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{huaweiConfig("hw1", 2, 16)}})
	o := f.OLT("hw1")
	onus := o.ONUs()
	if len(onus) != 32 {
		t.Fatalf("ONUs() = %d rows, want 32", len(onus))
	}
	g := client(t, o, "public")

	serials := map[string]string{}
	descs := map[string]string{}
	status := map[string]int{}
	rx := map[string]int{}
	walk := func(col string, fn func(idx string, p gosnmp.SnmpPDU)) {
		t.Helper()
		prefix := huaweiBase + col + "."
		pdus, err := g.BulkWalkAll(huaweiBase + col)
		if err != nil {
			t.Fatalf("walk %s: %v", col, err)
		}
		for _, p := range pdus {
			fn(strings.TrimPrefix(p.Name, prefix), p)
		}
	}
	walk(".43.1.3", func(idx string, p gosnmp.SnmpPDU) {
		b := p.Value.([]byte)
		serials[idx] = string(b[:4]) + strings.ToUpper(hex.EncodeToString(b[4:]))
	})
	walk(".43.1.9", func(idx string, p gosnmp.SnmpPDU) { descs[idx] = string(p.Value.([]byte)) })
	walk(".46.1.15", func(idx string, p gosnmp.SnmpPDU) { status[idx] = p.Value.(int) })
	walk(".51.1.4", func(idx string, p gosnmp.SnmpPDU) { rx[idx] = p.Value.(int) })

	offline := 0
	for _, u := range onus {
		idx := fmt.Sprintf("%d.%d", u.PonIndex, u.ID)
		if idx != u.Index {
			t.Errorf("Index %q, want %q", u.Index, idx)
		}
		if want := int64(4194304000 + u.Slot*8192 + u.Port*256); u.PonIndex != want {
			t.Errorf("PonIndex %d want %d", u.PonIndex, want)
		}
		if serials[idx] != u.Serial || !strings.HasPrefix(u.Serial, "HWTC") || len(u.Serial) != 12 {
			t.Errorf("%s serial %q, ONUs() %q", idx, serials[idx], u.Serial)
		}
		if descs[idx] != u.Description {
			t.Errorf("%s desc %q, want %q", idx, descs[idx], u.Description)
		}
		wantStatus := 2
		if u.Online {
			wantStatus = 1
		}
		if status[idx] != wantStatus {
			t.Errorf("%s status %d want %d", idx, status[idx], wantStatus)
		}
		if u.Online {
			if got := float64(rx[idx]) / 100; math.Abs(got-u.RxPowerDBm) > 0.001 || got > -8 || got < -27 {
				t.Errorf("%s rx %v want %v", idx, got, u.RxPowerDBm)
			}
		} else {
			offline++
			if rx[idx] != 2147483647 || !math.IsNaN(u.RxPowerDBm) {
				t.Errorf("%s offline rx %d / %v", idx, rx[idx], u.RxPowerDBm)
			}
		}
	}
	if offline == 0 || offline > 12 {
		t.Errorf("offline ONUs %d of 32, want a few", offline)
	}
	if len(serials) != 32 || len(descs) != 32 {
		t.Errorf("walk rows: %d serials %d descs", len(serials), len(descs))
	}

	// GET and GETNEXT of a known row.
	u := onus[3]
	r, err := g.Get([]string{huaweiBase + ".43.1.9." + u.Index, ".1.3.6.1.2.1.1.5.0"})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got := string(r.Variables[0].Value.([]byte)); got != u.Description {
		t.Errorf("GET desc %q want %q", got, u.Description)
	}
	if got := string(r.Variables[1].Value.([]byte)); got != "hw1" {
		t.Errorf("sysName %q", got)
	}
	r, err = g.GetNext([]string{huaweiBase + ".43.1.9." + onus[2].Index})
	if err != nil {
		t.Fatalf("getnext: %v", err)
	}
	if r.Variables[0].Name != huaweiBase+".43.1.9."+u.Index {
		t.Errorf("GETNEXT name %s", r.Variables[0].Name)
	}
}

func TestDeterministicFromSeed(t *testing.T) {
	a := startFleet(t, FleetConfig{OLTs: []OLTConfig{huaweiConfig("a", 2, 16)}}).OLT("a").ONUs()
	b := startFleet(t, FleetConfig{OLTs: []OLTConfig{huaweiConfig("a", 2, 16)}}).OLT("a").ONUs()
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("same seed gave different ONUs")
	}
	c := huaweiConfig("a", 2, 16)
	c.Seed = 7
	d := startFleet(t, FleetConfig{OLTs: []OLTConfig{c}}).OLT("a").ONUs()
	if fmt.Sprint(a) == fmt.Sprint(d) {
		t.Fatal("different seed gave the same ONUs")
	}
}

func TestExceptions(t *testing.T) {
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{huaweiConfig("hw", 1, 4)}})
	g := client(t, f.OLT("hw"), "public")
	tests := []struct {
		oid  string
		want gosnmp.Asn1BER
	}{
		{".1.3.6.1.2.1.1.1.0", gosnmp.OctetString},
		{".1.3.6.1.2.1.1.3.0", gosnmp.TimeTicks},
		{".1.3.6.1.2.1.1.1.1", gosnmp.NoSuchInstance},
		{".1.3.6.1.2.1.1.1", gosnmp.NoSuchInstance},
		{".1.3.6.1.2.1.1", gosnmp.NoSuchObject},
		{".1.3.6.1.2.1.1.99.0", gosnmp.NoSuchObject},
		{huaweiBase + ".43.1.9.4194312192.99", gosnmp.NoSuchInstance},
		{huaweiBase + ".43.1.99.4194312192.0", gosnmp.NoSuchObject},
		{".1.3.6.1.2.1.2.2.1.2.4194312192", gosnmp.OctetString},
		{".1.3.6.1.2.1.2.2.1.2.5", gosnmp.NoSuchInstance},
		{".1.9", gosnmp.NoSuchObject},
	}
	for _, tc := range tests {
		t.Run(tc.oid, func(t *testing.T) {
			r, err := g.Get([]string{tc.oid})
			if err != nil {
				t.Fatal(err)
			}
			if v := r.Variables[0]; v.Type != tc.want || v.Name != tc.oid {
				t.Errorf("got %s %v, want %v", v.Name, v.Type, tc.want)
			}
		})
	}
	r, err := g.GetNext([]string{".1.9"})
	if err != nil {
		t.Fatal(err)
	}
	if v := r.Variables[0]; v.Type != gosnmp.EndOfMibView || v.Name != ".1.9" {
		t.Errorf("GETNEXT past end: %s %v", v.Name, v.Type)
	}
	// GETBULK: non-repeaters and max-repetitions honoured.
	r, err = g.GetBulk([]string{".1.3.6.1.2.1.1.1.0", ".1.3.6.1.2.1.1.4", huaweiBase + ".43.1.9"}, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range r.Variables {
		names = append(names, v.Name)
	}
	want := []string{".1.3.6.1.2.1.1.2.0",
		".1.3.6.1.2.1.1.4.0", huaweiBase + ".43.1.9.4194312192.0",
		".1.3.6.1.2.1.1.5.0", huaweiBase + ".43.1.9.4194312192.1",
		".1.3.6.1.2.1.1.6.0", huaweiBase + ".43.1.9.4194312192.2"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("GETBULK names\n got %v\nwant %v", names, want)
	}
	// GETBULK past the end repeats endOfMibView once and stops.
	r, err = g.GetBulk([]string{".1.9"}, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Variables) != 1 || r.Variables[0].Type != gosnmp.EndOfMibView {
		t.Errorf("GETBULK past end: %v", r.Variables)
	}
}

func TestWrongCommunityTimesOut(t *testing.T) {
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{huaweiConfig("hw", 1, 2)}})
	g := client(t, f.OLT("hw"), "private")
	g.Timeout = 300 * time.Millisecond
	if _, err := g.Get([]string{".1.3.6.1.2.1.1.1.0"}); err == nil {
		t.Fatal("wrong community answered")
	}
	rec := f.OLT("hw").Record()
	if rec.Requests != 1 || rec.Dropped != 1 || rec.Responses != 0 {
		t.Errorf("record %+v", rec)
	}
}

func TestTooBigAndTruncation(t *testing.T) {
	c := huaweiConfig("hw", 1, 64)
	c.MaxResponseBytes = 484
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{c}})
	g := client(t, f.OLT("hw"), "public")
	r, err := g.GetBulk([]string{huaweiBase + ".43.1.9"}, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.Variables); n == 0 || n >= 50 {
		t.Errorf("GETBULK not truncated: %d varbinds", n)
	}
	oids := make([]string, 0, 40)
	for i := 0; i < 40; i++ {
		oids = append(oids, fmt.Sprintf("%s.43.1.9.4194312192.%d", huaweiBase, i))
	}
	g.MaxOids = 100
	r, err = g.Get(oids)
	if err != nil || r.Error != gosnmp.TooBig || r.ErrorIndex != 0 || len(r.Variables) != 0 {
		t.Errorf("GET of 40 rows: err %v, response %+v", err, r)
	}
	// A full walk still works through truncated responses.
	pdus, err := g.BulkWalkAll(huaweiBase + ".43.1.9")
	if err != nil || len(pdus) != 64 {
		t.Errorf("walk: %d rows, %v", len(pdus), err)
	}
}

func TestConcurrencyRecord(t *testing.T) {
	tests := []struct {
		name    string
		walkers int
		check   func(max int) bool
	}{
		{"one walker", 1, func(m int) bool { return m == 1 }},
		{"two walkers", 2, func(m int) bool { return m >= 2 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := huaweiConfig("hw", 1, 32)
			c.Faults.Latency = 2 * time.Millisecond
			f := startFleet(t, FleetConfig{OLTs: []OLTConfig{c}})
			o := f.OLT("hw")
			var wg sync.WaitGroup
			for i := 0; i < tc.walkers; i++ {
				g := client(t, o, "public")
				g.MaxRepetitions = 5
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := g.BulkWalkAll(huaweiBase + ".43.1"); err != nil {
						t.Errorf("walk: %v", err)
					}
				}()
			}
			wg.Wait()
			rec := o.Record()
			if !tc.check(rec.MaxConcurrent) {
				t.Errorf("MaxConcurrent %d with %d walkers", rec.MaxConcurrent, tc.walkers)
			}
			if rec.Requests != rec.Responses || rec.Requests < 20 || rec.InFlight != 0 {
				t.Errorf("record %d req %d resp %d in flight", rec.Requests, rec.Responses, rec.InFlight)
			}
			if len(rec.Timeline) != 2*rec.Requests || len(rec.PerSecond) == 0 {
				t.Errorf("timeline %d samples, %d buckets", len(rec.Timeline), len(rec.PerSecond))
			}
			o.ResetRecord()
			if r := o.Record(); r.Requests != 0 || r.MaxConcurrent != 0 {
				t.Errorf("after reset: %+v", r)
			}
		})
	}
}

func TestFleetOfSeveral(t *testing.T) {
	var cfg FleetConfig
	for i := 0; i < 5; i++ {
		c := huaweiConfig(fmt.Sprintf("olt-%d", i), 1, 8)
		c.Seed = int64(i)
		cfg.OLTs = append(cfg.OLTs, c)
	}
	f := startFleet(t, cfg)
	ports := map[int]bool{}
	for _, o := range f.OLTs() {
		ports[o.Addr().Port] = true
		g := client(t, o, "public")
		r, err := g.Get([]string{".1.3.6.1.2.1.1.5.0"})
		if err != nil {
			t.Fatalf("%s: %v", o.Name(), err)
		}
		if got := string(r.Variables[0].Value.([]byte)); got != o.Name() {
			t.Errorf("sysName %q want %q", got, o.Name())
		}
	}
	if len(ports) != 5 {
		t.Errorf("ports %v", ports)
	}
	if _, err := Start(t.Context(), FleetConfig{OLTs: []OLTConfig{cfg.OLTs[0], cfg.OLTs[0]}}, testLogger()); err == nil {
		t.Error("duplicate names accepted")
	}
}

func TestSetAndGarbage(t *testing.T) {
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{huaweiConfig("hw", 1, 2)}})
	o := f.OLT("hw")
	g := client(t, o, "public")
	r, err := g.Set([]gosnmp.SnmpPDU{{Name: ".1.3.6.1.2.1.1.5.0", Type: gosnmp.OctetString, Value: "x"}})
	if err != nil || r.Error != gosnmp.NotWritable || r.ErrorIndex != 1 {
		t.Errorf("SET: %v %+v", err, r)
	}
	conn, err := net.DialUDP("udp", nil, o.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, msg := range [][]byte{{0x30, 0x03, 0x02}, {0xff, 0xff}, {}, getBulkMessage(t, "public", mustOID("1.3"), 1)[:20]} {
		if _, err := conn.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	// The agent survives and keeps answering.
	if _, err := g.Get([]string{".1.3.6.1.2.1.1.5.0"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if rec := o.Record(); rec.Dropped != 4 {
		t.Errorf("dropped %d, want 4 (record %+v)", rec.Dropped, rec)
	}
}

func TestUptimeAdvances(t *testing.T) {
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{huaweiConfig("hw", 1, 1)}})
	g := client(t, f.OLT("hw"), "public")
	get := func() uint32 {
		r, err := g.Get([]string{".1.3.6.1.2.1.1.3.0"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Variables[0].Value.(uint32)
	}
	a := get()
	time.Sleep(40 * time.Millisecond)
	if b := get(); b < a+3 {
		t.Errorf("sysUpTime %d then %d", a, b)
	}
}
