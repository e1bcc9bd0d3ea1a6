package oltsim

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestAllRecordingsLoad(t *testing.T) {
	for _, file := range snmprecFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			m, err := loadSnmprec(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.entries) < 50 {
				t.Errorf("only %d entries", len(m.entries))
			}
			for i := 1; i < len(m.entries); i++ {
				if compareOID(m.entries[i-1].oid, m.entries[i].oid) >= 0 {
					t.Fatalf("not sorted at %d", i)
				}
			}
		})
	}
}

func TestParseSnmprec(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
		check   func(t *testing.T, m *mibView)
	}{
		{"types and untidy lines", strings.Join([]string{
			"# comment", "", "1.3.6.1.2.1.1.1.0|4|  text with spaces|and pipe  ",
			"1.3.6.1.2.1.1.2.0|6|.1.3.6.1.4.1.9", "1.3.6.1.2.1.1.3.0|67|100\r",
			"1.3.6.1.2.1.2.2.1.6.1|4x|00AaFF", "1.3.6.1.2.1.4.20.1.3.10.0.0.1|64|255.255.255.0",
			"1.3.6.1.2.1.31.1.1.1.6.1|70|18446744073709551615", "1.3.6.1.2.1.2.2.1.10.1|65|4294967295",
			"1.3.6.1.2.1.2.2.1.5.1|66|1000", "1.3.6.1.2.1.2.2.1.1.1|2|-2147483648", "1.3.6.1.9|4e|a\\nb\\x41",
			"1.3.6.1.2.1.1.5.0|4|", ".1.3.6.1.2.1.1.4.0|4|x",
		}, "\n"), "", func(t *testing.T, m *mibView) {
			if len(m.entries) != 12 {
				t.Fatalf("%d entries", len(m.entries))
			}
			get := func(s string) value {
				i, ok := m.find(mustOID(s))
				if !ok {
					t.Fatalf("%s missing", s)
				}
				return m.entries[i].val
			}
			if v := get("1.3.6.1.2.1.1.1.0"); string(v.b) != "  text with spaces|and pipe" {
				t.Errorf("string %q", v.b)
			}
			if v := get("1.3.6.1.2.1.2.2.1.6.1"); string(v.b) != "\x00\xaa\xff" {
				t.Errorf("hex %x", v.b)
			}
			if v := get("1.3.6.1.9"); string(v.b) != "a\nbA" {
				t.Errorf("escaped %q", v.b)
			}
			if v := get("1.3.6.1.2.1.31.1.1.1.6.1"); v.typ != tagCounter64 || v.u != 18446744073709551615 {
				t.Errorf("counter64 %+v", v)
			}
			if m.missTag(mustOID("1.3.6.1.2.1.1")) != tagNoSuchInstance {
				t.Error("recordings answer noSuchInstance to every GET miss, like snmpsim")
			}
		}},
		{"duplicate OID", "1.3.6.1.2.1.1.1.0|4|first\n1.3.6.1.2.1.1.1.0|4|second\n1.3.6.1.2.1.1.2.0|2|1", "", func(t *testing.T, m *mibView) {
			if len(m.entries) != 2 {
				t.Fatalf("%d entries", len(m.entries))
			}
			e := m.entries[0]
			if string(e.val.b) != "first" || !strings.Contains(string(e.getEnc), "second") {
				t.Errorf("walk value %q, get value %q", e.val.b, e.getEnc)
			}
		}},
		{"unsorted", "1.3.6.1.2.1.1.2.0|2|2\n1.3.6.1.2.1.1.10.0|2|10\n1.3.6.1.2.1.1.1.0|2|1", "", func(t *testing.T, m *mibView) {
			if m.entries[0].val.i != 1 || m.entries[1].val.i != 2 || m.entries[2].val.i != 10 {
				t.Errorf("order %v %v %v", m.entries[0].val, m.entries[1].val, m.entries[2].val)
			}
		}},
		{"broken record", "1.3.6.1|4", "broken record", nil},
		{"bad integer", "1.3.6.1|2|abc", "integer", nil},
		{"integer overflow", "1.3.6.1|2|2147483648", "out of range", nil},
		{"bad hex", "1.3.6.1|4x|0g", "hex", nil},
		{"unknown tag", "1.3.6.1|99|1", "unsupported tag", nil},
		{"variation module", "1.3.6.1|2:numeric|1", "unsupported tag", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parseSnmprec(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, m)
		})
	}
}
