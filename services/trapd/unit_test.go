package trapd

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/profiles"
)

func TestLimiter(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for _, tc := range []struct {
		name        string
		rate        float64
		burst, max  int
		steps       []netip.Addr
		at          []time.Duration
		wantAllowed []bool
	}{
		{"burst then refused", 1, 2, 10, []netip.Addr{a, a, a}, []time.Duration{0, 0, 0}, []bool{true, true, false}},
		{"refilled by time", 1, 1, 10, []netip.Addr{a, a, a}, []time.Duration{0, 0, time.Second}, []bool{true, false, true}},
		{"another source has its own bucket", 1, 1, 10, []netip.Addr{a, a, b}, []time.Duration{0, 0, 0}, []bool{true, false, true}},
		{"beyond the bound: one shared bucket", 1, 1, 1, []netip.Addr{a, b, netip.MustParseAddr("192.0.2.3")}, []time.Duration{0, 0, 0}, []bool{true, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(tc.rate, tc.burst, tc.max)
			for i, addr := range tc.steps {
				if got := l.allow(addr, t0.Add(tc.at[i])); got != tc.wantAllowed[i] {
					t.Fatalf("step %d (%s): allowed %v, want %v", i, addr, got, tc.wantAllowed[i])
				}
			}
			if l.sources() > tc.max {
				t.Fatalf("%d sources tracked, bound %d", l.sources(), tc.max)
			}
		})
	}
}

func TestV1TrapOID(t *testing.T) {
	for _, tc := range []struct {
		enterprise        string
		generic, specific int
		want              string
	}{
		{".1.3.6.1.4.1.2011.6.128.1.1.2", 6, 22, "1.3.6.1.4.1.2011.6.128.1.1.2.0.22"},
		{"1.3.6.1.4.1.9", 2, 0, "1.3.6.1.6.3.1.1.5.3"}, // linkDown
		{"1.3.6.1.4.1.9", 0, 0, "1.3.6.1.6.3.1.1.5.1"}, // coldStart
	} {
		if got := v1TrapOID(tc.enterprise, tc.generic, tc.specific); got != tc.want {
			t.Errorf("v1TrapOID(%s, %d, %d) = %s, want %s", tc.enterprise, tc.generic, tc.specific, got, tc.want)
		}
	}
}

func TestVarbindRendering(t *testing.T) {
	for _, tc := range []struct {
		pdu     gosnmp.SnmpPDU
		value   string
		hex, ok bool
	}{
		{gosnmp.SnmpPDU{Name: ".1.3.6.1.2.1.1.3.0", Type: gosnmp.TimeTicks, Value: uint32(42)}, "42", false, true},
		{gosnmp.SnmpPDU{Name: ".1.3.6", Type: gosnmp.Integer, Value: -5}, "-5", false, true},
		{gosnmp.SnmpPDU{Name: ".1.3.6", Type: gosnmp.OctetString, Value: []byte("ONU 0/1:5 LOS")}, "ONU 0/1:5 LOS", false, true},
		{gosnmp.SnmpPDU{Name: ".1.3.6", Type: gosnmp.OctetString, Value: []byte{0x48, 0x57, 0x00, 0xff}}, "485700ff", true, true},
		{gosnmp.SnmpPDU{Name: ".1.3.6", Type: gosnmp.ObjectIdentifier, Value: ".1.3.6.1"}, "1.3.6.1", false, true},
		{gosnmp.SnmpPDU{Name: ".1.3.6", Type: gosnmp.OctetString, Value: make([]byte, 2000)}, "", false, false},
	} {
		tv, ok := varbind(tc.pdu)
		if ok != tc.ok || (ok && (tv.Value != tc.value || tv.Hex != tc.hex)) {
			t.Errorf("varbind(%v) = %+v %v, want %q hex %v ok %v", tc.pdu.Value, tv, ok, tc.value, tc.hex, tc.ok)
		}
	}
}

// FuzzAccept: any datagram from a configured OLT's address is published
// or dropped with a reason; the receiver never panics.
func FuzzAccept(f *testing.F) {
	cat, err := profiles.Builtin()
	if err != nil {
		f.Fatal(err)
	}
	p, _ := cat.Get("huawei-ma5800")
	src := netip.MustParseAddrPort("192.0.2.1:40000")
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, func() float64 { return 0 })
	if err != nil {
		f.Fatal(err)
	}
	dir := newDirectory(nil, cat, zerolog.Nop())
	dir.cur.Store(&snapshot{byIP: map[netip.Addr][]*oltEntry{src.Addr(): {{id: "olt-1", community: []byte(community), decoder: p.TrapDecoder()}}}, olts: 1})
	r := &receiver{cfg: Config{MaxPacket: 8192, Instance: "fuzz"}.WithDefaults(), dir: dir, lim: newLimiter(1e9, 1e9, 10),
		logs: newLogThrottle(time.Hour), log: zerolog.Nop(), m: m}
	f.Add(v2cTrap(f, community, hwStateTrap, false, intVB(hwRunStatus+".4194304000.1", 2)))
	f.Add(v2cTrap(f, community, hwStateTrap, true, intVB(hwRunStatus+".17.1", 2)))
	f.Add(v1Trap(f, community, "1.3.6.1.4.1.2011.6.128.1.1.2", 22, intVB(hwSerial+".4194304000.1", 1)))
	f.Add([]byte{0x30, 0x03, 0x02, 0x01, 0x01})
	g := &gosnmp.GoSNMP{}
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, pkt []byte) {
		v := r.accept(g, pkt, len(pkt) > 8192, src, now)
		if v.drop == "" {
			if v.received == nil || v.received.Validate() != nil {
				t.Fatalf("accepted without a valid raw event: %+v", v.received)
			}
			if v.decoded != nil && v.decoded.Validate() != nil {
				t.Fatalf("invalid decoded event: %v", v.decoded.Validate())
			}
		}
	})
}
