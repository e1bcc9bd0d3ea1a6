package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinProfilesValid(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cdata-fd16xx", "fiberhome-an5516", "generic-if-mib", "huawei-ma5800", "nokia-isam", "vsol-v1600", "vsol-v1600d", "zte-1012", "zte-1082"}
	var got []string
	for _, p := range c.List() {
		got = append(got, p.ID)
	}
	if len(got) != len(want) {
		t.Fatalf("profiles %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("profiles %v, want %v", got, want)
		}
	}
}

func TestIdentify(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ oid, descr, want string }{
		{"1.3.6.1.4.1.2011.2.248", "Huawei Integrated Access Software (MA5800)", "huawei-ma5800"},
		{".1.3.6.1.4.1.2011.2.123", "Huawei Integrated Access Software", "huawei-ma5800"},
		{"1.3.6.1.4.1.3902.1082.1001.300.2.1", "C300 Version V2.1.0 Software", "zte-1082"},
		{"1.3.6.1.4.1.3902.1015.1010.1.1", "C300 Version V1.2.5", "zte-1012"},
		{"1.3.6.1.4.1.5875.800.1001.11", "AN5516-01", "fiberhome-an5516"},
		{"1.3.6.1.4.1.37950.1.1.5.10.14.1", "V1600GS", "vsol-v1600"},
		{"1.3.6.1.4.1.37950.1.1.5.10.14.1", "V1600D8", "vsol-v1600d"}, // same sysObjectID, the sysDescr decides
		{"1.3.6.1.4.1.37950.1.1.5.10.14.1", "V1600D", "vsol-v1600d"},
		{"1.3.6.1.4.1.37950.1.1.5.10.14.1", "V9999", "vsol-v1600"}, // unknown model: priority
		{"", "V1600D4", "vsol-v1600d"},
		{".1.3.6.1.4.1.17409", "zaporojskoe-olt", "cdata-fd16xx"},
		{"1.3.6.1.4.1.637.61.1", "ISAM FX", "nokia-isam"},
		{"", "AN5516-06", "fiberhome-an5516"}, // sysDescr alone
		{"1.3.6.1.4.1.20110", "", ""},         // a prefix must end at an arc
		{"1.3.6.1.4.1.424242", "Mystery", ""},
	} {
		p, ok := c.Identify(tc.oid, tc.descr)
		if (tc.want == "") == ok || p.ID != tc.want {
			t.Errorf("Identify(%q, %q) = %q %v, want %q", tc.oid, tc.descr, p.ID, ok, tc.want)
		}
	}
}

func TestLoadFolder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("mine.yaml", `id: huawei-ma5800
name: my Huawei
match: {sys_object_id: ["1.3.6.1.4.1.2011"]}
index_scheme: s
index: {parts: [{name: pon, type: int}, {name: onu, type: int}], pon_index: pon, onu_id: onu}
columns: [{id: sn, name: sn, oid: 1.3.6.1.4.1.2011.1, field: serial, decoder: {kind: string}}]
jobs: [{id: d, name: d, kind: discovery, columns: [sn], interval_seconds: 60}]
`)
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Get("huawei-ma5800"); p.Name != "my Huawei" || !strings.HasPrefix(p.Source, dir) {
		t.Errorf("a folder profile does not replace the built-in one: %+v", p)
	}
	problem := func(file string) string {
		t.Helper()
		c, err := Load(dir)
		if err != nil {
			t.Fatalf("a bad file fails the whole load: %v", err)
		}
		if p, _ := c.Get("huawei-ma5800"); p.Name != "my Huawei" {
			t.Errorf("a bad file drops the good ones")
		}
		for _, p := range c.Problems() {
			if p.Source == filepath.Join(dir, file) {
				return p.Error
			}
		}
		t.Fatalf("%s: no problem listed: %+v", file, c.Problems())
		return ""
	}
	write("typo.yaml", "id: x\nname: X\nindx_scheme: s\n")
	if err := problem("typo.yaml"); !strings.Contains(err, "indx_scheme") {
		t.Errorf("unknown key: %v", err)
	}
	write("typo.yaml", `id: y
name: Y
index_scheme: s
index: {parts: [{name: pon, type: int}], pon_index: pon, onu_id: pon}
columns: [{id: a, name: a, oid: 1.3.6.1, field: rx_powr, decoder: {kind: scaled}}]
jobs: [{id: d, name: d, kind: get, columns: [b], interval_seconds: 5}]
`)
	perr := problem("typo.yaml")
	for _, want := range []string{"rx_powr", `column "b" is not in the profile`, "interval_seconds 5"} {
		if !strings.Contains(perr, want) {
			t.Errorf("bad profile: %v, want %q", perr, want)
		}
	}
	if _, err := Load(filepath.Join(dir, "nothing-here")); err == nil {
		t.Error("a folder that cannot be read loads")
	}
}

// Every profile with a get job can address its ONUs again from their key
// (the poller rebuilds each ONU's row index from pon_index and onu_id).
func TestGetJobsCanAddressONUs(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	samples := map[string]string{
		"huawei-ma5800": "4194312960.5", "zte-1082": "285278467.9", "zte-1012": "268566784.9",
		"nokia-isam": "16908801", "fiberhome-an5516": "34079232", "vsol-v1600": "3.12",
	}
	for _, p := range c.List() {
		hasGet := false
		for _, j := range p.Jobs {
			hasGet = hasGet || j.Kind == "get"
		}
		if !hasGet {
			continue
		}
		idx, ok := samples[p.ID]
		if !ok {
			t.Errorf("%s has a get job: add a sample row index", p.ID)
			continue
		}
		pi, err := p.Index.Parse(idx)
		if err != nil {
			t.Fatalf("%s: %v", p.ID, err)
		}
		back, err := p.Index.Format(pi.PonIndex, pi.ONUID)
		if err != nil || back != idx {
			t.Errorf("%s: Format(Parse(%s)) = %q, %v", p.ID, idx, back, err)
		}
	}
}
