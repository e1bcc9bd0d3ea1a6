package trapd

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/facho-olt/facho/streams"
)

const community = "tr4p-community"

// TestReceiver drives one receiver with every kind of datagram, from the
// configured OLT's address (127.0.0.1) and from one that is not an OLT
// (127.0.0.2), and checks what was published and what was dropped.
func TestReceiver(t *testing.T) {
	e := newEnv(t)
	e.addOLT(t, "olt-1", "127.0.0.1", community)
	e.start(t, Config{Instance: "trapd-test"})

	onu := strconv.Itoa(4194304000+8192+256) + ".7" // frame 0, slot 1, port 1, ONT 7
	big := make([]byte, 9000)
	for _, tc := range []struct {
		name     string
		from     string
		pkt      []byte
		drop     string // the drop reason counted; "" published
		kind     string // decoded kind; "" raw only
		version  string
		trapOID  string
		varbinds int
	}{
		{"mapped v2c trap: offline", "127.0.0.1", v2cTrap(t, community, hwStateTrap, false, intVB(hwRunStatus+"."+onu, 2)), "", streams.TrapKindOffline, streams.TrapV2c, hwStateTrap, 3},
		{"mapped v2c dying gasp", "127.0.0.1", v2cTrap(t, community, hwDyingGasp, false, gosnmp.SnmpPDU{Name: "." + hwSerial + "." + onu, Type: gosnmp.OctetString, Value: []byte{0x48, 0x57, 0x54, 0x43, 0x01, 0xff}}), "", streams.TrapKindDyingGasp, streams.TrapV2c, hwDyingGasp, 3},
		{"unmapped trap OID: raw only", "127.0.0.1", v2cTrap(t, community, "1.3.6.1.6.3.1.1.5.3", false, intVB("1.3.6.1.2.1.2.2.1.1.5", 5)), "", "", streams.TrapV2c, "1.3.6.1.6.3.1.1.5.3", 3},
		{"mapped OID, value not in the map: raw only", "127.0.0.1", v2cTrap(t, community, hwStateTrap, false, intVB(hwRunStatus+"."+onu, 9)), "", "", streams.TrapV2c, hwStateTrap, 3},
		{"v1 trap", "127.0.0.1", v1Trap(t, community, "1.3.6.1.4.1.2011.6.128.1.1.2", 22, intVB(hwSerial+"."+onu, 1)), "", streams.TrapKindDyingGasp, streams.TrapV1, hwDyingGasp, 1},
		{"wrong community", "127.0.0.1", v2cTrap(t, "guess", hwStateTrap, false, intVB(hwRunStatus+"."+onu, 2)), dropBadCommunity, "", "", "", 0},
		{"unknown source", "127.0.0.2", v2cTrap(t, community, hwStateTrap, false, intVB(hwRunStatus+"."+onu, 2)), dropUnknownSource, "", "", "", 0},
		{"malformed packet", "127.0.0.1", []byte{0x30, 0x82, 0xff, 0xff, 0x02, 0x01}, dropMalformed, "", "", "", 0},
		{"oversize datagram", "127.0.0.1", big, dropTooLarge, "", "", "", 0},
		{"a get request is no trap", "127.0.0.1", getRequest(t, community), dropUnsupported, "", "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.trapEvents(t))
			dropBefore := 0.0
			if tc.drop != "" {
				dropBefore = e.dropped(tc.drop)
			}
			e.sendFrom(t, tc.from, tc.pkt)
			if tc.drop != "" {
				waitFor(t, "drop "+tc.drop, func() bool { return e.dropped(tc.drop) > dropBefore })
				// Nothing was published for it: a trap sent after it is the next event.
				e.sendFrom(t, "127.0.0.1", v2cTrap(t, community, "1.3.6.1.6.3.1.1.5.1", false))
				waitFor(t, "the marker trap", func() bool { return len(e.trapEvents(t)) > before })
				evs := e.trapEvents(t)[before:]
				if len(evs) != 1 || decodeData[streams.TrapReceived](t, evs[0]).TrapOID != "1.3.6.1.6.3.1.1.5.1" {
					t.Fatalf("after a dropped datagram: %d events, want only the marker", len(evs))
				}
				return
			}
			want := 1
			if tc.kind != "" {
				want = 2
			}
			waitFor(t, "trap events", func() bool { return len(e.trapEvents(t)) >= before+want })
			evs := e.trapEvents(t)[before:]
			if len(evs) != want {
				t.Fatalf("%d events, want %d", len(evs), want)
			}
			raw := decodeData[streams.TrapReceived](t, evs[0])
			if evs[0].Type != streams.TypeTrapReceived || raw.OLTID != "olt-1" || raw.Version != tc.version || raw.TrapOID != tc.trapOID ||
				len(raw.Varbinds) != tc.varbinds || raw.Receiver != "trapd-test" {
				t.Fatalf("raw event %s %+v", evs[0].Type, raw)
			}
			if tc.kind == "" {
				return
			}
			dec := decodeData[streams.TrapDecoded](t, evs[1])
			if evs[1].Type != streams.TypeTrapDecoded || dec.Kind != tc.kind || dec.PonIndex == nil || *dec.PonIndex != 4194304000+8192+256 ||
				dec.ONUID == nil || *dec.ONUID != 7 || dec.PortName != "0/1/1:7" || dec.TrapID != evs[0].ID || dec.Profile != "huawei-ma5800" {
				t.Fatalf("decoded event %s %+v (raw id %s)", evs[1].Type, dec, evs[0].ID)
			}
		})
	}
}

