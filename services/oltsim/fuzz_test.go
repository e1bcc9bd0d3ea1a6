package oltsim

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gosnmp/gosnmp"
)

// fuzzViews are the MIBs the request fuzzer answers from: a generated
// Huawei OLT (strict, noSuchObject vs noSuchInstance) and a recording with a
// duplicate OID, a dynamic-free mix of every value type and a lax view.
func fuzzViews(tb testing.TB) []*mibView {
	tb.Helper()
	p := huaweiProfile()
	sh := Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 3}
	rec, err := parseSnmprec(strings.NewReader(strings.Join([]string{
		"1.3.6.1.2.1.1.1.0|4|recorded agent",
		"1.3.6.1.2.1.1.2.0|6|1.3.6.1.4.1.2011",
		"1.3.6.1.2.1.1.3.0|67|4294967295",
		"1.3.6.1.2.1.1.5.0|4x|00ff80",
		"1.3.6.1.2.1.1.5.0|4|dup",
		"1.3.6.1.2.1.2.2.1.10.1|65|4294967295",
		"1.3.6.1.2.1.31.1.1.1.6.1|70|18446744073709551615",
		"1.3.6.1.2.1.4.20.1.3.10.0.0.1|64|255.255.255.0",
		"1.3.6.1.4.1.9.1|2|-2147483648",
		"1.3.6.1.4.1.9.2|68x|9f780441200000",
		"1.3.6.1.4.1.9.3|5|",
		"1.3.6.1.4.1.9.4|129|",
	}, "\n")))
	if err != nil {
		tb.Fatal(err)
	}
	return []*mibView{p.buildMIB("fuzz", sh, p.generate(sh, 7)), rec, {}}
}

// fuzzRequest marshals a request the way gosnmp (the poller) sends it.
func fuzzRequest(tb testing.TB, community string, pdu gosnmp.PDUType, reqID uint32, nonRep uint8, maxRep uint32, oids ...string) []byte {
	tb.Helper()
	p := &gosnmp.SnmpPacket{
		Version: gosnmp.Version2c, Community: community, PDUType: pdu, RequestID: reqID,
		NonRepeaters: nonRep, MaxRepetitions: maxRep,
	}
	for _, o := range oids {
		p.Variables = append(p.Variables, gosnmp.SnmpPDU{Name: o, Type: gosnmp.Null})
	}
	b, err := p.MarshalMsg()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// FuzzAnswer feeds arbitrary datagrams to the whole agent (decode, check,
// respond). Invariants: no panic; a response fits maxBytes, is a GetResponse
// gosnmp decodes, for the same version and community, echoing the
// request-id.
func FuzzAnswer(f *testing.F) {
	col := huaweiBase + ".43.1.9"
	seeds := [][]byte{
		fuzzRequest(f, "public", gosnmp.GetRequest, 1, 0, 0, "1.3.6.1.2.1.1.3.0", "1.3.6.1.2.1.1.5.0", col+".4194304000.1", "1.3.6.1.9.9"),
		fuzzRequest(f, "public", gosnmp.GetNextRequest, 0x7fffffff, 0, 0, col, "1.3.6.1.4.1.9.4", "1.3.6.1.9"),
		fuzzRequest(f, "public", gosnmp.GetBulkRequest, 42, 0, 25, col, huaweiBase+".51.1.4"),
		fuzzRequest(f, "public", gosnmp.GetBulkRequest, 43, 1, 3, "1.3.6.1.2.1.1", col),
		fuzzRequest(f, "public", gosnmp.GetBulkRequest, 44, 0, 1000, "1.3"),
		fuzzRequest(f, "public", gosnmp.SetRequest, 45, 0, 0, "1.3.6.1.2.1.1.5.0"),
		fuzzRequest(f, "private", gosnmp.GetRequest, 46, 0, 0, "1.3.6.1.2.1.1.5.0"),
		getBulkMessage(f, "public", mustOID(col), 10),
		bulkMessage(f, 5, -1, []oid{mustOID("1.3.6.1.4.1.9"), mustOID("2.999.4294967295")}),
		{0x30, 0x00},
		{0x30, 0x84, 0xff, 0xff, 0xff, 0xff},
	}
	for _, s := range seeds {
		f.Add(s, uint16(0), uint8(0))
		f.Add(s, uint16(484), uint8(1))
	}
	f.Add(seeds[2], uint16(200), uint8(0))
	f.Add(seeds[0], uint16(60), uint8(2))
	views := fuzzViews(f)
	community := []byte("public")
	f.Fuzz(func(t *testing.T, msg []byte, maxBytes uint16, viewSel uint8) {
		limit := int(maxBytes)
		if limit == 0 || limit > maxUDPPayload {
			limit = DefaultMaxResponseBytes
		}
		view := views[int(viewSel)%len(views)]
		var req request
		resp, ok := answer(msg, &req, community, func() *mibView { return view }, nil, limit, 12345)
		if !ok {
			return
		}
		if len(resp) > limit {
			t.Fatalf("response of %d bytes exceeds maxBytes %d", len(resp), limit)
		}
		wantID, err := decodeInt(req.rawReqID[2:])
		if err != nil {
			t.Fatalf("answered a request-id that does not decode: %x", req.rawReqID)
		}
		pkt, err := (&gosnmp.GoSNMP{}).SnmpDecodePacket(resp)
		if err != nil {
			t.Fatalf("gosnmp cannot decode the response %x: %v", resp, err)
		}
		if pkt.Version != gosnmp.Version2c || pkt.Community != "public" || pkt.PDUType != gosnmp.GetResponse {
			t.Fatalf("response version %v community %q pdu %v", pkt.Version, pkt.Community, pkt.PDUType)
		}
		if int64(int32(pkt.RequestID)) != wantID {
			t.Fatalf("request-id %d not echoed (got %d)", wantID, int32(pkt.RequestID))
		}
		var back request
		if err := parseRequest(resp, &back); err != nil || !bytes.Equal(back.rawReqID, req.rawReqID) {
			t.Fatalf("response does not parse back (%v) or changed the request-id", err)
		}
	})
}

// FuzzSnmprecLine feeds arbitrary lines to the .snmprec parser: it may
// reject them, never panic, and what it accepts must encode.
func FuzzSnmprecLine(f *testing.F) {
	for _, s := range []string{
		"1.3.6.1.2.1.1.1.0|4|  text with spaces|and pipe  ",
		"1.3.6.1.2.1.1.2.0|6|.1.3.6.1.4.1.9",
		"1.3.6.1.2.1.1.3.0|67|100\r",
		"1.3.6.1.2.1.2.2.1.6.1|4x|00AaFF",
		"1.3.6.1.2.1.4.20.1.3.10.0.0.1|64|255.255.255.0",
		"1.3.6.1.2.1.4.20.1.3.10.0.0.2|64x|0a000001",
		"1.3.6.1.2.1.31.1.1.1.6.1|70|18446744073709551615",
		"1.3.6.1.2.1.2.2.1.10.1|65|4294967295",
		"1.3.6.1.2.1.2.2.1.5.1|66|1000",
		"1.3.6.1.2.1.2.2.1.1.1|2|-2147483648",
		"1.3.6.1.9|4e|a\\nb\\x41",
		"1.3.6.1.9.1|68x|9f780441200000",
		"1.3.6.1.9.2|5|",
		"1.3.6.1.9.3|130|",
		"# comment",
		"",
		"1.3|2x|7f",
		"1|4|",
		"|4|x",
		"1.3.6|4e|\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		b := &mibBuilder{}
		seen := map[string]int{}
		if err := parseSnmprecLine(b, seen, []byte(line), 1); err != nil {
			return
		}
		// A duplicate line exercises the GET-answers-last path.
		if err := parseSnmprecLine(b, seen, []byte(line), 2); err != nil {
			t.Fatalf("line accepted once, rejected the second time: %v", err)
		}
		m := b.build()
		for _, e := range m.entries {
			if len(e.enc) == 0 {
				t.Fatalf("entry %s not encoded", e.oid)
			}
			d := decoder{b: e.enc}
			if tag, _, err := d.next(); err != nil || tag != tagSequence || d.pos != len(e.enc) {
				t.Fatalf("entry %s encodes to broken BER %x", e.oid, e.enc)
			}
		}
	})
}

