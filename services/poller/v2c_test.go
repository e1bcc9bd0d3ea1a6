package poller

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gosnmp/gosnmp"

	"github.com/facho-olt/facho/streams"
)

// v2cSeeds are responses of every type the fast decoder handles and some
// it leaves to gosnmp.
func v2cSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	resp := func(id uint32, errStatus gosnmp.SNMPError, vars ...gosnmp.SnmpPDU) []byte {
		p := &gosnmp.SnmpPacket{Version: gosnmp.Version2c, Community: "public", PDUType: gosnmp.GetResponse, RequestID: id,
			Error: errStatus, ErrorIndex: 1, Variables: vars}
		b, err := p.MarshalMsg()
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	const col = ".1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3.4194304000.0"
	many := make([]gosnmp.SnmpPDU, 0, 60)
	for i := 0; i < 60; i++ {
		many = append(many, gosnmp.SnmpPDU{Name: col + "." + strings.Repeat("1", i%9+1), Type: gosnmp.Integer, Value: -i * 1000})
	}
	oid := tlv(0x06, 0x2b, 6, 1, 2, 1, 1, 1, 0)
	return [][]byte{
		resp(7, gosnmp.NoError,
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.OctetString, Value: []byte{'H', 'W', 'T', 'C', 0x1a, 0, 0xff, 0x10}},
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.OctetString, Value: []byte{}},
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.Integer, Value: -1047},
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.Integer, Value: math.MinInt32},
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.ObjectIdentifier, Value: ".1.3.6.1.4.1.2011"},
			gosnmp.SnmpPDU{Name: ".2.999.4294967295", Type: gosnmp.IPAddress, Value: "10.0.0.1"},
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.Counter32, Value: uint32(4294967295)},
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.Gauge32, Value: uint32(7)},
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.TimeTicks, Value: uint32(123456)},
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.Counter64, Value: uint64(math.MaxUint64)},
		),
		resp(0x7fffffff, gosnmp.TooBig,
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.Null},
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.NoSuchObject},
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.NoSuchInstance},
			gosnmp.SnmpPDU{Name: col, Type: gosnmp.EndOfMibView},
		),
		resp(1, gosnmp.NoError, many...),
		resp(2, gosnmp.GenErr),
		rawResponse(tlv(0x30, oid, tlv(0x44, 0x9f, 0x78, 4, 0x41, 0x20, 0, 0))),
		rawResponse(tlv(0x30, oid, tlv(0x03, 7, 0x80))),
		rawResponse(tlv(0x30, oid, tlv(0x02, 0, 0, 0, 0, 0, 0, 0, 0, 1))),
		rawResponse(tlv(0x30, oid, tlv(0x02, 0x80, 0, 0, 0, 0, 0, 0, 0))),
		rawResponse(tlv(0x30, oid, tlv(0x41, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))),
		rawResponse(tlv(0x30, tlv(0x06, 0x2b, 0x80, 6), tlv(0x05))),
		rawResponse(tlv(0x30, oid, tlv(0x40, 1, 2, 3))),
		{0x30, 0x00},
	}
}

// The fast decoder gives what gosnmp's decoder and toVarbind give, for
// every response it decodes itself.
func FuzzV2CDecodeMatchesGosnmp(f *testing.F) {
	for _, s := range v2cSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast, slow v2cClient
		id, err := fast.decodeFast(b)
		if err != nil {
			return // left to gosnmp: the same by construction
		}
		sid, serr := slow.decodeGosnmp(b)
		if serr != nil {
			t.Fatalf("fast decoded %x, gosnmp says %v", b, serr)
		}
		if id != sid || fast.resp.Error != slow.resp.Error || fast.resp.ErrorIndex != slow.resp.ErrorIndex {
			t.Fatalf("%x: id %d/%d error %v/%v index %d/%d", b, id, sid, fast.resp.Error, slow.resp.Error, fast.resp.ErrorIndex, slow.resp.ErrorIndex)
		}
		if len(fast.resp.Variables) != len(slow.resp.Variables) || (len(fast.resp.Variables) > 0 && !reflect.DeepEqual(fast.resp.Variables, slow.resp.Variables)) {
			t.Fatalf("%x:\nfast %+v\ngosnmp %+v", b, fast.resp.Variables, slow.resp.Variables)
		}
		checkMatched(t, b, slow.resp.Variables)
	})
}

