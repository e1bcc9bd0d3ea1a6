package projector

import (
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/facho-olt/facho/streams"
)

func octets(b []byte) streams.Varbind {
	return streams.Varbind{Type: streams.VTOctetString, Value: hex.EncodeToString(b)}
}

func integerVB(n int64) streams.Varbind {
	return streams.Varbind{Type: streams.VTInteger, Value: itoa(n)}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func noReading(n int64) *int64 { return &n }

var onlineEnum = map[string]string{"1": "ONLINE", "2": "OFFLINE"}

func TestDecodeValue(t *testing.T) {
	huaweiRx := streams.Decoder{Kind: "scaled", Scale: 0.01, NoReading: noReading(2147483647)}
	for _, tc := range []struct {
		name    string
		dec     streams.Decoder
		vb      streams.Varbind
		text    string
		num     float64
		kind    int
		wantErr bool
	}{
		{"huawei hex serial", streams.Decoder{Kind: "hex_serial"}, octets([]byte{'H', 'W', 'T', 'C', 0x1a, 0x2b, 0x3c, 0x4d}), "HWTC1A2B3C4D", 0, kindText, false},
		{"hex serial ending in zero bytes", streams.Decoder{Kind: "hex_serial"}, octets([]byte{'H', 'W', 'T', 'C', 0, 0, 0, 0}), "HWTC00000000", 0, kindText, false},
		{"hex serial with printable tail", streams.Decoder{Kind: "hex_serial"}, octets([]byte("HWTCABCD")), "HWTC41424344", 0, kindText, false},
		{"text serial kept", streams.Decoder{Kind: "hex_serial"}, octets([]byte("fhtt0001a2b3")), "FHTT0001A2B3", 0, kindText, false},
		{"hex serial of integer", streams.Decoder{Kind: "hex_serial"}, integerVB(5), "", 0, 0, true},
		{"string", streams.Decoder{Kind: "string"}, octets([]byte("cliente 42\x00")), "cliente 42", 0, kindText, false},
		{"string kept as sent", streams.Decoder{Kind: "string"}, octets([]byte("  cliente 42 ")), "  cliente 42 ", 0, kindText, false},
		{"string trimmed when told", streams.Decoder{Kind: "string", Trim: true}, octets([]byte(" \tcliente 42 \r\n")), "cliente 42", 0, kindText, false},
		{"string invalid utf8", streams.Decoder{Kind: "string"}, octets([]byte{'a', 0xff}), "a\uFFFD", 0, kindText, false},
		{"bad hex", streams.Decoder{Kind: "string"}, streams.Varbind{Type: streams.VTOctetString, Value: "zz"}, "", 0, 0, true},
		{"int", streams.Decoder{Kind: "int"}, integerVB(-7), "-7", -7, kindNumber, false},
		{"int of text", streams.Decoder{Kind: "int"}, octets([]byte("7")), "", 0, 0, true},
		{"scaled rx", huaweiRx, integerVB(-1047), "-10.47", -10.47, kindNumber, false},
		{"scaled no reading", huaweiRx, integerVB(2147483647), "", 0, kindNull, false},
		{"scaled offset", streams.Decoder{Kind: "scaled", Scale: 0.002, Offset: -30}, integerVB(5000), "-20", -20, kindNumber, false},
		{"scaled zero scale means 1", streams.Decoder{Kind: "scaled"}, integerVB(-20), "-20", -20, kindNumber, false},
		{"float string", streams.Decoder{Kind: "float_string"}, octets([]byte("-10.47")), "-10.47", -10.47, kindNumber, false},
		{"float string with unit", streams.Decoder{Kind: "float_string"}, octets([]byte(" -9.5 dBm")), "-9.5", -9.5, kindNumber, false},
		{"float string empty", streams.Decoder{Kind: "float_string"}, octets([]byte("N/A")), "", 0, kindNull, false},
		{"enum online", streams.Decoder{Kind: "enum", Enum: onlineEnum}, integerVB(1), "ONLINE", 0, kindText, false},
		{"enum offline", streams.Decoder{Kind: "enum", Enum: onlineEnum}, integerVB(2), "OFFLINE", 0, kindText, false},
		{"enum unmapped", streams.Decoder{Kind: "enum", Enum: onlineEnum}, integerVB(9), "UNKNOWN", 0, kindText, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := DecodeValue(tc.dec, tc.vb)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if v.kind != tc.kind || (tc.kind != kindNull && v.text != tc.text) || math.Abs(v.num-tc.num) > 1e-9 {
				t.Fatalf("got %+v, want text %q num %v kind %d", v, tc.text, tc.num, tc.kind)
			}
		})
	}
	for _, typ := range []string{streams.VTNoSuchInstance, streams.VTNoSuchObject, streams.VTEndOfMibView, streams.VTNull} {
		if _, err := DecodeValue(huaweiRx, streams.Varbind{Type: typ}); err != errNoValue {
			t.Errorf("%s: err = %v, want errNoValue", typ, err)
		}
	}
}

