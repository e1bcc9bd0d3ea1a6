package streams

import (
	"testing"
	"time"
)

func TestParseHealthField(t *testing.T) {
	for _, tc := range []struct {
		in           string
		table, field string
		ok           bool
	}{
		{HealthField(HealthPONs, HFOperState), HealthPONs, HFOperState, true},
		{HealthField(HealthChassis, HFCPUPercent), HealthChassis, HFCPUPercent, true},
		{"health.pons.cpu_percent", "", "", false},
		{"health.boards.name", "", "", false},
		{"rx_power", "", "", false},
		{"health.fans", "", "", false},
	} {
		table, field, ok := ParseHealthField(tc.in)
		if table != tc.table || field != tc.field || ok != tc.ok {
			t.Errorf("ParseHealthField(%q) = %q, %q, %v; want %q, %q, %v", tc.in, table, field, ok, tc.table, tc.field, tc.ok)
		}
	}
}

func TestOLTHealthValidate(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		h    OLTHealth
		ok   bool
	}{
		{"good", OLTHealth{OLTID: "o1", ObservedAt: now, Fans: []UnitHealth{{Index: "1", Status: UnitOK}}}, true},
		{"bad id", OLTHealth{OLTID: "o.1", ObservedAt: now}, false},
		{"no time", OLTHealth{OLTID: "o1"}, false},
		{"bad status", OLTHealth{OLTID: "o1", ObservedAt: now, PSUs: []UnitHealth{{Index: "1", Status: "ONLINE"}}}, false},
		{"bad port state", OLTHealth{OLTID: "o1", ObservedAt: now, PONs: []PONHealth{{Index: "1", OperState: "LOS"}}}, false},
		{"too many rows", OLTHealth{OLTID: "o1", ObservedAt: now, Uplinks: make([]UplinkHealth, MaxHealthRows+1)}, false},
	} {
		if err := tc.h.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
