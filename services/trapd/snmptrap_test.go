package trapd

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// TestNetSNMPTrap: traps and an inform sent by net-snmp's snmptrap (a
// client no one here wrote) are accepted and decoded; one with a wrong
// community is dropped.
func TestNetSNMPTrap(t *testing.T) {
	bin, err := exec.LookPath("snmptrap")
	if err != nil {
		t.Skip("snmptrap not found: install net-snmp's client (Debian package snmp) to run this test")
	}
	e := newEnv(t)
	e.addOLT(t, "olt-1", "127.0.0.1", community)
	e.start(t, Config{})
	target := fmt.Sprintf("udp:127.0.0.1:%d", e.addr.Port)
	run := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = []string{"MIBS=", "MIBDIRS=/nonexistent", "HOME=" + t.TempDir()}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("snmptrap %v: %v\n%s", args, err, out)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		kind string
		ver  string
	}{
		{"v2c dying gasp", []string{"-v", "2c", "-c", community, target, "", hwDyingGasp, hwSerial + ".4194304000.3", "s", "HWTC0001"}, streams.TrapKindDyingGasp, streams.TrapV2c},
		{"v2c inform offline", []string{"-Ci", "-v", "2c", "-c", community, "-t", "5", "-r", "1", target, "", hwStateTrap, hwRunStatus + ".4194304000.3", "i", "2"}, streams.TrapKindOffline, streams.TrapV2cInform},
		{"v1 enterprise trap", []string{"-v", "1", "-c", community, target, "1.3.6.1.4.1.2011.6.128.1.1.2", "127.0.0.1", "6", "22", "", hwSerial + ".4194304000.3", "s", "HWTC0001"}, streams.TrapKindDyingGasp, streams.TrapV1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.trapEvents(t))
			run(tc.args...) // an inform returns only once acknowledged
			waitFor(t, "the trap's events", func() bool { return len(e.trapEvents(t)) >= before+2 })
			evs := e.trapEvents(t)[before:]
			raw, dec := decodeData[streams.TrapReceived](t, evs[0]), decodeData[streams.TrapDecoded](t, evs[1])
			if raw.Version != tc.ver || dec.Kind != tc.kind || dec.ONUID == nil || *dec.ONUID != 3 || dec.PonIndex == nil || *dec.PonIndex != 4194304000 {
				t.Fatalf("raw %+v decoded %+v", raw, dec)
			}
		})
	}
	t.Run("wrong community", func(t *testing.T) {
		before := e.dropped(dropBadCommunity)
		run("-v", "2c", "-c", "not-"+community, target, "", hwDyingGasp, hwSerial+".4194304000.3", "s", "x")
		waitFor(t, "the drop", func() bool { return e.dropped(dropBadCommunity) > before })
	})
}
