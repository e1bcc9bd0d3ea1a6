package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/services/oltsim"
)

func TestProfilesCommand(t *testing.T) {
	ctx := context.Background()
	env := func(string) string { return "" }
	var out bytes.Buffer
	if err := run(ctx, []string{"profiles", "list"}, env, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"huawei-ma5800", "zte-1082", "zte-1012", "fiberhome-an5516", "vsol-v1600", "cdata-fd16xx", "nokia-isam", "generic-if-mib"} {
		if !strings.Contains(out.String(), id) {
			t.Errorf("list lacks %s:\n%s", id, out.String())
		}
	}
	out.Reset()
	if err := run(ctx, []string{"profiles", "show", "zte-1082"}, env, &out, &out); err != nil || !strings.Contains(out.String(), `"index_scheme": "zte-1082-ifindex"`) {
		t.Errorf("show: %v\n%s", err, out.String())
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("id: x\nname: X\nindex_scheme: s\nindex: {parts: [{name: pon, type: int}], pon_index: pon, onu_id: nope}\ncolumns: [{id: a, name: a, oid: 1.3.6, field: rx_power, decoder: {kind: scaled}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"profiles", "check", bad}, env, &out, &out); err == nil || !strings.Contains(err.Error(), "onu_id") {
		t.Errorf("check of a bad profile: %v", err)
	}
	// The trap map is checked: a kind that sets an ONU's status needs the
	// ONU's locator; a valid map is listed.
	head := "id: t\nname: T\nindex_scheme: s\nindex: {parts: [{name: pon, type: int}, {name: onu, type: int}], pon_index: pon, onu_id: onu}\ncolumns: [{id: a, name: a, oid: 1.3.6.1.9.1, field: status, decoder: {kind: int}}]\n"
	if err := os.WriteFile(bad, []byte(head+"traps: [{id: los, oid: 1.3.6.1.9.0.1, kind: los}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"profiles", "check", bad}, env, &out, &out); err == nil || !strings.Contains(err.Error(), "onu (where the ONU's index is) is required") {
		t.Errorf("check of a bad trap map: %v", err)
	}
	good := filepath.Join(t.TempDir(), "good.yaml")
	if err := os.WriteFile(good, []byte(head+"traps: [{id: los, oid: 1.3.6.1.9.0.1, kind: los, onu: {index_of: 1.3.6.1.9.1}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(ctx, []string{"profiles", "check", good}, env, &out, &out); err != nil || !strings.Contains(out.String(), "1 traps mapped") || !strings.Contains(out.String(), "trap los 1.3.6.1.9.0.1: los") {
		t.Errorf("check of a trap map: %v\n%s", err, out.String())
	}

	fleet, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "hw", Listen: "127.0.0.1:0", Community: "secret-c",
		Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 3}, Seed: 5}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	sim := fleet.OLT("hw")
	out.Reset()
	file := filepath.Join("..", "..", "..", "..", "pkg", "profiles", "profiles", "huawei-ma5800.yaml")
	withCommunity := func(k string) string {
		if k == "FACHO_SNMP_COMMUNITY" {
			return "secret-c"
		}
		return ""
	}
	if err := run(ctx, []string{"profiles", "check", file, sim.Addr().String()}, withCommunity, &out, &out); err != nil {
		t.Fatalf("check: %v\n%s", err, out.String())
	}
	text := out.String()
	if !strings.Contains(text, "matches the profile's rules") || !strings.Contains(text, "3 ONUs; 0 of") {
		t.Errorf("check output:\n%s", text)
	}
	for _, o := range sim.ONUs() {
		port := fmt.Sprintf("0/1/0:%d", o.ID)
		if !strings.Contains(text, port+"\t") || !strings.Contains(text, "serial="+o.Serial) {
			t.Errorf("check output lacks onu %s (%s):\n%s", port, o.Serial, text)
		}
	}
	if strings.Contains(text, "secret-c") {
		t.Error("the community shows in the output")
	}
	// The health section is read too: the simulator's fans, PSUs and PON
	// port as it serves them.
	h := sim.Health()
	want := []string{fmt.Sprintf("health: %d fans, %d psus, %d pon ports, %d uplinks", len(h.Fans), len(h.PSUs), len(h.PONs), len(h.Uplinks))}
	for _, f := range h.Fans {
		want = append(want, "fan "+f.Index+" : ok")
	}
	for _, p := range h.PONs {
		want = append(want, fmt.Sprintf("pon %d %s (pon_index %d): admin up oper up", p.Index, p.Name, p.Index))
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("check output lacks %q:\n%s", w, text)
		}
	}
}

// `profiles check` against an agent warns about implausible readings: the
// mW figure of "0.03 mW (-14.61 dBm)" read as dBm by float_string, a
// scale off by a hundred, a column of zeros; the same table read with the
// regex decoder gives no warning.
func TestProfilesCheckWarnsOnImplausibleValues(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var rec strings.Builder
	rec.WriteString("1.3.6.1.2.1.1.1.0|4|ACME\n1.3.6.1.2.1.1.2.0|6|1.3.6.1.4.1.99997.1\n")
	for i, v := range []string{"0.03 mW (-14.61 dBm)", "0.02 mW (-16.99 dBm)", "0.05 mW (-13.01 dBm)"} {
		fmt.Fprintf(&rec, "1.3.6.1.4.1.99997.1.1.%d|4|%s\n", i+1, v)
	}
	for i, v := range []int{-1461, -1699, -1301} {
		fmt.Fprintf(&rec, "1.3.6.1.4.1.99997.1.2.%d|2|%d\n", i+1, v)
	}
	for i := range 3 {
		fmt.Fprintf(&rec, "1.3.6.1.4.1.99997.1.3.%d|2|0\n", i+1)
	}
	recPath := filepath.Join(dir, "acme.snmprec")
	if err := os.WriteFile(recPath, []byte(rec.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	fleet, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "acme", Listen: "127.0.0.1:0", Community: "public", Recording: recPath}}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	profile := func(rx string) string {
		path := filepath.Join(dir, "p.yaml")
		text := `id: acme
name: ACME
index_scheme: s
index: {parts: [{name: onu, type: int}], pon_index: "0", onu_id: onu}
columns:
  - {id: rx, name: rx, oid: 1.3.6.1.4.1.99997.1.1, field: rx_power, decoder: ` + rx + `}
  - {id: tx, name: tx, oid: 1.3.6.1.4.1.99997.1.2, field: tx_power, decoder: {kind: scaled, scale: 1}}
  - {id: temp, name: temperature, oid: 1.3.6.1.4.1.99997.1.3, field: temperature, decoder: {kind: scaled, scale: 0.1}}
jobs: [{id: w, name: w, kind: bulkwalk, columns: [rx, tx, temp], interval_seconds: 60}]
`
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	env := func(string) string { return "" }
	var out bytes.Buffer
	if err := run(ctx, []string{"profiles", "check", profile("{kind: float_string}"), fleet.OLT("acme").Addr().String()}, env, &out, &out); err != nil {
		t.Fatalf("check: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`warning: column rx (rx_power): the text carries "mW"`,
		"warning: column tx (tx_power): 3 of 3 values outside -50..+10 dBm (e.g. -1301)",
		"warning: column temp (temperature): every value (3) is 0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run(ctx, []string{"profiles", "check", profile(`{kind: regex, pattern: '\((-?[0-9.]+) dBm\)'}`), fleet.OLT("acme").Addr().String()}, env, &out, &out); err != nil {
		t.Fatalf("check: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "warning: column rx") || !strings.Contains(out.String(), "rx_power=-14.61") {
		t.Errorf("the regex decoder reads the dBm figure without a warning:\n%s", out.String())
	}

	// A folder with a bad file: list shows it and fails.
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "broken.yaml"), []byte("id: b\nname: B\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(ctx, []string{"profiles", "list", "--dir", bad}, env, &out, &out); err == nil || !strings.Contains(out.String(), "not loaded: "+filepath.Join(bad, "broken.yaml")) ||
		!strings.Contains(out.String(), "huawei-ma5800") {
		t.Errorf("list with a bad file: %v\n%s", err, out.String())
	}
}
