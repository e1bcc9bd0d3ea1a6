package projector

import (
	"math"
	"testing"

	"github.com/facho-olt/facho/streams"
)

// The profile language's value decoders: the expected numbers are worked
// out here from the raw text (math.Log10 for the units), not by Facho.
func TestDecodeValueLanguage(t *testing.T) {
	dbmRE := streams.Decoder{Kind: "regex", Pattern: `\((?P<dbm>-?[0-9]+(?:[.,][0-9]+)?) ?dBm\)`, Group: "dbm"}
	mwRE := streams.Decoder{Kind: "regex", Pattern: `^\s*([0-9.]+) ?mW`, Unit: "mW"}
	null := math.NaN()
	for _, tc := range []struct {
		name string
		dec  streams.Decoder
		vb   streams.Varbind
		num  float64 // NaN: no reading
		text string  // a text result ("" for numbers)
	}{
		{"dBm figure of mW (dBm) text", dbmRE, octets([]byte("0.03 mW (-14.61 dBm)")), -14.61, ""},
		{"dBm with a decimal comma", dbmRE, octets([]byte("0,01 mW (-20,05 dBm)")), -20.05, ""},
		{"no dBm figure", dbmRE, octets([]byte("N/A")), null, ""},
		{"first group when unnamed", streams.Decoder{Kind: "regex", Pattern: `rx=(-?[0-9.]+)`}, octets([]byte("tx=2.1 rx=-19.5")), -19.5, ""},
		{"whole match without groups", streams.Decoder{Kind: "regex", Pattern: `-?[0-9]+\.[0-9]+`}, octets([]byte("Rx: -7.25dBm")), -7.25, ""},
		{"text capture", streams.Decoder{Kind: "regex", Pattern: `model=(\w+)`}, octets([]byte("vendor=VSOL model=V2801RGW")), 0, "V2801RGW"},
		{"text capture trimmed first", streams.Decoder{Kind: "regex", Pattern: `^(\S+)$`, Trim: true}, octets([]byte("  HG8245H  ")), 0, "HG8245H"},
		{"mW to dBm", mwRE, octets([]byte("0.03 mW (-14.61 dBm)")), 10 * math.Log10(0.03), ""},
		{"0 mW is no reading", mwRE, octets([]byte("0.00 mW")), null, ""},
		{"mW as a float string", streams.Decoder{Kind: "float_string", Unit: "mW"}, octets([]byte("1.25")), 10 * math.Log10(1.25), ""},
		{"uW scaled by 0.1 (SFF-8472)", streams.Decoder{Kind: "scaled", Scale: 0.1, Unit: "uW"}, integerVB(3162), 10 * math.Log10(316.2/1000), ""},
		{"uW integer", streams.Decoder{Kind: "int", Unit: "uW"}, integerVB(500), 10 * math.Log10(0.5), ""},
		{"negative mW is no reading", streams.Decoder{Kind: "scaled", Scale: 0.001, Unit: "mW"}, integerVB(-5), null, ""},
		{"dBm unit is as is", streams.Decoder{Kind: "scaled", Scale: 0.1, Unit: "dBm"}, integerVB(-215), -21.5, ""},
		{"hex float is no number", streams.Decoder{Kind: "regex", Pattern: `v=(\S+)`, Unit: "mW"}, octets([]byte("v=0x1p-2")), null, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.dec.Validate(); err != nil {
				t.Fatalf("decoder: %v", err)
			}
			v, err := DecodeValue(tc.dec, tc.vb)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case math.IsNaN(tc.num):
				if v.kind != kindNull {
					t.Fatalf("got %+v, want no reading", v)
				}
			case tc.text != "":
				if v.kind != kindText || v.text != tc.text {
					t.Fatalf("got %+v, want text %q", v, tc.text)
				}
			default:
				if v.kind != kindNumber || math.Abs(v.num-tc.num) > 1e-6 {
					t.Fatalf("got %+v, want %v", v, tc.num)
				}
			}
		})
	}
}