// A value of a type its decoder does not take is of the wrong type, never
// converted: text is not read as a number nor a number as text.
func TestDecodeValueWrongType(t *testing.T) {
	counter := streams.Varbind{Type: streams.VTCounter32, Value: "7"}
	ip := streams.Varbind{Type: streams.VTIPAddress, Value: "10.0.0.1"}
	for _, tc := range []struct {
		name  string
		dec   streams.Decoder
		vb    streams.Varbind
		wrong bool
	}{
		{"string of an integer", streams.Decoder{Kind: "string"}, integerVB(42), true},
		{"string of a counter", streams.Decoder{Kind: "string"}, counter, true},
		{"string of an ip address", streams.Decoder{Kind: "string"}, ip, false},
		{"hex serial of an integer", streams.Decoder{Kind: "hex_serial"}, integerVB(5), true},
		{"float string of an integer", streams.Decoder{Kind: "float_string"}, integerVB(-10), true},
		{"int of text", streams.Decoder{Kind: "int"}, octets([]byte("7")), true},
		{"int of a counter", streams.Decoder{Kind: "int"}, counter, false},
		{"scaled of an ip address", streams.Decoder{Kind: "scaled", Scale: 1}, ip, true},
		{"enum of text", streams.Decoder{Kind: "enum", Enum: onlineEnum}, octets([]byte("1")), true},
		{"enum of an opaque", streams.Decoder{Kind: "enum", Enum: onlineEnum}, streams.Varbind{Type: streams.VTOpaque, Value: "1"}, true},
		{"date and time of an integer", streams.Decoder{Kind: "date_and_time"}, integerVB(2024), true},
		{"int not a number is undecodable, not of the wrong type", streams.Decoder{Kind: "int"}, streams.Varbind{Type: streams.VTInteger, Value: "x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeValue(tc.dec, tc.vb)
			if errors.Is(err, errWrongType) != tc.wrong {
				t.Fatalf("err = %v, want wrong type %v", err, tc.wrong)
			}
		})
	}
}

// Text from an OLT is cleaned and capped where it is decoded.
func TestOLTText(t *testing.T) {
	long := strings.Repeat("é", MaxTextBytes) // 2 bytes each
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "cliente 42", "cliente 42"},
		{"NULs go", "cli\x00ente\x00", "cliente"},
		{"control characters become spaces", "a\x1b[31mred\tb\r\nc\x7fd\u0085e", "a [31mred b  c d e"},
		{"invalid UTF-8", "a\xff\xfeb", "a\uFFFDb"},
		{"cut at a character boundary", long, strings.Repeat("é", MaxTextBytes/2)},
		{"blanks kept (a decoder trims when told)", "  x  ", "  x  "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := oltText(tc.in)
			if got != tc.want || !utf8.ValidString(got) || len(got) > MaxTextBytes {
				t.Fatalf("oltText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	// A megabyte string is cut before it is decoded, to MaxTextBytes.
	v, err := DecodeValue(streams.Decoder{Kind: "string"}, octets([]byte(strings.Repeat("x", 1<<20))))
	if err != nil || len(v.text) != MaxTextBytes {
		t.Fatalf("a 1 MiB string: %d bytes, %v", len(v.text), err)
	}
}

func TestParseIndex(t *testing.T) {
	fh := func(slot, pon, onu int64) string { return itoa(slot<<25 | pon<<19 | onu<<8) }
	for _, tc := range []struct {
		scheme, suffix string
		want           ONUKey
		ok             bool
	}{
		{SchemePonONU, "4194304000.5", ONUKey{4194304000, 5}, true},
		{SchemePonONU, "0.0", ONUKey{0, 0}, true},
		{SchemePonONU, "4194304000", ONUKey{}, false},
		{SchemePonONU, "285278465.3.1", ONUKey{285278465, 3}, true}, // ZTE optical table: <pon>.<onu>.1
		{SchemePonONU, "1.2.x", ONUKey{}, false},
		{SchemePonONU, "1.2.", ONUKey{}, false},
		{SchemePonONU, "a.1", ONUKey{}, false},
		{SchemePonONU, "-1.1", ONUKey{}, false},
		{SchemeFiberhome, fh(1, 2, 3), ONUKey{1<<25 | 2<<19, 3}, true},
		{SchemeFiberhome, fh(16, 16, 128), ONUKey{16<<25 | 16<<19, 128}, true},
		// The ONU field is bits 8..18: ids from 256 on (the simulator
		// numbers a 256-ONU port 1..256) keep their PON.
		{SchemeFiberhome, fh(1, 2, 256), ONUKey{1<<25 | 2<<19, 256}, true},
		{SchemeFiberhome, fh(3, 63, 2047), ONUKey{3<<25 | 63<<19, 2047}, true},
		{SchemeFiberhome, "1.2", ONUKey{}, false},
		{"nokia", "1.2", ONUKey{}, false},
	} {
		got, err := ParseIndex(tc.scheme, tc.suffix)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseIndex(%s, %s) = %+v, %v; want %+v ok=%v", tc.scheme, tc.suffix, got, err, tc.want, tc.ok)
		}
	}
}

// Huawei ONU table columns, as the planner puts them in NodeDue.
var huaweiColumns = []streams.OIDSpec{
	{ID: "hw-serial", OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
	{ID: "hw-desc", OID: "1.3.6.1.4.1.2011.6.128.1.1.2.43.1.9", Field: streams.FieldDescription, Decoder: streams.Decoder{Kind: "string"}},
	{ID: "hw-status", OID: "1.3.6.1.4.1.2011.6.128.1.1.2.46.1.15", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: onlineEnum}},
	{ID: "hw-rx", OID: "1.3.6.1.4.1.2011.6.128.1.1.2.51.1.4", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "scaled", Scale: 0.01, NoReading: noReading(2147483647)}},
}

