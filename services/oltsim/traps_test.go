package oltsim

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
)

// An ONU taken offline or brought back sends its vendor's trap, from the
// OLT's address, with the OLT's community; without a target nothing is
// sent; a Life tick's changes send traps too.
func TestONUChangeSendsTrap(t *testing.T) {
	recv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	read := func() (*gosnmp.SnmpPacket, *net.UDPAddr) {
		t.Helper()
		buf := make([]byte, 65536)
		_ = recv.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, from, err := recv.ReadFromUDP(buf)
		if err != nil {
			t.Fatalf("no trap: %v", err)
		}
		p, err := (&gosnmp.GoSNMP{}).UnmarshalTrap(buf[:n], false)
		if err != nil {
			t.Fatalf("trap does not decode: %v", err)
		}
		return p, from
	}
	trapOID := func(p *gosnmp.SnmpPacket) string {
		for _, v := range p.Variables {
			if v.Name == ".1.3.6.1.6.3.1.1.4.1.0" {
				return strings.TrimPrefix(v.Value.(string), ".")
			}
		}
		return ""
	}
	for _, tc := range []struct {
		profile        string
		down, up       string // trap OIDs
		cause          string
		downValue      any // the value of the last varbind of the down trap
		firstVarbindOf string
	}{
		{"huawei-ma5800", huaweiTrapDyingGasp, huaweiTrapState, DownCauseDyingGasp, nil, huaweiSerial},
		{"zte-c300", zteTrapState, zteTrapState, DownCauseLOS, 2, ztePhase},
		{"fiberhome-an5516", fiberhomeTrapState, fiberhomeTrapState, DownCauseDyingGasp, 4, fiberhomeStatus},
		{"vsol-v1600g", vsolDataAlarmTrap, vsolDataAlarmTrap, DownCauseLOS, 20, vsolDataPon},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			f := startFleet(t, FleetConfig{OLTs: []OLTConfig{{Name: "o", Listen: "127.0.0.1:0", Community: "c0mm", Profile: tc.profile,
				Shape: Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 4}, Seed: 5, Traps: TrapTarget{Dest: recv.LocalAddr().String()}}}})
			o := f.OLT("o")
			var u ONU
			for _, x := range o.ONUs() {
				if x.Online {
					u = x
					break
				}
			}
			off, on := false, true
			if err := o.PatchONU(u.Index, ONUPatch{Online: &off, DownCause: tc.cause}); err != nil {
				t.Fatal(err)
			}
			p, from := read()
			if p.Community != "c0mm" || p.PDUType != gosnmp.SNMPv2Trap || trapOID(p) != tc.down || from.Port != o.Addr().Port {
				t.Fatalf("down trap %s %s from %s, want %s from the OLT's %s", p.PDUType, trapOID(p), from, tc.down, o.Addr())
			}
			last := p.Variables[len(p.Variables)-1]
			if tc.downValue != nil && last.Value != tc.downValue {
				t.Errorf("down trap's %s = %v, want %v", last.Name, last.Value, tc.downValue)
			}
			if !strings.HasPrefix(p.Variables[2].Name, "."+tc.firstVarbindOf) {
				t.Errorf("first varbind %s, want under %s", p.Variables[2].Name, tc.firstVarbindOf)
			}
			if tc.profile != "vsol-v1600g" && !strings.HasSuffix(p.Variables[2].Name, "."+u.Index) {
				t.Errorf("varbind %s does not name the ONU %s", p.Variables[2].Name, u.Index)
			}
			if err := o.PatchONU(u.Index, ONUPatch{Online: &on}); err != nil {
				t.Fatal(err)
			}
			if p, _ := read(); trapOID(p) != tc.up {
				t.Fatalf("up trap %s, want %s", trapOID(p), tc.up)
			}
			// No target: the change sends nothing.
			if err := o.SetTrapTarget(TrapTarget{}); err != nil {
				t.Fatal(err)
			}
			if err := o.PatchONU(u.Index, ONUPatch{Online: &off}); err != nil {
				t.Fatal(err)
			}
			if sent, failed := o.TrapsSent(); sent != 2 || failed != 0 {
				t.Fatalf("sent %d failed %d, want 2 and 0", sent, failed)
			}
		})
	}
	t.Run("life tick", func(t *testing.T) {
		f := startFleet(t, FleetConfig{OLTs: []OLTConfig{{Name: "l", Listen: "127.0.0.1:0", Community: "c", Profile: "huawei-ma5800",
			Shape: Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 8}, Seed: 5, Life: Life{OfflinePercent: 100},
			Traps: TrapTarget{Dest: recv.LocalAddr().String(), Inform: true}}}})
		o := f.OLT("l")
		online := 0
		for _, x := range o.ONUs() {
			if x.Online {
				online++
			}
		}
		o.Tick()
		for range online {
			if p, _ := read(); p.PDUType != gosnmp.InformRequest {
				t.Fatalf("%s, want an inform", p.PDUType)
			}
		}
		if sent, _ := o.TrapsSent(); int(sent) != online {
			t.Fatalf("%d traps for %d ONUs gone offline", sent, online)
		}
	})
}
