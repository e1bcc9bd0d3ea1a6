package streams

import (
	"errors"
	"strings"
	"testing"
)

func TestIndexSpecParse(t *testing.T) {
	huawei := IndexSpec{
		Parts: []IndexPart{{Name: "pon", Type: PartInt, Fields: []BitField{
			{Name: "frame", Shift: 19, Bits: 6}, {Name: "slot", Shift: 13, Bits: 6}, {Name: "port", Shift: 8, Bits: 5}}},
			{Name: "onu", Type: PartInt}},
		PonIndex: "pon", ONUID: "onu", PortName: "{frame}/{slot}/{port}:{onu}",
	}
	zte1012 := IndexSpec{
		Parts: []IndexPart{{Name: "p", Type: PartInt, Fields: []BitField{{Name: "slot", Shift: 16, Bits: 8}, {Name: "port", Shift: 8, Bits: 8}}},
			{Name: "onu", Type: PartInt}},
		Rest: RestNumeric, PonIndex: "285278208+slot<<8+port", ONUID: "onu", PortName: "gpon-onu_1/{slot}/{port}:{onu}",
	}
	bySerial := IndexSpec{
		Parts:    []IndexPart{{Name: "pon", Type: PartInt}, {Name: "sn", Type: PartString}},
		PonIndex: "pon", ONUID: "hash(sn)", PortName: "{pon}/{sn}",
	}
	mac := IndexSpec{Parts: []IndexPart{{Name: "pon", Type: PartInt}, {Name: "mac", Type: PartFixed, Length: 6}}, PonIndex: "pon", ONUID: "hash(mac)", PortName: "{mac}"}
	fh, _ := BuiltinIndex(IndexSchemeFiberhome)
	for _, tc := range []struct {
		name   string
		spec   IndexSpec
		suffix string
		want   ParsedIndex
		err    string
	}{
		{"huawei 0/1/3:5", huawei, "4194312960.5", ParsedIndex{PonIndex: 4194312960, ONUID: 5, Index: "4194312960.5", PortName: "0/1/3:5"}, ""},
		{"huawei frame 1", huawei, "4194828544.7", ParsedIndex{PonIndex: 4194828544, ONUID: 7, Index: "4194828544.7", PortName: "1/0/1:7"}, ""},
		{"huawei too short", huawei, "4194312960", ParsedIndex{}, "too short"},
		{"huawei left over", huawei, "4194312960.5.1", ParsedIndex{}, "left over"},
		{"zte 1012 onto the 1082 key, sub-index ignored", zte1012, "268566784.9.1", ParsedIndex{PonIndex: 0x11010000 | 2<<8 | 1, ONUID: 9, Index: "268566784.9", PortName: "gpon-onu_1/2/1:9"}, ""},
		{"fiberhome", fh, "34078976", ParsedIndex{PonIndex: 1<<25 | 1<<19, ONUID: 1, Index: "34078976", PortName: "1/1:1"}, ""},
		{"serial string", bySerial, "7.4.65.66.67.68", ParsedIndex{PonIndex: 7, ONUID: 0, Index: "7.4.65.66.67.68", PortName: "7/ABCD"}, ""},
		{"serial string short", bySerial, "7.4.65.66", ParsedIndex{}, "too short"},
		{"string byte out of range", bySerial, "7.1.300", ParsedIndex{}, "not a byte"},
		{"binary mac shown as hex", mac, "2.0.17.34.51.68.85", ParsedIndex{PonIndex: 2, Index: "2.0.17.34.51.68.85", PortName: "001122334455"}, ""},
		{"not a number", huawei, "x.1", ParsedIndex{}, "not a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.spec.Validate(); err != nil {
				t.Fatal(err)
			}
			got, err := tc.spec.Parse(tc.suffix)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse(%q) = %+v, %v; want an error with %q", tc.suffix, got, err, tc.err)
				}
				return
			}
			if strings.HasPrefix(tc.spec.ONUID, "hash(") {
				if got.ONUID <= 0 {
					t.Errorf("hashed onu id %d", got.ONUID)
				}
				got.ONUID = 0
			}
			if err != nil || got != tc.want {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", tc.suffix, got, err, tc.want)
			}
		})
	}
}

func TestIndexSpecValidate(t *testing.T) {
	ok := func(s IndexSpec) IndexSpec { return s }
	base := IndexSpec{Parts: []IndexPart{{Name: "pon", Type: PartInt}, {Name: "onu", Type: PartInt}}, PonIndex: "pon", ONUID: "onu"}
	for _, tc := range []struct {
		name string
		mut  func(s IndexSpec) IndexSpec
		err  string
	}{
		{"valid", ok, ""},
		{"no parts", func(s IndexSpec) IndexSpec { s.Parts = nil; return s }, "parts"},
		{"unknown type", func(s IndexSpec) IndexSpec { s.Parts = []IndexPart{{Name: "pon", Type: "float"}}; return s }, "type"},
		{"unknown ref", func(s IndexSpec) IndexSpec { s.ONUID = "ont"; return s }, "names no part"},
		{"string ref without hash", func(s IndexSpec) IndexSpec {
			s.Parts = append(s.Parts[:1], IndexPart{Name: "sn", Type: PartString})
			s.ONUID = "sn"
			return s
		}, "hash"},
		{"bad template", func(s IndexSpec) IndexSpec { s.PortName = "{slot}"; return s }, "port_name"},
		{"field over 63 bits", func(s IndexSpec) IndexSpec {
			s.Parts[0].Fields = []BitField{{Name: "x", Shift: 60, Bits: 8}}
			return s
		}, "63 bits"},
		{"implied not last", func(s IndexSpec) IndexSpec {
			s.Parts = []IndexPart{{Name: "x", Type: PartImplied}, {Name: "onu", Type: PartInt}}
			s.PonIndex = "0"
			return s
		}, "last"},
		{"duplicate name", func(s IndexSpec) IndexSpec { s.Parts[1].Name = "pon"; return s }, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			s.Parts = append([]IndexPart(nil), base.Parts...)
			err := tc.mut(s).Validate()
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("Validate = %v, want %q", err, tc.err)
			}
		})
	}
}

// Format is Parse's inverse for the schemes a get can address.
func TestIndexSpecFormat(t *testing.T) {
	pon, _ := BuiltinIndex(IndexSchemePonONU)
	fh, _ := BuiltinIndex(IndexSchemeFiberhome)
	for _, tc := range []struct {
		spec     IndexSpec
		pon, onu int64
		want     string
	}{
		{pon, 4194312960, 5, "4194312960.5"},
		{fh, 1<<25 | 1<<19, 1, "34078976"},
		{fh, 2<<25 | 3<<19, 256, "68747264"},
	} {
		got, err := tc.spec.Format(tc.pon, tc.onu)
		if err != nil || got != tc.want {
			t.Errorf("Format(%d, %d) = %q, %v; want %q", tc.pon, tc.onu, got, err, tc.want)
			continue
		}
		back, err := tc.spec.Parse(got)
		if err != nil || back.PonIndex != tc.pon || back.ONUID != tc.onu {
			t.Errorf("Parse(Format) = %+v, %v", back, err)
		}
	}
	bySerial := IndexSpec{Parts: []IndexPart{{Name: "pon", Type: PartInt}, {Name: "sn", Type: PartString}}, PonIndex: "pon", ONUID: "hash(sn)"}
	if _, err := bySerial.Format(1, 2); !errors.Is(err, ErrNoRowIndex) {
		t.Errorf("Format of a string index: %v, want ErrNoRowIndex", err)
	}
}
