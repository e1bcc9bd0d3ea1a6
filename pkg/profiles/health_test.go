package profiles

import (
	"strings"
	"testing"

	"github.com/facho-olt/facho/streams"
)

func TestBuiltinHealthSections(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"huawei-ma5800", "zte-1082", "zte-1012", "fiberhome-an5516"} {
		p, ok := c.Get(id)
		if !ok || p.Health == nil {
			t.Fatalf("%s: no health section", id)
		}
		specs := p.HealthSpecs()
		if len(specs) == 0 {
			t.Fatalf("%s: no health specs", id)
		}
		for _, s := range specs {
			if !streams.ValidID(s.ID) {
				t.Errorf("%s: spec id %q is not a valid id", id, s.ID)
			}
			if _, _, ok := streams.ParseHealthField(s.Field); !ok {
				t.Errorf("%s: spec field %q", id, s.Field)
			}
		}
	}
}

func TestHealthSectionRefused(t *testing.T) {
	base := `id: x
name: X
vendor: X
index_scheme: pon.onu
index: {parts: [{name: pon, type: int}, {name: onu, type: int}], pon_index: pon, onu_id: onu}
columns: [{id: s, name: s, oid: 1.3.6.1.4.1.1.1, field: serial, decoder: {kind: string}}]
jobs: []
`
	for _, tc := range []struct{ name, health, want string }{
		{"unknown key", "health:\n  fanz: []\n", "fanz"},
		{"unknown field", "health:\n  pons: [{field: cpu_percent, oid: 1.3.6.1.2.1.1, decoder: {kind: int}}]\n", "field: want one of"},
		{"status not enum", "health:\n  fans: [{field: status, oid: 1.3.6.1.2.1.1, decoder: {kind: int}}]\n", "want an enum"},
		{"bad state", "health:\n  fans: [{field: status, oid: 1.3.6.1.2.1.1, decoder: {kind: enum, enum: {\"1\": ONLINE}}}]\n", "ONLINE"},
		{"bad oid", "health:\n  chassis: [{field: cpu_percent, oid: cpu, decoder: {kind: int}}]\n", "dotted OID"},
		{"empty", "health: {interval_seconds: 300}\n", "at least one table"},
		{"short interval", "health:\n  interval_seconds: 5\n  chassis: [{field: cpu_percent, oid: 1.3.6.1.2.1.1, decoder: {kind: int}}]\n", "interval_seconds"},
		{"type alone", "health:\n  uplinks: [{field: type, oid: 1.3.6.1.2.1.1, decoder: {kind: enum, enum: {\"6\": eth}}}]\n", "alone"},
	} {
		_, err := Parse([]byte(base+tc.health), "test.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
	if _, err := Parse([]byte(base+"health:\n  chassis: [{field: cpu_percent, oid: 1.3.6.1.2.1.1, decoder: {kind: int}}]\n"), "ok.yaml"); err != nil {
		t.Errorf("a good health section: %v", err)
	}
}

func TestDecodeHealth(t *testing.T) {
	none := int64(-1)
	upDown := streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "up", "2": "down"}}
	specs := []streams.OIDSpec{
		{ID: "a", OID: "1.9.1.5", Field: streams.HealthField(streams.HealthChassis, streams.HFCPUPercent), Decoder: streams.Decoder{Kind: "int", NoReading: &none}},
		{ID: "b", OID: "1.9.1.10", Field: streams.HealthField(streams.HealthChassis, streams.HFTemperature), Decoder: streams.Decoder{Kind: "scaled", Scale: 0.1}},
		{ID: "c", OID: "1.9.2.7", Field: streams.HealthField(streams.HealthFans, streams.HFStatus), Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ok", "2": "failed"}}},
		{ID: "d", OID: "1.2.3", Field: streams.HealthField(streams.HealthPONs, streams.HFType), Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"250": "gpon"}}},
		{ID: "e", OID: "1.2.8", Field: streams.HealthField(streams.HealthPONs, streams.HFOperState), Decoder: upDown},
		{ID: "f", OID: "1.2.3", Field: streams.HealthField(streams.HealthUplinks, streams.HFType), Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"6": "eth"}}},
		{ID: "g", OID: "1.2.8", Field: streams.HealthField(streams.HealthUplinks, streams.HFOperState), Decoder: upDown},
		{ID: "h", OID: "1.2.14", Field: streams.HealthField(streams.HealthUplinks, streams.HFInErrors), Decoder: streams.Decoder{Kind: "int"}},
		{ID: "i", OID: "1.9.3.1", Field: streams.HealthField(streams.HealthPSUs, streams.HFStatus), Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ok"}}},
	}
	vbs := []streams.Varbind{
		{OID: "1.9.1.5.0.1", Type: streams.VTInteger, Value: "11"},
		{OID: "1.9.1.5.0.7", Type: streams.VTInteger, Value: "17"},
		{OID: "1.9.1.5.0.8", Type: streams.VTInteger, Value: "-1"},
		{OID: "1.9.1.10.0.1", Type: streams.VTInteger, Value: "352"},
		{OID: "1.9.2.7.0.2", Type: streams.VTInteger, Value: "2"},
		{OID: "1.9.2.7.0.10", Type: streams.VTInteger, Value: "1"},
		{OID: "1.2.3.4194304000", Type: streams.VTInteger, Value: "250"},
		{OID: "1.2.3.7", Type: streams.VTInteger, Value: "6"},
		{OID: "1.2.8.4194304000", Type: streams.VTInteger, Value: "2"},
		{OID: "1.2.8.7", Type: streams.VTInteger, Value: "1"},
		{OID: "1.2.14.7", Type: streams.VTCounter32, Value: "42"},
		{OID: "1.9.3.1.1", Type: streams.VTInteger, Value: "9"},
		{OID: "1.7.7", Type: streams.VTInteger, Value: "1"},
	}
	h := DecodeHealth(specs, vbs)
	if got := strings.Join(h.Tables, ","); got != "chassis,fans,psus,pons,uplinks" {
		t.Errorf("tables %s", got)
	}
	if h.Chassis == nil || h.Chassis.CPUPercent == nil || *h.Chassis.CPUPercent != 17 || h.Chassis.TemperatureC == nil || *h.Chassis.TemperatureC != 35.2 {
		t.Errorf("chassis %+v", h.Chassis)
	}
	if len(h.Fans) != 2 || h.Fans[0].Index != "0.2" || h.Fans[0].Status != "failed" || h.Fans[1].Index != "0.10" || h.Fans[1].Status != "ok" {
		t.Errorf("fans %+v", h.Fans)
	}
	if len(h.PSUs) != 1 || h.PSUs[0].Status != "unknown" {
		t.Errorf("psus %+v", h.PSUs)
	}
	if len(h.PONs) != 1 || h.PONs[0].PonIndex != 4194304000 || h.PONs[0].OperState != "down" {
		t.Errorf("pons %+v", h.PONs)
	}
	if len(h.Uplinks) != 1 || h.Uplinks[0].Index != "7" || h.Uplinks[0].OperState != "up" || h.Uplinks[0].InErrors == nil || *h.Uplinks[0].InErrors != 42 {
		t.Errorf("uplinks %+v", h.Uplinks)
	}
	// 1.9.1.5.0.8 (no reading) and 1.7.7 (no column) fed nothing.
	if h.Skipped != 2 {
		t.Errorf("skipped %d, want 2", h.Skipped)
	}
}
