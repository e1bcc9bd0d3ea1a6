package oltsim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/gosnmp/gosnmp"
)

// vendorReader knows how a poller reads one vendor's ONU table.
type vendorReader struct {
	serial, desc, status, rx string // column OIDs
	rxIndexSuffix            string // extra index after the row index
	online                   func(v int) bool
	rxDBm                    func(p gosnmp.SnmpPDU) (float64, bool)
	serialOf                 func(p gosnmp.SnmpPDU) string
}

func intRx(scale, offset float64, noReading int) func(p gosnmp.SnmpPDU) (float64, bool) {
	return func(p gosnmp.SnmpPDU) (float64, bool) {
		v := p.Value.(int)
		if v == noReading {
			return 0, false
		}
		return float64(v)*scale + offset, true
	}
}

func stringSerial(p gosnmp.SnmpPDU) string { return string(p.Value.([]byte)) }

func TestProfilesMatchONUs(t *testing.T) {
	readers := map[string]vendorReader{
		"huawei-ma5800": {
			serial: huaweiBase + ".43.1.3", desc: huaweiBase + ".43.1.9", status: huaweiBase + ".46.1.15", rx: huaweiBase + ".51.1.4",
			online: func(v int) bool { return v == 1 }, rxDBm: intRx(0.01, 0, 2147483647),
			serialOf: func(p gosnmp.SnmpPDU) string {
				b := p.Value.([]byte)
				return fmt.Sprintf("%s%X", b[:4], b[4:])
			},
		},
		"zte-c300": {
			serial: ".1.3.6.1.4.1.3902.1082.500.10.2.3.3.1.18", desc: ".1.3.6.1.4.1.3902.1082.500.10.2.3.3.1.3",
			status: ".1.3.6.1.4.1.3902.1082.500.10.2.3.8.1.4", rx: ".1.3.6.1.4.1.3902.1082.500.20.2.2.2.1.10", rxIndexSuffix: ".1",
			online: func(v int) bool { return v == 4 }, rxDBm: intRx(0.002, -30, 65535), serialOf: stringSerial,
		},
		"fiberhome-an5516": {
			serial: ".1.3.6.1.4.1.5875.800.3.10.1.1.10", desc: ".1.3.6.1.4.1.5875.800.3.10.1.1.7",
			status: ".1.3.6.1.4.1.5875.800.3.10.1.1.11", rx: ".1.3.6.1.4.1.5875.800.3.9.3.3.1.6",
			online: func(v int) bool { return v == 1 }, rxDBm: intRx(0.01, 0, math.MinInt), serialOf: stringSerial,
		},
		"vsol-v1600g": {
			serial: ".1.3.6.1.4.1.37950.1.1.6.1.1.2.1.5", desc: ".1.3.6.1.4.1.37950.1.1.6.1.1.2.1.3",
			status: ".1.3.6.1.4.1.37950.1.1.6.1.1.1.1.5", rx: ".1.3.6.1.4.1.37950.1.1.6.1.1.3.1.7",
			online: func(v int) bool { return v == 3 },
			rxDBm: func(p gosnmp.SnmpPDU) (float64, bool) {
				v, err := strconv.ParseFloat(string(p.Value.([]byte)), 64)
				return v, err == nil
			},
			serialOf: stringSerial,
		},
	}
	for _, name := range ProfileNames() {
		t.Run(name, func(t *testing.T) {
			rd := readers[name]
			c := OLTConfig{Name: name, Listen: "127.0.0.1:0", Community: "public", Profile: name,
				Shape: Shape{Slots: 2, PortsPerSlot: 2, ONUsPerPort: 8}, Seed: 99}
			f := startFleet(t, FleetConfig{OLTs: []OLTConfig{c}})
			o := f.OLT(name)
			g := client(t, o, "public")
			col := func(base string) map[string]gosnmp.SnmpPDU {
				pdus, err := g.BulkWalkAll(base)
				if err != nil {
					t.Fatalf("walk %s: %v", base, err)
				}
				m := map[string]gosnmp.SnmpPDU{}
				for _, p := range pdus {
					m[strings.TrimPrefix(p.Name, base+".")] = p
				}
				return m
			}
			serials, descs, status, rx := col(rd.serial), col(rd.desc), col(rd.status), col(rd.rx)
			onus := o.ONUs()
			if len(onus) != 32 || len(serials) != 32 || len(descs) != 32 || len(status) != 32 {
				t.Fatalf("rows: onus %d serials %d descs %d status %d", len(onus), len(serials), len(descs), len(status))
			}
			for _, u := range onus {
				if got := rd.serialOf(serials[u.Index]); got != u.Serial {
					t.Errorf("%s serial %q want %q", u.Index, got, u.Serial)
				}
				if got := string(descs[u.Index].Value.([]byte)); got != u.Description {
					t.Errorf("%s desc %q want %q", u.Index, got, u.Description)
				}
				if got := rd.online(status[u.Index].Value.(int)); got != u.Online {
					t.Errorf("%s online %v want %v", u.Index, got, u.Online)
				}
				p, present := rx[u.Index+rd.rxIndexSuffix]
				dbm, ok := 0.0, false
				if present {
					dbm, ok = rd.rxDBm(p)
				}
				if u.Online != ok || u.Online && math.Abs(dbm-u.RxPowerDBm) > 0.005 {
					t.Errorf("%s rx %v (%v), want %v", u.Index, dbm, ok, u.RxPowerDBm)
				}
			}
		})
	}
}

func TestIndexEncodings(t *testing.T) {
	tests := []struct {
		profile    string
		slot, port int
		want       int64
	}{
		{"huawei-ma5800", 1, 0, 4194312192},
		{"huawei-ma5800", 2, 3, 4194304000 + 2*8192 + 3*256},
		{"zte-c300", 1, 1, 285278465},
		{"fiberhome-an5516", 3, 5, 3<<25 + 5<<19},
		{"vsol-v1600g", 0, 7, 7},
	}
	for _, tc := range tests {
		p, err := profileByName(tc.profile)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.ponIndex(tc.slot, tc.port); got != tc.want {
			t.Errorf("%s %d/%d: %d want %d", tc.profile, tc.slot, tc.port, got, tc.want)
		}
	}
	if _, err := profileByName("nokia"); err == nil {
		t.Error("unknown profile accepted")
	}
}
