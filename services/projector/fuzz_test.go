package projector

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/facho-olt/facho/streams"
)

// fuzzVarbindTypes are the types a batch carries, plus one no poller sends.
var fuzzVarbindTypes = []string{
	streams.VTInteger, streams.VTOctetString, streams.VTOID, streams.VTIPAddress,
	streams.VTCounter32, streams.VTGauge32, streams.VTTimeTicks, streams.VTCounter64,
	streams.VTNull, streams.VTNoSuchObject, streams.VTNoSuchInstance, streams.VTEndOfMibView,
	streams.VTOpaque, "BitString",
}

// fuzzDecoder builds a decoder of any kind from fuzzed parameters.
func fuzzDecoder(kind uint8, scale, offset float64, noReading int64, hasNoReading bool) streams.Decoder {
	d := streams.Decoder{Kind: streams.DecoderKinds[int(kind)%len(streams.DecoderKinds)], Scale: scale, Offset: offset}
	if hasNoReading {
		d.NoReading = &noReading
	}
	if d.Kind == "enum" {
		d.Enum = onlineEnum
	}
	return d
}

// checkText is what Postgres text takes: valid UTF-8 without NUL.
func checkText(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		t.Fatalf("%s %q is not valid Postgres text", what, s)
	}
}

// checkFields asserts what may reach Postgres from one decoded ONU.
func checkFields(t *testing.T, k ONUKey, f *ONUFields) {
	t.Helper()
	if k.PonIndex < 0 || k.ONUID < 0 {
		t.Fatalf("negative key %+v", k)
	}
	if f.RxPowerDBm != nil && (math.IsNaN(*f.RxPowerDBm) || math.IsInf(*f.RxPowerDBm, 0)) {
		t.Fatalf("rx power %v of %+v is not finite", *f.RxPowerDBm, k)
	}
	for what, p := range map[string]*string{"serial": f.Serial, "description": f.Description, "status": f.Status} {
		if p != nil {
			checkText(t, what, *p)
		}
	}
}

// FuzzDecodeValue applies every decoder kind, with any parameters, to any
// varbind type and value: no panic, numbers finite, text fit for Postgres.
func FuzzDecodeValue(f *testing.F) {
	f.Add(uint8(3), 0.01, 0.0, int64(2147483647), true, uint8(0), "-1047")
	f.Add(uint8(3), 0.01, 0.0, int64(2147483647), true, uint8(0), "2147483647")
	f.Add(uint8(3), 0.002, -30.0, int64(0), false, uint8(0), "5000")
	f.Add(uint8(3), 1e308, 0.0, int64(0), false, uint8(0), "100")
	f.Add(uint8(1), 0.0, 0.0, int64(0), false, uint8(1), "48575443000001ff")
	f.Add(uint8(1), 0.0, 0.0, int64(0), false, uint8(1), "666874743030303161326233")
	f.Add(uint8(0), 0.0, 0.0, int64(0), false, uint8(1), "636c69656e7465203432ff00")
	f.Add(uint8(0), 0.0, 0.0, int64(0), false, uint8(2), "1.3.6.1\x00")
	f.Add(uint8(4), 0.0, 0.0, int64(0), false, uint8(1), "2d31302e34372064426d")
	f.Add(uint8(4), 0.0, 0.0, int64(0), false, uint8(12), "1e400")
	f.Add(uint8(5), 0.0, 0.0, int64(0), false, uint8(0), "1")
	f.Add(uint8(2), 0.0, 0.0, int64(0), false, uint8(7), "18446744073709551615")
	f.Add(uint8(2), 0.0, 0.0, int64(0), false, uint8(8), "")
	f.Fuzz(func(t *testing.T, kind uint8, scale, offset float64, noReading int64, hasNoReading bool, typ uint8, val string) {
		dec := fuzzDecoder(kind, scale, offset, noReading, hasNoReading)
		vb := streams.Varbind{OID: "1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4.4194304000.1", Type: fuzzVarbindTypes[int(typ)%len(fuzzVarbindTypes)], Value: val}
		v, err := DecodeValue(dec, vb)
		if err != nil {
			return
		}
		if v.kind == kindNumber && (math.IsNaN(v.num) || math.IsInf(v.num, 0)) {
			t.Fatalf("%s of %s %q = %v, not finite", dec.Kind, vb.Type, val, v.num)
		}
		checkText(t, dec.Kind+" text", v.text)
		var fields ONUFields
		for _, field := range []string{streams.FieldSerial, streams.FieldDescription, streams.FieldStatus, streams.FieldRxPower} {
			if !fields.set(field, v) {
				t.Fatalf("field %s refused", field)
			}
		}
		checkFields(t, ONUKey{}, &fields)
	})
}

// FuzzParseIndex parses any row index under both schemes: an accepted index
// names an ONU with a non-negative PON index and ONU id.
func FuzzParseIndex(f *testing.F) {
	for _, s := range []string{"4194304000.5", "0.0", "285278465.3.1", "1.2.x", "-1.1", "+1.+2", "9223372036854775807.9223372036854775807",
		"33948416", "9223372036854775807", "1.2", "", "."} {
		f.Add(false, s)
		f.Add(true, s)
	}
	f.Fuzz(func(t *testing.T, fiberhome bool, suffix string) {
		scheme := SchemePonONU
		if fiberhome {
			scheme = SchemeFiberhome
		}
		k, err := ParseIndex(scheme, suffix)
		if err != nil {
			if k != (ONUKey{}) {
				t.Fatalf("error %v with key %+v", err, k)
			}
			return
		}
		if k.PonIndex < 0 || k.ONUID < 0 {
			t.Fatalf("ParseIndex(%s, %q) = %+v", scheme, suffix, k)
		}
	})
}