// A value-keyed index with a filter: rows of one ONT grouped (the first
// row's fields win), rows whose name matches no ONT or that the filter
// drops are no ONU and are counted apart from the unplaced ones.
func TestDecodeBatchValueKeyGroupsAndFilters(t *testing.T) {
	const ifName, ifType, ifOper = "1.3.6.1.2.1.31.1.1.1.1", "1.3.6.1.2.1.2.2.1.3", "1.3.6.1.2.1.2.2.1.8"
	idx := streams.IndexSpec{
		Parts:    []streams.IndexPart{{Name: "ifindex", Type: "int"}},
		Key:      &streams.ValueKey{OID: ifName, Pattern: `^Ont (?P<onu>[0-9]+)/(?P<port>\S+)$`},
		Filter:   []streams.RowFilter{{OID: ifType, Match: `^6$`}},
		PonIndex: "0", ONUID: "onu", PortName: "ont {onu}",
	}
	cols := []streams.OIDSpec{
		{ID: "name", OID: ifName, Field: "name", Decoder: streams.Decoder{Kind: "string"}},
		{ID: "type", OID: ifType, Field: "model", Decoder: streams.Decoder{Kind: "int"}},
		{ID: "oper", OID: ifOper, Field: "status", Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"1": "ONLINE", "2": "OFFLINE"}}},
	}
	type iface struct {
		ifindex   int
		name      string
		typ, oper int64
	}
	ifs := []iface{
		{1, "uplink 1", 6, 1},             // no ONT name: filtered
		{10, "Ont 50515061/g1", 6, 1},     // ONT 50515061, first row: its status
		{11, "Ont 50515061/g2", 6, 2},     // same ONT: grouped, status kept
		{12, "Ont 50515061/p1", 1, 2},     // same ONT but ifType 1: the filter drops it
		{20, "Ont 50515062/g1", 6, 2},     // ONT 50515062
		{30, "Ont 7/g1 (spare)", 6, 1},    // does not match the whole pattern
		{40, "Ont 99999999999/g1", 6, 1},  // ONT 99999999999
		{41, "Ont 99999999999/g1", 53, 1}, // filtered
	}
	var rows []streams.VarbindRow
	for _, f := range ifs {
		rows = append(rows, streams.VarbindRow{Index: itoa(int64(f.ifindex)), Values: []streams.RowValue{
			{Column: 0, Type: streams.VTOctetString, Value: octets([]byte(f.name)).Value},
			{Column: 1, Type: streams.VTInteger, Value: itoa(f.typ)},
			{Column: 2, Type: streams.VTInteger, Value: itoa(f.oper)},
		}})
	}
	d, err := DecodeBatch(streams.VarbindBatch{ExecutionID: "e", OLTID: "o", IndexScheme: "ont-names", Index: &idx, Columns: cols, Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	want := map[ONUKey]struct {
		status, name, index, port string
	}{
		{0, 50515061}:    {"ONLINE", "Ont 50515061/g1", "10", "ont 50515061"},
		{0, 50515062}:    {"OFFLINE", "Ont 50515062/g1", "20", "ont 50515062"},
		{0, 99999999999}: {"ONLINE", "Ont 99999999999/g1", "40", "ont 99999999999"},
	}
	if len(d.ONUs) != len(want) {
		t.Fatalf("%d onus, want %d: %v", len(d.ONUs), len(want), d.Keys())
	}
	for k, w := range want {
		f := d.ONUs[k]
		if f == nil || f.Status == nil || *f.Status != w.status || f.Text["name"] != w.name || f.Index != w.index || f.PortName != w.port {
			t.Errorf("onu %v: %+v, want %+v", k, f, w)
		}
	}
	// Rows 1, 12, 30 and 41 are no ONU: 4 rows of 3 varbinds.
	if d.Filtered != 12 || len(d.Skipped) != 0 {
		t.Errorf("filtered %d, skipped %v: want 12 filtered, none skipped", d.Filtered, d.Skipped)
	}
	// A batch that does not read the key column cannot name ONUs.
	d, err = DecodeBatch(streams.VarbindBatch{ExecutionID: "e", OLTID: "o", IndexScheme: "ont-names", Index: &idx, Columns: cols[2:],
		Varbinds: []streams.Varbind{{OID: ifOper + ".10", Type: streams.VTInteger, Value: "1"}}})
	if err != nil || len(d.ONUs) != 0 || d.Skipped[SkipBadIndex] != 1 {
		t.Errorf("without the key column: %v, %d onus, skipped %v", err, len(d.ONUs), d.Skipped)
	}
}
