package streams

import (
	"errors"
	"hash/fnv"
	"strings"
	"testing"
)

// A key from a value: named groups as index names (integers, 0 when the
// group took no part, hash() of text), a name in several alternatives,
// filters by match and invert, rows that are no ONU.
func TestParseRowValueKey(t *testing.T) {
	const name, descr = "1.3.6.1.2.1.31.1.1.1.1", "1.3.6.1.2.1.2.2.1.2"
	spec := IndexSpec{
		Parts:    []IndexPart{{Name: "ifindex", Type: PartInt}},
		Key:      &ValueKey{OID: name, Pattern: `(?i)^(?:ont\s*(?P<onu>[0-9]+)(?:/\S*)?|gpon0?(?P<pon>[0-9]+)onu(?P<onu>[0-9]+)|(?P<pon>[0-9]+)-(?P<onu>[0-9]+))$`},
		Filter:   []RowFilter{{OID: descr, Match: `(?i)uplink`, Invert: true}},
		PonIndex: "pon", ONUID: "onu", PortName: "{pon}:{onu}",
	}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	h := func(s string) int64 { f := fnv.New32a(); f.Write([]byte(s)); return int64(f.Sum32() & 0x7fffffff) }
	p := spec.Parser()
	for _, tc := range []struct {
		suffix, name, descr string
		pon, onu            int64
		port                string
		filtered            bool
	}{
		{"10", "Ont 50515061/g1", "ONT port", 0, 50515061, ":50515061", false},
		{"11", "GPON01ONU3", "ONT", 1, 3, "1:3", false},
		{"12", "7-42", "ONT", 7, 42, "7:42", false},
		{"13", "ge-1/1", "port", 0, 0, "", true},             // no match
		{"14", "Ont 5/g1", "Uplink to core", 0, 0, "", true}, // the inverted filter drops it
	} {
		vals := map[string]string{name: tc.name, descr: tc.descr}
		pi, err := p.ParseRow(tc.suffix, func(oid string) (string, bool) { v, ok := vals[oid]; return v, ok }, func(string) bool { return true })
		if tc.filtered {
			if !errors.Is(err, ErrRowFiltered) {
				t.Errorf("%q: %+v %v, want filtered", tc.name, pi, err)
			}
			continue
		}
		if err != nil || pi.PonIndex != tc.pon || pi.ONUID != tc.onu || pi.PortName != tc.port || pi.Index != tc.suffix {
			t.Errorf("%q: %+v %v, want pon %d onu %d port %q", tc.name, pi, err, tc.pon, tc.onu, tc.port)
		}
	}
	// A batch that does not read the filter's column is not filtered by
	// it; one that does not read the key's column cannot name the ONU.
	pi, err := p.ParseRow("14", func(oid string) (string, bool) { return "Ont 5/g1", oid == name }, func(oid string) bool { return oid == name })
	if err != nil || pi.ONUID != 5 {
		t.Errorf("filter column not read: %+v %v", pi, err)
	}
	if _, err := p.ParseRow("14", func(string) (string, bool) { return "", false }, func(string) bool { return false }); err == nil || errors.Is(err, ErrRowFiltered) {
		t.Errorf("key column not read: %v", err)
	}
	if _, err := spec.Formatter(); !errors.Is(err, ErrNoRowIndex) {
		t.Errorf("a value key rebuilds a row index: %v", err)
	}
	if _, err := spec.Parse("10"); err == nil {
		t.Error("Parse without the row's values names an ONU")
	}
	// A text group is hashed; referred to as an integer it is no key.
	spec.Key.Pattern = `^(?P<pon>[0-9]+)-(?P<sn>[A-Z]{4}[0-9A-F]{8})$`
	spec.ONUID, spec.PortName = "hash(sn)", "{pon}/{sn}"
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	pi, err = spec.Parser().ParseRow("1", func(string) (string, bool) { return "7-HWTC1A2B3C4D", true }, func(string) bool { return true })
	if err != nil || pi.PonIndex != 7 || pi.ONUID != h("HWTC1A2B3C4D") || pi.PortName != "7/HWTC1A2B3C4D" {
		t.Errorf("hashed group: %+v %v", pi, err)
	}
	spec.ONUID = "sn"
	if _, err := spec.Parser().ParseRow("1", func(string) (string, bool) { return "7-HWTC1A2B3C4D", true }, func(string) bool { return true }); err == nil || errors.Is(err, ErrRowFiltered) {
		t.Errorf("a text group as an integer: %v", err)
	}
}

func TestValidateRowRules(t *testing.T) {
	base := func() IndexSpec {
		return IndexSpec{Parts: []IndexPart{{Name: "ifindex", Type: PartInt}}, PonIndex: "0", ONUID: "onu",
			Key: &ValueKey{OID: "1.3.6.1.2.1.31.1.1.1.1", Pattern: `^Ont (?P<onu>[0-9]+)`}}
	}
	for _, tc := range []struct {
		name string
		edit func(s *IndexSpec)
		want string
	}{
		{"no oid", func(s *IndexSpec) { s.Key.OID = "" }, "index key: oid"},
		{"bad pattern", func(s *IndexSpec) { s.Key.Pattern = "(" }, "index key: pattern"},
		{"long pattern", func(s *IndexSpec) { s.Key.Pattern = strings.Repeat("a", MaxPatternLen+1) }, "1..512"},
		{"group clashes with a part", func(s *IndexSpec) { s.Key.Pattern = `(?P<ifindex>[0-9]+)` }, `group "ifindex": name used twice`},
		{"bad group name", func(s *IndexSpec) { s.Key.Pattern = `(?P<Onu>[0-9]+)`; s.ONUID = "ifindex" }, `group "Onu"`},
		{"unknown reference", func(s *IndexSpec) { s.ONUID = "nope" }, `"nope" names no part`},
		{"fields of a group", func(s *IndexSpec) { s.ONUID = "onu[a]" }, "[fields] applies to an int part"},
		{"filter oid", func(s *IndexSpec) { s.Filter = []RowFilter{{Match: "x"}} }, "index filter 1: oid"},
		{"filter match", func(s *IndexSpec) { s.Filter = []RowFilter{{OID: "1.3.6", Match: ""}} }, "index filter 1: match"},
		{"too many filters", func(s *IndexSpec) { s.Filter = make([]RowFilter, maxRowFilters+1) }, "at most 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			k := *s.Key
			s.Key = &k
			tc.edit(&s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
	if err := base().Validate(); err != nil {
		t.Errorf("valid spec: %v", err)
	}
}
