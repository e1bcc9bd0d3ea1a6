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
}