func vb(oid string, v streams.Varbind) streams.Varbind { v.OID = oid; return v }

func TestDecodeBatch(t *testing.T) {
	const base = "1.3.6.1.4.1.2011.6.128.1.1.2."
	b := streams.VarbindBatch{
		ExecutionID: "e1", OLTID: "olt-a", IndexScheme: SchemePonONU, Columns: huaweiColumns,
		Varbinds: []streams.Varbind{
			vb(base+"43.1.3.4194304000.0", octets([]byte{'H', 'W', 'T', 'C', 0, 0, 0, 1})),
			vb("."+base+"43.1.9.4194304000.0", octets([]byte("cliente 0"))),
			vb(base+"46.1.15.4194304000.0", integerVB(1)),
			vb(base+"51.1.4.4194304000.0", integerVB(-2150)),
			vb(base+"46.1.15.4194304000.1", integerVB(2)),
			vb(base+"51.1.4.4194304000.1", integerVB(2147483647)),
			vb(base+"51.1.4.4194304000.2", streams.Varbind{Type: streams.VTNoSuchInstance}),
			vb(base+"99.1.1.4194304000.0", integerVB(3)),         // unknown column
			vb(base+"46.1.15.4194304000", integerVB(1)),          // index without onu id
			vb(base+"46.1.15.4194304000.3", octets([]byte("x"))), // enum of text: wrong type
		},
	}
	d, err := DecodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.ONUs) != 3 {
		t.Fatalf("decoded %d onus, want 3: %+v", len(d.ONUs), d.ONUs)
	}
	// A NoSuchInstance Rx (a get of an ONU without optical row): no reading.
	if o2 := d.ONUs[ONUKey{4194304000, 2}]; o2 == nil || !o2.RxPowerSet || o2.RxPowerDBm != nil || !o2.RxGone || !o2.onlyRxGone() {
		t.Fatalf("onu 2 = %+v", o2)
	}
	o0 := d.ONUs[ONUKey{4194304000, 0}]
	if o0 == nil || *o0.Serial != "HWTC00000001" || *o0.Description != "cliente 0" || *o0.Status != "ONLINE" || !o0.RxPowerSet || *o0.RxPowerDBm != -21.5 {
		t.Fatalf("onu 0 = %+v", o0)
	}
	o1 := d.ONUs[ONUKey{4194304000, 1}]
	if o1 == nil || o1.Serial != nil || *o1.Status != "OFFLINE" || !o1.RxPowerSet || o1.RxPowerDBm != nil {
		t.Fatalf("onu 1 = %+v", o1)
	}
	want := map[string]int{SkipNoValue: 0, SkipUnknownColumn: 1, SkipBadIndex: 1, SkipWrongType: 1, SkipUndecodable: 0}
	for k, n := range want {
		if d.Skipped[k] != n {
			t.Errorf("skipped[%s] = %d, want %d (all %v)", k, d.Skipped[k], n, d.Skipped)
		}
	}

	for name, bad := range map[string]streams.VarbindBatch{
		"unknown scheme": {IndexScheme: "nokia", Columns: huaweiColumns},
		"bad decoder":    {IndexScheme: SchemePonONU, Columns: []streams.OIDSpec{{OID: "1.2", Field: "serial", Decoder: streams.Decoder{Kind: "rot13"}}}},
		"empty oid":      {IndexScheme: SchemePonONU, Columns: []streams.OIDSpec{{OID: ".", Field: "serial", Decoder: streams.Decoder{Kind: "string"}}}},
	} {
		if _, err := DecodeBatch(bad); err == nil {
			t.Errorf("%s: DecodeBatch succeeded", name)
		}
	}
}