// TestInformAcknowledged: an inform is answered (gosnmp's SendTrap waits
// for the answer) once its events are stored.
func TestInformAcknowledged(t *testing.T) {
	e := newEnv(t)
	e.addOLT(t, "olt-1", "127.0.0.1", community)
	e.start(t, Config{})
	g := &gosnmp.GoSNMP{Target: "127.0.0.1", Port: uint16(e.addr.Port), Community: community, Version: gosnmp.Version2c,
		Timeout: 5 * time.Second, Retries: 1}
	if err := g.Connect(); err != nil {
		t.Fatal(err)
	}
	defer g.Conn.Close()
	res, err := g.SendTrap(gosnmp.SnmpTrap{IsInform: true, Variables: []gosnmp.SnmpPDU{
		{Name: ".1.3.6.1.6.3.1.1.4.1.0", Type: gosnmp.ObjectIdentifier, Value: "." + hwStateTrap},
		intVB(hwRunStatus+".4194304000.1", 1),
	}})
	if err != nil {
		t.Fatalf("inform not acknowledged: %v", err)
	}
	if res.PDUType != gosnmp.GetResponse {
		t.Fatalf("answer %s, want a response", res.PDUType)
	}
	evs := e.trapEvents(t)
	if len(evs) != 2 || decodeData[streams.TrapReceived](t, evs[0]).Version != streams.TrapV2cInform ||
		decodeData[streams.TrapDecoded](t, evs[1]).Kind != streams.TrapKindOnline {
		t.Fatalf("events after the acknowledgement: %d", len(evs))
	}
}

// TestRateLimitPerSource: a flood from one OLT is shed by its own bucket;
// another OLT's traps all get through.
func TestRateLimitPerSource(t *testing.T) {
	e := newEnv(t)
	e.addOLT(t, "olt-1", "127.0.0.1", community)
	e.addOLT(t, "olt-2", "127.0.0.3", community)
	e.start(t, Config{Rate: 1, Burst: 5})
	flood := v2cTrap(t, community, "1.3.6.1.6.3.1.1.5.1", false)
	c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP("127.0.0.1")}, e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 50 {
		if _, err := c.Write(flood); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		e.sendFrom(t, "127.0.0.3", v2cTrap(t, community, "1.3.6.1.6.3.1.1.5.2", false))
	}
	waitFor(t, "the other OLT's traps", func() bool {
		n := 0
		for _, ev := range e.trapEvents(t) {
			if decodeData[streams.TrapReceived](t, ev).OLTID == "olt-2" {
				n++
			}
		}
		return n == 3
	})
	n1 := 0
	waitFor(t, "the whole flood published or dropped", func() bool {
		n1 = 0
		for _, ev := range e.trapEvents(t) {
			if decodeData[streams.TrapReceived](t, ev).OLTID == "olt-1" {
				n1++
			}
		}
		return n1+int(e.dropped(dropRateLimited)) == 50
	})
	if n1 < 5 || n1 > 10 {
		t.Fatalf("%d of the flood's 50 traps published, want the burst of 5 (plus refills)", n1)
	}
}

func v1Trap(t testing.TB, community, enterprise string, specific int, vbs ...gosnmp.SnmpPDU) []byte {
	t.Helper()
	p := &gosnmp.SnmpPacket{Version: gosnmp.Version1, Community: community, PDUType: gosnmp.Trap, Variables: vbs,
		SnmpTrap: gosnmp.SnmpTrap{Enterprise: "." + enterprise, AgentAddress: "127.0.0.1", GenericTrap: 6, SpecificTrap: specific, Timestamp: 99}}
	b, err := p.MarshalMsg()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func getRequest(t testing.TB, community string) []byte {
	t.Helper()
	p := &gosnmp.SnmpPacket{Version: gosnmp.Version2c, Community: community, PDUType: gosnmp.GetRequest, RequestID: 1,
		Variables: []gosnmp.SnmpPDU{{Name: ".1.3.6.1.2.1.1.3.0", Type: gosnmp.Null}}}
	b, err := p.MarshalMsg()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
