package oltsim

import (
	"sync"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
)

// faultRun is what one fault scenario observed.
type faultRun struct {
	ok, failed int
	start, end time.Time
	rec        Record
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name   string
		faults Faults
		n      int
		check  func(t *testing.T, r faultRun)
	}{
		{"latency", Faults{Latency: 30 * time.Millisecond}, 3, func(t *testing.T, r faultRun) {
			if el := r.end.Sub(r.start); r.ok != 3 || el < 90*time.Millisecond {
				t.Errorf("ok %d elapsed %v", r.ok, el)
			}
		}},
		{"no answer", Faults{NoAnswer: true}, 2, func(t *testing.T, r faultRun) {
			if r.ok != 0 || r.rec.Dropped != r.rec.Requests || r.rec.Requests == 0 {
				t.Errorf("ok %d record %+v", r.ok, r.rec)
			}
		}},
		{"loss 50%", Faults{LossPercent: 50}, 24, func(t *testing.T, r faultRun) {
			if r.ok < 4 || r.failed < 4 {
				t.Errorf("ok %d failed %d", r.ok, r.failed)
			}
		}},
		{"max rps", Faults{MaxRPS: 5}, 16, func(t *testing.T, r faultRun) {
			// The cap is per wall-clock second: at most 5 answers in each
			// second the run touched (16 quick requests touch two at most).
			touched := int(r.end.Unix()-r.start.Unix()) + 1
			if r.ok > 5*touched || r.failed < 16-5*touched || touched > 2 {
				t.Errorf("ok %d failed %d over %d wall-clock seconds", r.ok, r.failed, touched)
			}
		}},
		// The scenario's GET carries one varbind: under a limit of 1 it is
		// answered; TestMaxVarbinds checks what is over it.
		{"max varbinds not reached", Faults{MaxVarbinds: 1}, 3, func(t *testing.T, r faultRun) {
			if r.ok != 3 || r.rec.Dropped != 0 {
				t.Errorf("ok %d record %+v", r.ok, r.rec)
			}
		}},
		{"malformed", Faults{MalformedPercent: 100}, 3, func(t *testing.T, r faultRun) {
			if r.ok != 0 || r.rec.Responses != r.rec.Requests {
				t.Errorf("ok %d record %+v", r.ok, r.rec)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := startFleet(t, FleetConfig{OLTs: []OLTConfig{huaweiConfig("hw", 1, 4)}})
			o := f.OLT("hw")
			o.SetFaults(tc.faults)
			if got := o.Faults(); got != tc.faults {
				t.Fatalf("Faults() %+v", got)
			}
			g := client(t, o, "public")
			g.Timeout = 100 * time.Millisecond
			g.Retries = 0
			ok, failed := 0, 0
			start := time.Now()
			for i := 0; i < tc.n; i++ {
				if _, err := g.Get([]string{".1.3.6.1.2.1.1.5.0"}); err != nil {
					failed++
				} else {
					ok++
				}
			}
			end := time.Now()
			time.Sleep(20 * time.Millisecond)
			tc.check(t, faultRun{ok: ok, failed: failed, start: start, end: end, rec: o.Record()})
			// Faults can be cleared while running.
			o.SetFaults(Faults{})
			g.Timeout = time.Second
			if _, err := g.Get([]string{".1.3.6.1.2.1.1.5.0"}); err != nil && tc.faults.MaxRPS == 0 {
				t.Errorf("after clearing faults: %v", err)
			}
		})
	}
}

