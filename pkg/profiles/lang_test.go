package profiles

import (
	"strings"
	"testing"
)

// The more specific match wins: the longer sysObjectID prefix, then the
// longer sysDescr match, then the priority, then the smaller id.
func TestIdentifyPrecedence(t *testing.T) {
	mk := func(id string, prio int, oids []string, descrs ...string) Profile {
		p := minimal(t, id)
		p.Match = Match{SysObjectID: oids, SysDescr: descrs, Priority: prio}
		return p
	}
	for _, tc := range []struct {
		name        string
		ps          []Profile
		oid, descr  string
		want        string
		wantMatched bool
	}{
		{"longer prefix beats priority", []Profile{mk("a", 9, []string{"1.3.6.1.4.1.9"}), mk("b", 0, []string{"1.3.6.1.4.1.9.1"})},
			"1.3.6.1.4.1.9.1.5", "", "b", true},
		{"a prefix ends at an arc", []Profile{mk("a", 0, []string{"1.3.6.1.4.1.9"}), mk("b", 0, []string{"1.3.6.1.4.1.91"})},
			"1.3.6.1.4.1.91.2", "", "b", true},
		{"sysObjectID beats sysDescr alone", []Profile{mk("a", 9, nil, "(?i)olt"), mk("b", 0, []string{"1.3.6.1.4.1.9"})},
			"1.3.6.1.4.1.9.7", "Some OLT", "b", true},
		{"same prefix: sysDescr decides", []Profile{mk("g", 5, []string{"1.3.6.1.4.1.9"}, "^X100G"), mk("d", 0, []string{"1.3.6.1.4.1.9"}, "^X100D")},
			"1.3.6.1.4.1.9.7", "X100D8", "d", true},
		{"longer sysDescr match wins", []Profile{mk("a", 5, nil, "^X1"), mk("b", 0, nil, "^X100")},
			"", "X1000", "b", true},
		{"tie: priority", []Profile{mk("a", 0, []string{"1.3.6.1.4.1.9"}), mk("b", 3, []string{"1.3.6.1.4.1.9"})},
			"1.3.6.1.4.1.9.7", "", "b", true},
		{"tie: smaller id", []Profile{mk("b", 0, []string{"1.3.6.1.4.1.9"}), mk("a", 0, []string{"1.3.6.1.4.1.9"})},
			"1.3.6.1.4.1.9.7", "", "a", true},
		{"none", []Profile{mk("a", 0, []string{"1.3.6.1.4.1.9"}, "^X")}, "1.3.6.1.4.1.8", "Y", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.ps...)
			if err != nil {
				t.Fatal(err)
			}
			p, ok := c.Identify(tc.oid, tc.descr)
			if ok != tc.wantMatched || p.ID != tc.want {
				t.Errorf("Identify(%q, %q) = %q %v, want %q %v", tc.oid, tc.descr, p.ID, ok, tc.want, tc.wantMatched)
			}
		})
	}
}