func TestFiberhomeBatch(t *testing.T) {
	idx := int64(1<<25 | 3<<19 | 7<<8)
	b := streams.VarbindBatch{
		IndexScheme: SchemeFiberhome,
		Columns: []streams.OIDSpec{
			{OID: "1.3.6.1.4.1.5875.800.3.10.1.1.10", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
			{OID: "1.3.6.1.4.1.5875.800.3.9.3.3.1.6", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "scaled", Scale: 0.01}},
		},
		Varbinds: []streams.Varbind{
			vb("1.3.6.1.4.1.5875.800.3.10.1.1.10."+itoa(idx), octets([]byte("FHTT00000007"))),
			vb("1.3.6.1.4.1.5875.800.3.9.3.3.1.6."+itoa(idx), integerVB(-1890)),
		},
	}
	d, err := DecodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	o := d.ONUs[ONUKey{1<<25 | 3<<19, 7}]
	if o == nil || *o.Serial != "FHTT00000007" || *o.RxPowerDBm != -18.9 {
		t.Fatalf("decoded %+v", d.ONUs)
	}
}

// TestParsePonONUMatchesParser: the pon.onu fast path reads every row
// index as the built-in scheme's parser does, and leaves to it every one
// the parser refuses.
func TestParsePonONUMatchesParser(t *testing.T) {
	spec, _ := streams.BuiltinIndex(streams.IndexSchemePonONU)
	parser := spec.Parser()
	for _, suffix := range []string{"4194304000.1", "4194312192.63", "0.0", "7.8.1", "7.8.1.2.3", "007.08", "4294967295.4294967295",
		"4294967296.1", "1.4294967296", "1", "", ".", "1.", ".1", "1..2", "1.2.", "1.2.x", "a.b", "-1.2", "+1.2", "1_0.2", "1.2.-3", " 1.2"} {
		want, werr := parser.Parse(suffix)
		got, ok := parsePonONU(suffix)
		switch {
		case werr != nil && ok:
			t.Errorf("%q: fast path read %+v, the parser refuses it: %v", suffix, got, werr)
		case werr == nil && !ok:
			t.Errorf("%q: fast path refuses what the parser reads as %+v", suffix, want)
		case werr == nil && got != want:
			t.Errorf("%q: fast path %+v, parser %+v", suffix, got, want)
		}
	}
}

// TestSameStateMatchesHistoryFields: sameState says two states are the
// same exactly when their history renderings are.
func TestSameStateMatchesHistoryFields(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	tm := func(t time.Time) *time.Time { return &t }
	base := streams.ONUState{Serial: "HWTC00000001", Status: "ONLINE", RxPowerDBm: f(-20.5), LastDownAt: tm(at)}
	for _, c := range []struct {
		name string
		edit func(s *streams.ONUState)
	}{
		{"same", func(s *streams.ONUState) {}},
		{"serial", func(s *streams.ONUState) { s.Serial = "HWTC00000002" }},
		{"rx moved", func(s *streams.ONUState) { s.RxPowerDBm = f(-20.51) }},
		{"rx gone", func(s *streams.ONUState) { s.RxPowerDBm = nil }},
		{"rx same value, other pointer", func(s *streams.ONUState) { s.RxPowerDBm = f(-20.5) }},
		{"negative zero", func(s *streams.ONUState) { s.RxPowerDBm = f(math.Copysign(0, -1)) }},
		{"tx set", func(s *streams.ONUState) { s.TxPowerDBm = f(2) }},
		{"same instant, other zone", func(s *streams.ONUState) { s.LastDownAt = tm(at.In(time.FixedZone("x", 3600))) }},
		{"other instant", func(s *streams.ONUState) { s.LastDownAt = tm(at.Add(time.Nanosecond)) }},
		{"up time set", func(s *streams.ONUState) { s.LastUpAt = tm(at) }},
		{"model", func(s *streams.ONUState) { s.Model = "HG8245" }},
	} {
		b := base
		c.edit(&b)
		if got, want := sameState(base, b), historyFields(base) == historyFields(b); got != want {
			t.Errorf("%s: sameState %v, renderings equal %v", c.name, got, want)
		}
	}
	zero := streams.ONUState{RxPowerDBm: f(0)}
	if got, want := sameState(zero, streams.ONUState{RxPowerDBm: f(math.Copysign(0, -1))}), historyFields(zero) == historyFields(streams.ONUState{RxPowerDBm: f(math.Copysign(0, -1))}); got != want {
		t.Errorf("0 and -0: sameState %v, renderings equal %v", got, want)
	}
}