// checkMatched decodes b as the answer to a GetBER of exactly the names
// gosnmp read in it (Matched: the same values, no OID rendered) and of
// other names (not Matched: the same as without GetBER).
func checkMatched(t *testing.T, b []byte, want []streams.Varbind) {
	t.Helper()
	if len(want) == 0 {
		return
	}
	bers := make([][]byte, len(want))
	for i, v := range want {
		ber, err := appendOID(nil, v.OID)
		if err != nil {
			t.Fatalf("%x: answered oid %q does not encode: %v", b, v.OID, err)
		}
		bers[i] = ber
	}
	m := v2cClient{berOIDs: bers}
	if _, err := m.decodeFast(b); err != nil || !m.resp.Matched {
		t.Fatalf("%x asked as answered: err %v matched %v", b, err, m.resp.Matched)
	}
	for i, v := range m.resp.Variables {
		if v.OID != "" || v.Type != want[i].Type || v.Value != want[i].Value {
			t.Fatalf("%x matched varbind %d: %+v, want %+v without oid", b, i, v, want[i])
		}
	}
	other := append([][]byte(nil), bers...)
	other[len(other)-1] = append(append([]byte(nil), other[len(other)-1]...), 1)
	m = v2cClient{berOIDs: other}
	if _, err := m.decodeFast(b); err != nil || m.resp.Matched || !reflect.DeepEqual(m.resp.Variables, want) {
		t.Fatalf("%x asked otherwise: err %v matched %v %+v", b, err, m.resp.Matched, m.resp.Variables)
	}
	m = v2cClient{berOIDs: bers[:len(bers)-1]}
	if _, err := m.decodeFast(b); err != nil || m.resp.Matched {
		t.Fatalf("%x asked one less: err %v matched %v", b, err, m.resp.Matched)
	}
}

// GetBER's request is Get's for the same OIDs.
func TestV2CEncodeBER(t *testing.T) {
	oids := []string{".1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3.4194304000.0", "1.3.6.1.2.1.1.1.0", ".2.999.4294967295"}
	a := &v2cClient{community: "public"}
	if err := a.encode(pduGet, 9, oids, 0, 0); err != nil {
		t.Fatal(err)
	}
	b := &v2cClient{community: "public"}
	for _, o := range oids {
		ber, err := appendOID(nil, o)
		if err != nil {
			t.Fatal(err)
		}
		b.berOIDs = append(b.berOIDs, ber)
	}
	if err := b.encode(pduGet, 9, nil, 0, 0); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.out, b.out) {
		t.Fatalf("ber request\n%x\nwant\n%x", b.out, a.out)
	}
}

func TestV2CDecodeSeedsFast(t *testing.T) {
	// The seeds gosnmp marshals are the common case: the fast path takes them.
	for i, s := range v2cSeeds(t)[:4] {
		var c v2cClient
		if _, err := c.decodeFast(s); err != nil {
			t.Fatalf("seed %d left to gosnmp: %v", i, err)
		}
	}
}

// Requests decode, with gosnmp, to what was asked.
func TestV2CEncode(t *testing.T) {
	c := &v2cClient{community: "s3cr3t-community"}
	long := make([]string, 60)
	for i := range long {
		long[i] = ".1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3.4194304000." + strings.Repeat("9", i%9+1)
	}
	for _, tc := range []struct {
		pdu   byte
		typ   gosnmp.PDUType
		oids  []string
		a, b  int
		reqID uint32
	}{
		{pduGet, gosnmp.GetRequest, []string{"1.3.6.1.2.1.1.1.0"}, 0, 0, 1},
		{pduGet, gosnmp.GetRequest, long, 0, 0, 0x7fffffff},
		{pduGetNext, gosnmp.GetNextRequest, []string{".2.999.4294967295"}, 0, 0, 128},
		{pduGetBulk, gosnmp.GetBulkRequest, []string{".1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3"}, 0, 255, 65536},
	} {
		if err := c.encode(tc.pdu, tc.reqID, tc.oids, tc.a, tc.b); err != nil {
			t.Fatal(err)
		}
		pkt, err := (&gosnmp.GoSNMP{Version: gosnmp.Version2c}).SnmpDecodePacket(c.out)
		if err != nil {
			t.Fatalf("%x: %v", c.out, err)
		}
		if pkt.PDUType != tc.typ || pkt.RequestID != tc.reqID || pkt.Community != c.community || len(pkt.Variables) != len(tc.oids) {
			t.Fatalf("decoded %v id %d community %q %d varbinds", pkt.PDUType, pkt.RequestID, pkt.Community, len(pkt.Variables))
		}
		if tc.pdu == pduGetBulk && (pkt.NonRepeaters != uint8(tc.a) || pkt.MaxRepetitions != uint32(tc.b)) {
			t.Fatalf("non-repeaters %d max-repetitions %d", pkt.NonRepeaters, pkt.MaxRepetitions)
		}
		for i, v := range pkt.Variables {
			if v.Name != "."+strings.TrimPrefix(tc.oids[i], ".") || v.Type != gosnmp.Null {
				t.Fatalf("varbind %d: %s %v", i, v.Name, v.Type)
			}
		}
	}
	for _, bad := range []string{"", "1", "1.3.", "1.x", "3.1", "1.40", "1.3.4294967296"} {
		if err := c.encode(pduGet, 1, []string{bad}, 0, 0); err == nil {
			t.Fatalf("oid %q encoded", bad)
		}
	}
}
