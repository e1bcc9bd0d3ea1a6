package poller

import (
	"encoding/hex"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/gosnmp/gosnmp"

	"github.com/facho-olt/facho/streams"
)

// checkVarbind asserts the contract of streams.Varbind for what toVarbind
// made of p.
func checkVarbind(t *testing.T, p gosnmp.SnmpPDU, vb streams.Varbind) {
	t.Helper()
	if vb.Type == "" {
		t.Fatalf("%v (%T %v): empty type", p.Type, p.Value, p.Value)
	}
	if vb.OID != strings.TrimPrefix(p.Name, ".") {
		t.Fatalf("oid %q of %q", vb.OID, p.Name)
	}
	switch vb.Type {
	case streams.VTOctetString:
		if _, err := hex.DecodeString(vb.Value); err != nil {
			t.Fatalf("octet string %q is not hex: %v", vb.Value, err)
		}
	case streams.VTInteger, streams.VTCounter32, streams.VTGauge32, streams.VTTimeTicks, streams.VTCounter64:
		// gosnmp gives integers of these types; anything else is not
		// the poller's to render as a number.
		switch p.Value.(type) {
		case int, int64, uint, uint32, uint64, int8, int16, int32, uint8, uint16:
			if _, ok := new(big.Int).SetString(vb.Value, 10); !ok {
				t.Fatalf("%s value %q is not decimal", vb.Type, vb.Value)
			}
		}
	case streams.VTNull, streams.VTNoSuchObject, streams.VTNoSuchInstance, streams.VTEndOfMibView:
		if vb.Value != "" {
			t.Fatalf("%s carries %q", vb.Type, vb.Value)
		}
	}
}

// FuzzToVarbindFromWire decodes any datagram the way gosnmp decodes an
// OLT's response and converts every PDU: no panic, and each varbind keeps
// the contract.
func FuzzToVarbindFromWire(f *testing.F) {
	resp := func(vars ...gosnmp.SnmpPDU) []byte {
		p := &gosnmp.SnmpPacket{Version: gosnmp.Version2c, Community: "public", PDUType: gosnmp.GetResponse, RequestID: 7, Variables: vars}
		b, err := p.MarshalMsg()
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	const col = ".1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3.4194304000.0"
	f.Add(resp(
		gosnmp.SnmpPDU{Name: col, Type: gosnmp.OctetString, Value: []byte{'H', 'W', 'T', 'C', 0x1a, 0, 0xff, 0x10}},
		gosnmp.SnmpPDU{Name: col, Type: gosnmp.Integer, Value: -1047},
		gosnmp.SnmpPDU{Name: col, Type: gosnmp.ObjectIdentifier, Value: ".1.3.6.1.4.1.2011"},
		gosnmp.SnmpPDU{Name: col, Type: gosnmp.IPAddress, Value: "10.0.0.1"},
		gosnmp.SnmpPDU{Name: col, Type: gosnmp.Counter32, Value: uint32(4294967295)},
		gosnmp.SnmpPDU{Name: col, Type: gosnmp.Gauge32, Value: uint32(7)},
		gosnmp.SnmpPDU{Name: col, Type: gosnmp.TimeTicks, Value: uint32(123456)},
		gosnmp.SnmpPDU{Name: col, Type: gosnmp.Counter64, Value: uint64(math.MaxUint64)},
	))
	f.Add(resp(
		gosnmp.SnmpPDU{Name: col, Type: gosnmp.Null},
		gosnmp.SnmpPDU{Name: col, Type: gosnmp.NoSuchObject},
		gosnmp.SnmpPDU{Name: col, Type: gosnmp.NoSuchInstance},
		gosnmp.SnmpPDU{Name: col, Type: gosnmp.EndOfMibView},
	))
	// Opaque-wrapped float and double (net-snmp's encoding), a BitString
	// and an Opaque of raw bytes, written by hand: gosnmp does not
	// marshal them.
	oid := tlv(0x06, 0x2b, 6, 1, 2, 1, 1, 1, 0)
	f.Add(rawResponse(
		tlv(0x30, oid, tlv(0x44, 0x9f, 0x78, 4, 0x41, 0x20, 0, 0)),
		tlv(0x30, oid, tlv(0x44, 0x9f, 0x79, 8, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18)),
		tlv(0x30, oid, tlv(0x03, 7, 0x80)),
		tlv(0x30, oid, tlv(0x44, 1, 2, 3)),
	))
	f.Add([]byte{0x30, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		pkt, err := (&gosnmp.GoSNMP{Version: gosnmp.Version2c}).SnmpDecodePacket(b)
		if err != nil {
			return
		}
		for _, p := range pkt.Variables {
			checkVarbind(t, p, toVarbind(p))
		}
	})
}

// tlv encodes one BER TLV (short-form length: seeds are small).
func tlv(tag byte, content ...any) []byte {
	var c []byte
	for _, x := range content {
		switch x := x.(type) {
		case []byte:
			c = append(c, x...)
		case int:
			c = append(c, byte(x))
		}
	}
	return append([]byte{tag, byte(len(c))}, c...)
}

// rawResponse wraps varbinds in a v2c GetResponse for community "public".
func rawResponse(varbinds ...[]byte) []byte {
	vbl := make([]any, len(varbinds))
	for i, v := range varbinds {
		vbl[i] = v
	}
	pdu := tlv(0xa2, tlv(0x02, 7), tlv(0x02, 0), tlv(0x02, 0), tlv(0x30, vbl...))
	return tlv(0x30, tlv(0x02, 1), tlv(0x04, []byte("public")), pdu)
}

// FuzzToVarbind converts PDUs of any type holding any Go value gosnmp (or
// a future gosnmp) might put there.
func FuzzToVarbind(f *testing.F) {
	f.Add(uint8(gosnmp.Integer), uint8(0), int64(-1047), 0.0, "", []byte(nil))
	f.Add(uint8(gosnmp.OctetString), uint8(7), int64(0), 0.0, "", []byte("HWTC\x1a\x00\xff\x10"))
	f.Add(uint8(gosnmp.ObjectIdentifier), uint8(6), int64(0), 0.0, ".1.3.6", []byte(nil))
	f.Add(uint8(gosnmp.Counter64), uint8(4), int64(-1), 0.0, "", []byte(nil))
	f.Add(uint8(gosnmp.OpaqueFloat), uint8(8), int64(0), -10.5, "", []byte(nil))
	f.Add(uint8(gosnmp.OpaqueDouble), uint8(5), int64(0), math.Inf(-1), "", []byte(nil))
	f.Add(uint8(gosnmp.BitString), uint8(7), int64(0), 0.0, "", []byte{7, 0x80})
	f.Add(uint8(gosnmp.Gauge32), uint8(9), int64(0), 0.0, "", []byte(nil))
	f.Add(uint8(0xee), uint8(6), int64(0), 0.0, "x\x00\xff", []byte(nil))
	f.Fuzz(func(t *testing.T, typ, sel uint8, n int64, fl float64, s string, b []byte) {
		values := []any{int(n), n, uint(n), uint32(n), uint64(n), fl, s, b, float32(fl), nil, int32(n), big.NewInt(n), struct{}{}}
		p := gosnmp.SnmpPDU{Name: s, Type: gosnmp.Asn1BER(typ), Value: values[int(sel)%len(values)]}
		checkVarbind(t, p, toVarbind(p))
	})
}