// TestAnswerFuzzRegressions keeps what FuzzAnswer found as table cases.
func TestAnswerFuzzRegressions(t *testing.T) {
	get := fuzzRequest(t, "public", gosnmp.GetRequest, 7, 0, 0, "1.3.6.1.2.1.1.5.0")
	// withReqID replaces the request-id TLV of get (02 01 07) by id.
	withReqID := func(id ...byte) []byte {
		i := bytes.Index(get, []byte{tagInteger, 1, 7})
		msg := append(append(append([]byte(nil), get[:i]...), id...), get[i+3:]...)
		// Fix the lengths of the message and PDU headers (short form).
		d := len(id) - 3
		msg[1] = byte(int(msg[1]) + d)
		msg[i-1] = byte(int(msg[i-1]) + d)
		return msg
	}
	tests := []struct {
		name     string
		msg      []byte
		maxBytes int
		wantOK   bool
	}{
		{"plain get", get, DefaultMaxResponseBytes, true},
		{"empty request-id", withReqID(tagInteger, 0), DefaultMaxResponseBytes, false},
		{"request-id over 32 bits", withReqID(tagInteger, 5, 1, 0, 0, 0, 0), DefaultMaxResponseBytes, false},
		{"padded request-id", withReqID(tagInteger, 4, 0, 0, 0, 7), DefaultMaxResponseBytes, true},
		// Even tooBig with no varbinds does not fit: RFC 3416 drops it.
		{"max bytes below the headers", get, 20, false},
		{"max bytes fits only tooBig", get, 40, true},
	}
	views := fuzzViews(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req request
			resp, ok := answer(tc.msg, &req, []byte("public"), func() *mibView { return views[0] }, nil, tc.maxBytes, 1)
			if ok != tc.wantOK {
				t.Fatalf("answered %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if len(resp) > tc.maxBytes {
				t.Fatalf("%d bytes over max %d", len(resp), tc.maxBytes)
			}
			pkt, err := (&gosnmp.GoSNMP{}).SnmpDecodePacket(resp)
			if err != nil || pkt.RequestID != 7 {
				t.Fatalf("gosnmp: %v, request-id %d", err, pkt.RequestID)
			}
		})
	}
}