func minimal(t *testing.T, id string) Profile {
	t.Helper()
	p, err := Parse([]byte(`id: `+id+`
name: `+id+`
index_scheme: s
index: {parts: [{name: pon, type: int}, {name: onu, type: int}], pon_index: pon, onu_id: onu}
columns: [{id: sn, name: sn, oid: 1.3.6.1.4.1.9.1, field: serial, decoder: {kind: string}}]
jobs: [{id: d, name: d, kind: discovery, columns: [sn], interval_seconds: 60}]
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// What the profile language refuses, each with the reason in the error.
func TestProfileLanguageValidation(t *testing.T) {
	const head = "id: t\nname: t\nindex_scheme: s\n"
	const cols = `columns:
  - {id: name, name: n, oid: 1.3.6.1.2.1.31.1.1.1.1, field: name, decoder: {kind: string}}
  - {id: st, name: s, oid: 1.3.6.1.2.1.2.2.1.8, field: status, decoder: {kind: enum, enum: {"1": ONLINE}}}
`
	const ifIndex = "index: {parts: [{name: ifindex, type: int}], pon_index: \"0\", onu_id: onu, key: {column: name, pattern: '^Ont (?P<onu>[0-9]+)'}}\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"get on a string index", head + `index: {parts: [{name: pon, type: int}, {name: sn, type: string}], pon_index: pon, onu_id: hash(sn)}
` + cols + "jobs: [{id: g, name: g, kind: get, columns: [st], interval_seconds: 60}]\n", `part "sn" is a string`},
		{"get on a value key", head + ifIndex + cols + "jobs: [{id: g, name: g, kind: get, columns: [name, st], interval_seconds: 60}]\n", "named by a column's value"},
		{"walk without the key column", head + ifIndex + cols + "jobs: [{id: w, name: w, kind: bulkwalk, columns: [st], interval_seconds: 60}]\n", `reads column "name": add it`},
		{"key column unknown", head + strings.Replace(ifIndex, "column: name", "column: nope", 1) + cols + "jobs: [{id: w, name: w, kind: bulkwalk, columns: [st], interval_seconds: 60}]\n", `column "nope" is not in the profile`},
		{"key without groups", head + strings.Replace(ifIndex, "(?P<onu>[0-9]+)", "[0-9]+", 1) + cols + "jobs: [{id: w, name: w, kind: bulkwalk, columns: [name], interval_seconds: 60}]\n", "named groups"},
		{"filter pattern", head + `index: {parts: [{name: ifindex, type: int}], pon_index: "0", onu_id: ifindex, filter: [{column: name, match: "("}]}
` + cols + "jobs: [{id: w, name: w, kind: bulkwalk, columns: [name, st], interval_seconds: 60}]\n", "index filter 1: match"},
		{"regex decoder without pattern", head + `index: {parts: [{name: pon, type: int}, {name: onu, type: int}], pon_index: pon, onu_id: onu}
columns: [{id: rx, name: rx, oid: 1.3.6.1.4.1.9.1, field: rx_power, decoder: {kind: regex}}]
jobs: [{id: w, name: w, kind: bulkwalk, columns: [rx], interval_seconds: 60}]
`, "pattern of 1..512"},
		{"regex decoder group", head + `index: {parts: [{name: pon, type: int}, {name: onu, type: int}], pon_index: pon, onu_id: onu}
columns: [{id: rx, name: rx, oid: 1.3.6.1.4.1.9.1, field: rx_power, decoder: {kind: regex, pattern: '(-?[0-9.]+) dBm', group: dbm}}]
jobs: [{id: w, name: w, kind: bulkwalk, columns: [rx], interval_seconds: 60}]
`, `no group named "dbm"`},
		{"unit", head + `index: {parts: [{name: pon, type: int}, {name: onu, type: int}], pon_index: pon, onu_id: onu}
columns: [{id: rx, name: rx, oid: 1.3.6.1.4.1.9.1, field: rx_power, decoder: {kind: scaled, unit: W}}]
jobs: [{id: w, name: w, kind: bulkwalk, columns: [rx], interval_seconds: 60}]
`, `unit "W"`},
		{"trim on a number", head + `index: {parts: [{name: pon, type: int}, {name: onu, type: int}], pon_index: pon, onu_id: onu}
columns: [{id: rx, name: rx, oid: 1.3.6.1.4.1.9.1, field: rx_power, decoder: {kind: scaled, trim: true}}]
jobs: [{id: w, name: w, kind: bulkwalk, columns: [rx], interval_seconds: 60}]
`, "trim applies to the text kinds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "t.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v, want an error with %q", err, tc.want)
			}
		})
	}
	// The same value-keyed profile with the key column in its walk is valid.
	if _, err := Parse([]byte(head+ifIndex+cols+"jobs: [{id: w, name: w, kind: discovery, columns: [name, st], interval_seconds: 60}]\n"), "t.yaml"); err != nil {
		t.Errorf("valid value-keyed profile: %v", err)
	}
}
