package oltsim

import (
	"testing"
	"time"
)

func BenchmarkBuildMIB1024(b *testing.B) {
	p := huaweiProfile()
	sh := Shape{Slots: 1, PortsPerSlot: 4, ONUsPerPort: 256}
	onus := p.generate(sh, 1)
	b.ReportAllocs()
	for b.Loop() {
		p.buildMIB("x", sh, onus)
	}
}

// BenchmarkRespondGetBulk measures the agent core without sockets: one
// GETBULK of 25 repetitions walked across a 4096-ONU table, served by the
// compact ONU tables and by the former flat list of encoded rows.
func BenchmarkRespondGetBulk(b *testing.B) {
	p := huaweiProfile()
	sh := Shape{Slots: 1, PortsPerSlot: 16, ONUsPerPort: 256}
	onus := p.generate(sh, 1)
	for _, layout := range []string{"compact", "flat"} {
		m := p.buildMIB("x", sh, onus)
		if layout == "flat" {
			m = buildFlatMIB(p, "x", sh, onus)
		}
		b.Run(layout, func(b *testing.B) {
			msg := getBulkMessage(b, "public", mustOID("1.3.6.1.4.1.2011.6.128.1.1.2.43.1.9"), 25)
			var req request
			out := make([]byte, 0, 70000)
			b.ReportAllocs()
			vbs := 0
			for b.Loop() {
				if err := parseRequest(msg, &req); err != nil {
					b.Fatal(err)
				}
				if _, ok := respond(&req, m, out[:0], DefaultMaxResponseBytes, 1); !ok {
					b.Fatal("no response")
				}
				vbs += 25
			}
			b.ReportMetric(float64(vbs)/b.Elapsed().Seconds(), "varbinds/s")
		})
	}
}

// BenchmarkUDPBulkWalk walks one 4096-ONU OLT over UDP with gosnmp.
func BenchmarkUDPBulkWalk(b *testing.B) {
	c := huaweiConfig("hw", 16, 256)
	f := startFleet(b, FleetConfig{OLTs: []OLTConfig{c}})
	g := client(b, f.OLT("hw"), "public")
	g.MaxRepetitions = 25
	g.Timeout = 5 * time.Second
	vbs := 0
	for b.Loop() {
		pdus, err := g.BulkWalkAll(huaweiBase + ".43.1.9")
		if err != nil {
			b.Fatal(err)
		}
		vbs += len(pdus)
	}
	b.ReportMetric(float64(vbs)/b.Elapsed().Seconds(), "varbinds/s")
}

func getBulkMessage(tb testing.TB, community string, o oid, maxRep int) []byte {
	tb.Helper()
	var vb []byte
	vb = appendVarbind(vb, o, value{typ: tagNull})
	var pdu []byte
	pdu = appendInt(pdu, tagInteger, 1234)
	pdu = appendInt(pdu, tagInteger, 0)
	pdu = appendInt(pdu, tagInteger, int64(maxRep))
	pdu = append(pdu, tagSequence)
	pdu = appendLen(pdu, len(vb))
	pdu = append(pdu, vb...)
	var body []byte
	body = appendInt(body, tagInteger, 1)
	body = append(body, tagOctetString)
	body = appendLen(body, len(community))
	body = append(body, community...)
	body = append(body, pduGetBulk)
	body = appendLen(body, len(pdu))
	body = append(body, pdu...)
	msg := []byte{tagSequence}
	msg = appendLen(msg, len(body))
	return append(msg, body...)
}
