package oltsim

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/rs/zerolog"
)

func testLogger() zerolog.Logger { return zerolog.New(io.Discard) }

// startFleet starts cfg and closes it at the end of the test.
func startFleet(t testing.TB, cfg FleetConfig) *Fleet {
	t.Helper()
	f, err := Start(context.Background(), cfg, testLogger())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return f
}

func huaweiConfig(name string, ports, onus int) OLTConfig {
	return OLTConfig{
		Name: name, Listen: "127.0.0.1:0", Community: "public", Profile: "huawei-ma5800",
		Shape: Shape{Slots: 1, PortsPerSlot: ports, ONUsPerPort: onus}, Seed: 42,
	}
}

// client returns a connected gosnmp client for o.
func client(t testing.TB, o *OLT, community string) *gosnmp.GoSNMP {
	t.Helper()
	g := &gosnmp.GoSNMP{
		Target: o.Addr().IP.String(), Port: uint16(o.Addr().Port), Community: community,
		Version: gosnmp.Version2c, Timeout: time.Second, Retries: 0, MaxRepetitions: 10,
		MaxOids: 60,
	}
	if err := g.Connect(); err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = g.Conn.Close() })
	return g
}

// pduString renders a varbind for comparisons.
func pduString(p gosnmp.SnmpPDU) string {
	switch v := p.Value.(type) {
	case []byte:
		return fmt.Sprintf("%s %v %x", p.Name, p.Type, v)
	default:
		return fmt.Sprintf("%s %v %v", p.Name, p.Type, v)
	}
}