// An agent that times out on PDUs larger than N varbinds: a GET of N is
// answered, a GET of N+1 is not, and neither is a GETBULK asking for N+1.
func TestMaxVarbinds(t *testing.T) {
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{huaweiConfig("hw", 1, 4)}})
	o := f.OLT("hw")
	o.SetFaults(Faults{MaxVarbinds: 3})
	g := client(t, o, "public")
	g.Timeout = 100 * time.Millisecond
	g.Retries = 0
	oids := []string{".1.3.6.1.2.1.1.1.0", ".1.3.6.1.2.1.1.3.0", ".1.3.6.1.2.1.1.5.0", ".1.3.6.1.2.1.1.2.0"}
	if pkt, err := g.Get(oids[:3]); err != nil || len(pkt.Variables) != 3 {
		t.Fatalf("GET of 3 under a limit of 3: %v", err)
	}
	if _, err := g.Get(oids); err == nil {
		t.Fatal("GET of 4 under a limit of 3 was answered")
	}
	if _, err := g.GetBulk(oids, 0, 1); err == nil {
		t.Fatal("GETBULK of 4 varbinds under a limit of 3 was answered")
	}
	if rec := o.Record(); rec.Requests != 3 || rec.Dropped != 2 {
		t.Errorf("record %+v, want 3 requests, 2 dropped", rec)
	}
}

// OIDNotIncreasing: GETNEXT and GETBULK answer the OIDs asked, GET is
// answered normally; off again, GETNEXT moves on.
func TestOIDNotIncreasing(t *testing.T) {
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{huaweiConfig("hw", 1, 4)}})
	o := f.OLT("hw")
	g := client(t, o, "public")
	const sysDescr, sysObjectID = ".1.3.6.1.2.1.1.1.0", ".1.3.6.1.2.1.1.2.0"
	o.SetFaults(Faults{OIDNotIncreasing: true})
	for name, ask := range map[string]func() (*gosnmp.SnmpPacket, error){
		"getnext": func() (*gosnmp.SnmpPacket, error) { return g.GetNext([]string{sysDescr}) },
		"getbulk": func() (*gosnmp.SnmpPacket, error) { return g.GetBulk([]string{sysDescr}, 0, 10) },
	} {
		pkt, err := ask()
		if err != nil || pkt.Error != gosnmp.NoError || len(pkt.Variables) != 1 {
			t.Fatalf("%s: %v %+v", name, err, pkt)
		}
		if vb := pkt.Variables[0]; vb.Name != sysDescr || vb.Type != gosnmp.Integer {
			t.Errorf("%s answered %s, want %s echoed as an Integer", name, pduString(vb), sysDescr)
		}
	}
	if pkt, err := g.Get([]string{sysDescr}); err != nil || pkt.Variables[0].Type != gosnmp.OctetString {
		t.Errorf("get under the fault: %v %+v", err, pkt)
	}
	o.SetFaults(Faults{})
	if pkt, err := g.GetNext([]string{sysDescr}); err != nil || pkt.Variables[0].Name != sysObjectID {
		t.Errorf("getnext without the fault: %v %+v", err, pkt)
	}
}

func TestSlowdownPerConcurrent(t *testing.T) {
	c := huaweiConfig("hw", 1, 4)
	c.Faults = Faults{Latency: 5 * time.Millisecond, SlowdownPerConcurrent: 40 * time.Millisecond}
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{c}})
	o := f.OLT("hw")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	for i := 0; i < 4; i++ {
		g := client(t, o, "public")
		wg.Add(1)
		go func(g *gosnmp.GoSNMP) {
			defer wg.Done()
			s := time.Now()
			if _, err := g.Get([]string{".1.3.6.1.2.1.1.5.0"}); err != nil {
				t.Error(err)
			}
			mu.Lock()
			slowest = max(slowest, time.Since(s))
			mu.Unlock()
		}(g)
	}
	wg.Wait()
	if rec := o.Record(); rec.MaxConcurrent >= 2 && slowest < 45*time.Millisecond {
		t.Errorf("max concurrent %d but slowest request %v", rec.MaxConcurrent, slowest)
	}
}

func TestCorruptIsUndecodable(t *testing.T) {
	msg := []byte{0x30, 0x0a, 0x02, 0x01, 0x01, 0x04, 0x01, 'p', 0xa2, 0x02, 0x30, 0x00}
	for bits := uint64(0); bits < 8; bits++ {
		var r request
		c := corrupt(msg, bits)
		d := decoder{b: c}
		tag, body, err := d.next()
		if err == nil && tag == tagSequence && len(body) == len(msg)-2 && d.pos == len(c) {
			if parseRequest(c, &r) == nil {
				t.Errorf("bits %d: corrupt message still decodes: %x", bits, c)
			}
		}
	}
}
