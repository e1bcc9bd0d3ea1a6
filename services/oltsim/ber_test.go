package oltsim

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func TestBEREncoding(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"int 0", appendInt(nil, tagInteger, 0), "020100"},
		{"int 127", appendInt(nil, tagInteger, 127), "02017f"},
		{"int 128", appendInt(nil, tagInteger, 128), "02020080"},
		{"int -1", appendInt(nil, tagInteger, -1), "0201ff"},
		{"int -129", appendInt(nil, tagInteger, -129), "0202ff7f"},
		{"int max32", appendInt(nil, tagInteger, 2147483647), "02047fffffff"},
		{"gauge 0", appendUint(nil, tagGauge32, 0), "420100"},
		{"counter32 max", appendUint(nil, tagCounter32, 4294967295), "410500ffffffff"},
		{"counter64 max", appendUint(nil, tagCounter64, 18446744073709551615), "460900ffffffffffffffff"},
		{"ticks 200", appendUint(nil, tagTimeTicks, 200), "430200c8"},
		{"oid", appendOID(nil, mustOID("1.3.6.1.4.1.2011.4194312192")), "060c2b060104018f5b8fd080c000"},
		{"len 200", appendLen(nil, 200), "81c8"},
		{"len 300", appendLen(nil, 300), "82012c"},
		{"ip", appendValue(nil, value{typ: tagIPAddress, b: []byte{10, 0, 0, 1}}), "40040a000001"},
		{"varbind", appendVarbind(nil, mustOID("1.3.6.1.2.1.1.5.0"), strValue("hw")), "300e06082b060102010105000402" + "6877"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if h := hex.EncodeToString(tc.got); h != tc.want {
				t.Errorf("got %s want %s", h, tc.want)
			}
		})
	}
}

func TestOIDRoundTrip(t *testing.T) {
	for _, s := range []string{"1.3", "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3.4194312192.0", "2.999.4294967295", "0.39.1"} {
		o := mustOID(s)
		enc := appendOID(nil, o)
		d := decoder{b: enc}
		_, c, err := d.next()
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeOIDInto(nil, c)
		if err != nil || compareOID(back, o) != 0 {
			t.Errorf("%s: got %v %v", s, back, err)
		}
	}
	if _, err := decodeOIDInto(nil, []byte{0x2b, 0x86}); err == nil {
		t.Error("dangling continuation accepted")
	}
	if _, err := decodeOIDInto(nil, []byte{0x2b, 0x9f, 0xff, 0xff, 0xff, 0x7f}); err == nil {
		t.Error("sub-identifier over 32 bits accepted")
	}
}

func TestCompareOID(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1.3.6.1.2", "1.3.6.1.10", -1},
		{"1.3.6.1", "1.3.6.1.0", -1},
		{"1.3.6.1.4.1.2011.6.128.1.1.2.43.1.9", "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.10", -1},
		{"1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3.4194312192.0", "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3.4194312192.0", 0},
		{"1.3.6.2", "1.3.6.1.99", 1},
	}
	for _, tc := range tests {
		if got := compareOID(mustOID(tc.a), mustOID(tc.b)); got != tc.want {
			t.Errorf("%s vs %s: %d", tc.a, tc.b, got)
		}
	}
}

// TestRespondEdgeCases drives the agent core with hand-made requests.
func TestRespondEdgeCases(t *testing.T) {
	p := huaweiProfile()
	sh := Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 3}
	m := p.buildMIB("x", sh, p.generate(sh, 1))
	col := mustOID("1.3.6.1.4.1.2011.6.128.1.1.2.43.1.9")
	tests := []struct {
		name          string
		nonRep, maxRp int64
		oids          []oid
		wantN         int
	}{
		{"max-repetitions 0", 0, 0, []oid{col}, 0},
		{"negative max-repetitions", 0, -5, []oid{col}, 0},
		{"non-repeaters beyond varbinds", 5, 10, []oid{col, col}, 2},
		{"negative non-repeaters", -1, 2, []oid{col}, 2},
		{"two repeaters", 0, 2, []oid{col, col}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := bulkMessage(t, tc.nonRep, tc.maxRp, tc.oids)
			var req request
			if err := parseRequest(msg, &req); err != nil {
				t.Fatal(err)
			}
			resp, ok := respond(&req, m, nil, DefaultMaxResponseBytes, 0)
			if !ok {
				t.Fatal("no response")
			}
			var back request
			if err := parseRequest(resp, &back); err != nil {
				t.Fatalf("response does not parse: %v", err)
			}
			if back.pdu != pduResponse || len(back.oids) != tc.wantN || !bytes.Equal(back.rawReqID, req.rawReqID) {
				t.Errorf("pdu %x, %d varbinds (want %d), reqid %x", back.pdu, len(back.oids), tc.wantN, back.rawReqID)
			}
		})
	}
}

func bulkMessage(tb testing.TB, nonRep, maxRep int64, oids []oid) []byte {
	tb.Helper()
	var vbs []byte
	for _, o := range oids {
		vbs = appendVarbind(vbs, o, value{typ: tagNull})
	}
	var pdu []byte
	pdu = appendInt(pdu, tagInteger, -123456789)
	pdu = appendInt(pdu, tagInteger, nonRep)
	pdu = appendInt(pdu, tagInteger, maxRep)
	pdu = append(pdu, tagSequence)
	pdu = appendLen(pdu, len(vbs))
	pdu = append(pdu, vbs...)
	body := appendInt(nil, tagInteger, 1)
	body = append(body, tagOctetString, 6)
	body = append(body, "public"...)
	body = append(body, pduGetBulk)
	body = appendLen(body, len(pdu))
	body = append(body, pdu...)
	msg := []byte{tagSequence}
	msg = appendLen(msg, len(body))
	return append(msg, body...)
}
