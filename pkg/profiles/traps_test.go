package profiles

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/facho-olt/facho/streams"
)

func vb(oid, value string) streams.TrapVarbind {
	return streams.TrapVarbind{OID: oid, Type: "Integer", Value: value}
}

func TestDecodeShippedTraps(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	const hwStatus = "1.3.6.1.4.1.2011.6.128.1.1.2.46.1.15"
	const vsol = "1.3.6.1.4.1.37950.1.1.5.10.12"
	uptime := vb("1.3.6.1.2.1.1.3.0", "100")
	for _, tc := range []struct {
		name, profile, trapOID string
		vbs                    []streams.TrapVarbind
		kind                   string
		pon, onu               int64 // -1: absent
		port                   string
		err                    error // nil: decoded; ErrTrapUnmapped; errAny
	}{
		{"huawei offline", "huawei-ma5800", "1.3.6.1.4.1.2011.6.128.1.1.2.0.6",
			[]streams.TrapVarbind{uptime, vb(hwStatus+".4194312448.7", "2")}, streams.TrapKindOffline, 4194312448, 7, "0/1/1:7", nil},
		{"huawei online, leading dot", "huawei-ma5800", ".1.3.6.1.4.1.2011.6.128.1.1.2.0.6",
			[]streams.TrapVarbind{vb("."+hwStatus+".4194304000.1", "1")}, streams.TrapKindOnline, 4194304000, 1, "0/0/0:1", nil},
		{"huawei dying gasp", "huawei-ma5800", "1.3.6.1.4.1.2011.6.128.1.1.2.0.22",
			[]streams.TrapVarbind{{OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3.4194304000.3", Type: "OctetString", Value: "48575443"}}, streams.TrapKindDyingGasp, 4194304000, 3, "0/0/0:3", nil},
		{"huawei status value not mapped", "huawei-ma5800", "1.3.6.1.4.1.2011.6.128.1.1.2.0.6",
			[]streams.TrapVarbind{vb(hwStatus+".4194304000.1", "9")}, "", -1, -1, "", errAny},
		{"huawei missing varbind", "huawei-ma5800", "1.3.6.1.4.1.2011.6.128.1.1.2.0.6",
			[]streams.TrapVarbind{uptime}, "", -1, -1, "", errAny},
		{"huawei index the scheme cannot read", "huawei-ma5800", "1.3.6.1.4.1.2011.6.128.1.1.2.0.6",
			[]streams.TrapVarbind{vb(hwStatus+".x.1", "2")}, "", -1, -1, "", errAny},
		{"huawei unmapped trap", "huawei-ma5800", "1.3.6.1.6.3.1.1.5.3", []streams.TrapVarbind{uptime}, "", -1, -1, "", ErrTrapUnmapped},
		{"zte los", "zte-1012", "1.3.6.1.4.1.3902.1012.3.28.2.0.1",
			[]streams.TrapVarbind{vb("1.3.6.1.4.1.3902.1012.3.28.2.1.4.268501248.5", "2")}, streams.TrapKindLOS, 268501248, 5, "", nil},
		{"fiberhome dying gasp", "fiberhome-an5516", "1.3.6.1.4.1.5875.800.3.10.0.1",
			[]streams.TrapVarbind{vb("1.3.6.1.4.1.5875.800.3.10.1.1.11."+strconv.Itoa(1<<25|2<<19|9<<8), "4")}, streams.TrapKindDyingGasp, -2, 9, "1/2:9", nil},
		{"vsol los by values", "vsol-v1600", vsol + ".0.1",
			[]streams.TrapVarbind{vb(vsol+".1.1.0", "3"), vb(vsol+".1.2.0", "12"), vb(vsol+".1.3.0", "20")}, streams.TrapKindLOS, 3, 12, "GPON0/3:12", nil},
		{"vsol pon los", "vsol-v1600", vsol + ".0.1",
			[]streams.TrapVarbind{vb(vsol+".1.1.0", "3"), vb(vsol+".1.2.0", "0"), vb(vsol+".1.3.0", "18")}, streams.TrapKindPONDown, 3, -1, "", nil},
		{"vsol onu value not a number", "vsol-v1600", vsol + ".0.1",
			[]streams.TrapVarbind{vb(vsol+".1.1.0", "3"), vb(vsol+".1.2.0", "ONU 12"), vb(vsol+".1.3.0", "20")}, "", -1, -1, "", errAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := c.Get(tc.profile)
			if !ok {
				t.Fatalf("no profile %s", tc.profile)
			}
			m, err := p.TrapDecoder().Decode(tc.trapOID, tc.vbs)
			switch {
			case tc.err == errAny:
				if err == nil || errors.Is(err, ErrTrapUnmapped) {
					t.Fatalf("Decode = %+v, %v; want a decode error", m, err)
				}
				return
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("Decode error %v, want %v", err, tc.err)
				}
				return
			case err != nil:
				t.Fatalf("Decode: %v", err)
			}
			if m.Kind != tc.kind {
				t.Errorf("kind %q, want %q", m.Kind, tc.kind)
			}
			if tc.pon >= 0 && (m.PonIndex == nil || *m.PonIndex != tc.pon) {
				t.Errorf("pon_index %v, want %d", ptr(m.PonIndex), tc.pon)
			}
			if tc.pon == -2 && m.PonIndex == nil {
				t.Errorf("no pon_index")
			}
			if (tc.onu < 0) != (m.ONUID == nil) || (m.ONUID != nil && *m.ONUID != tc.onu) {
				t.Errorf("onu_id %v, want %d", ptr(m.ONUID), tc.onu)
			}
			if tc.port != "" && m.PortName != tc.port {
				t.Errorf("port %q, want %q", m.PortName, tc.port)
			}
		})
	}
}

var errAny = errors.New("any decode error")

func ptr(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestTrapMapRefused(t *testing.T) {
	head := `id: t1
name: T
index_scheme: pon.onu
index:
  parts: [{name: pon, type: int}, {name: onu, type: int}]
  pon_index: pon
  onu_id: onu
columns:
  - {id: status, name: s, oid: 1.3.6.1.4.1.9.1, field: status, decoder: {kind: int}}
jobs: []
`
	for _, tc := range []struct{ name, traps, want string }{
		{"unknown kind", "traps:\n  - {id: a, oid: 1.3.6.1.9.0.1, kind: meltdown}\n", "kind \"meltdown\""},
		{"kind and kind_from", "traps:\n  - {id: a, oid: 1.3.6.1.9.0.1, kind: pon_down, kind_from: {oid: 1.3.6.1.9.1, enum: {\"1\": pon_up}}}\n", "want one"},
		{"no kind", "traps:\n  - {id: a, oid: 1.3.6.1.9.0.1}\n", "kind or kind_from is required"},
		{"ONU kind without locator", "traps:\n  - {id: a, oid: 1.3.6.1.9.0.1, kind: los}\n", "onu (where"},
		{"enum to a bad kind", "traps:\n  - {id: a, oid: 1.3.6.1.9.0.1, kind_from: {oid: 1.3.6.1.9.1, enum: {\"1\": up}}, onu: {index_of: 1.3.6.1.9.1}}\n", "kind \"up\""},
		{"duplicate OID", "traps:\n  - {id: a, oid: 1.3.6.1.9.0.1, kind: pon_down}\n  - {id: b, oid: .1.3.6.1.9.0.1, kind: pon_up}\n", "already mapped"},
		{"duplicate id", "traps:\n  - {id: a, oid: 1.3.6.1.9.0.1, kind: pon_down}\n  - {id: a, oid: 1.3.6.1.9.0.2, kind: pon_up}\n", "id used twice"},
		{"bad OID", "traps:\n  - {id: a, oid: enterprises.9, kind: pon_down}\n", "want a dotted OID"},
		{"both locators", "traps:\n  - {id: a, oid: 1.3.6.1.9.0.1, kind: los, onu: {index_of: 1.3.6.1.9.1, values: [1.3.6.1.9.2]}}\n", "want index_of or values"},
		{"unknown key", "traps:\n  - {id: a, oid: 1.3.6.1.9.0.1, kind: pon_down, severity: high}\n", "severity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(head+tc.traps), "test.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// The same head with a valid map parses.
	p, err := Parse([]byte(head+"traps:\n  - {id: a, oid: 1.3.6.1.9.0.1, kind: los, onu: {index_of: 1.3.6.1.4.1.9.1}}\n"), "test.yaml")
	if err != nil || len(p.Traps) != 1 {
		t.Fatalf("valid map: %v (%d traps)", err, len(p.Traps))
	}
}

// FuzzTrapDecode: whatever a peer sends, decoding returns a meaning or an
// error, never panics, and a decoded ONU kind always names an ONU.
func FuzzTrapDecode(f *testing.F) {
	c, err := Builtin()
	if err != nil {
		f.Fatal(err)
	}
	var decs []*TrapDecoder
	for _, p := range c.List() {
		decs = append(decs, p.TrapDecoder())
	}
	f.Add("1.3.6.1.4.1.2011.6.128.1.1.2.0.6", "1.3.6.1.4.1.2011.6.128.1.1.2.46.1.15.4194304000.1", "2", "", "")
	f.Add("1.3.6.1.4.1.37950.1.1.5.10.12.0.1", "1.3.6.1.4.1.37950.1.1.5.10.12.1.1.0", "3", "1.3.6.1.4.1.37950.1.1.5.10.12.1.2.0", "18446744073709551616")
	f.Add("1.3.6.1.4.1.5875.800.3.10.0.1", "1.3.6.1.4.1.5875.800.3.10.1.1.11.", "4", "..", "\x00")
	f.Fuzz(func(t *testing.T, trapOID, oid1, v1, oid2, v2 string) {
		vbs := []streams.TrapVarbind{{OID: oid1, Value: v1}, {OID: oid2, Value: v2}}
		for _, d := range decs {
			m, err := d.Decode(trapOID, vbs)
			if err != nil {
				continue
			}
			if !streams.ValidTrapKind(m.Kind) {
				t.Fatalf("%s: decoded kind %q", d.Profile(), m.Kind)
			}
			if streams.TrapONUStatus(m.Kind) != "" && (m.PonIndex == nil || m.ONUID == nil) {
				t.Fatalf("%s: kind %s without an ONU: %+v", d.Profile(), m.Kind, m)
			}
		}
	})
}