// FuzzDecodeBatch decodes a Huawei-like batch (or FiberHome with the other
// scheme) carrying one fuzzed varbind after realistic ones: no panic, and
// every decoded ONU is fit for Postgres.
func FuzzDecodeBatch(f *testing.F) {
	const base = "1.3.6.1.4.1.2011.6.128.1.1.2."
	f.Add(false, base+"51.1.4.4194304000.1", uint8(0), "-2150", 0.01, 0.0)
	f.Add(false, base+"43.1.3.4194304000.0", uint8(1), "48575443000001ff", 0.01, 0.0)
	f.Add(false, "."+base+"43.1.9.4194304000.0", uint8(1), "00", 0.01, 0.0)
	f.Add(false, base+"46.1.15.4194304000.2", uint8(0), "1", 0.01, 0.0)
	f.Add(true, base+"51.1.4.33949440", uint8(0), "-1890", 1e300, 1e300)
	f.Add(false, base+"51.1.4.4194304000.1", uint8(12), "nan", -1e308, 0.0)
	f.Fuzz(func(t *testing.T, fiberhome bool, oid string, typ uint8, val string, scale, offset float64) {
		cols := append([]streams.OIDSpec(nil), huaweiColumns...)
		cols[3].Decoder = streams.Decoder{Kind: "scaled", Scale: scale, Offset: offset, NoReading: noReading(2147483647)}
		cols = append(cols, streams.OIDSpec{ID: "rx-text", OID: base + "51.1.5", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "float_string"}})
		b := streams.VarbindBatch{ExecutionID: "e", OLTID: "olt", IndexScheme: SchemePonONU, Columns: cols, Varbinds: []streams.Varbind{
			vb(base+"51.1.4.4194304000.1", integerVB(-2150)),
			{OID: oid, Type: fuzzVarbindTypes[int(typ)%len(fuzzVarbindTypes)], Value: val},
		}}
		if fiberhome {
			b.IndexScheme = SchemeFiberhome
		}
		d, err := DecodeBatch(b)
		if err != nil {
			t.Fatalf("batch with valid columns rejected: %v", err)
		}
		for k, f := range d.ONUs {
			checkFields(t, k, f)
		}
	})
}

// TestLeadingFloat keeps what FuzzDecodeValue found: retrying shorter and
// shorter prefixes was quadratic (a long run of signs hung the projector).
func TestLeadingFloat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"-10.47", -10.47, true},
		{" -9.5 dBm", -9.5, true},
		{"+3", 3, true},
		{"-.5", -0.5, true},
		{"5.", 5, true},
		{"1.5.3", 1.5, true},
		{"-2e1dBm", -20, true},
		{"-2e", -2, true},
		{"-2e+", -2, true},
		{"1e400", 0, false},
		{"N/A", 0, false},
		{".e5", 0, false},
		{"-", 0, false},
		{"", 0, false},
		{strings.Repeat("-", 1<<20), 0, false},
		{strings.Repeat("1", 400), 0, false},
	} {
		got, ok := leadingFloat(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("leadingFloat(%.20q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestDecodeValueFuzzRegressions keeps what FuzzDecodeValue and
// FuzzDecodeBatch found.
func TestDecodeValueFuzzRegressions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dec     streams.Decoder
		vb      streams.Varbind
		text    string
		num     float64
		wantErr bool
	}{
		// raw*scale overflowed to +Inf, which Postgres float8 stores.
		{"scale overflows", streams.Decoder{Kind: "scaled", Scale: 1e308}, integerVB(100), "", 0, true},
		// round6 multiplied a finite 1.9e303 by 1e6: -Inf.
		{"rounding overflows", streams.Decoder{Kind: "scaled", Scale: 1e300, Offset: 1e300}, integerVB(-1890), "-1.889e+303", -1.889e303, false},
		// Non-OctetString values went to Postgres text unchecked.
		{"NUL in an oid value", streams.Decoder{Kind: "string"}, streams.Varbind{Type: streams.VTOID, Value: "1.3.6.1\x00"}, "1.3.6.1", 0, false},
		{"invalid utf8 in an ip address value", streams.Decoder{Kind: "string"}, streams.Varbind{Type: streams.VTIPAddress, Value: "a\xff"}, "a\uFFFD", 0, false},
		// A long run of signs took quadratic time in leadingFloat.
		{"float string of signs", streams.Decoder{Kind: "float_string"}, octets([]byte(strings.Repeat("-", 1<<16))), "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := DecodeValue(tc.dec, tc.vb)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if v.num != tc.num || (v.text != tc.text && !(v.kind == kindNumber && tc.text == strconv.FormatFloat(v.num, 'g', -1, 64))) {
				t.Fatalf("got %+v, want text %q num %v", v, tc.text, tc.num)
			}
		})
	}
}
