package oltsim

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// snmprecDir is the repo's sibling shared/snmprec, found from this file.
func snmprecDir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Skip("cannot locate test file")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "snmprec")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("snmprec dir %s absent: %v", dir, err)
	}
	return dir
}

func snmprecFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(snmprecDir(t), "*.snmprec"))
	if err != nil || len(files) == 0 {
		t.Skipf("no .snmprec files: %v", err)
	}
	return files
}

func requireBin(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (apt-get install snmp snmpsim): %v", name, err)
	}
	return p
}

func runNetSNMP(t testing.TB, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v: %s", bin, args, err, errb.String())
	}
	return out.String()
}

// netsnmpFlags make values comparable: numeric OIDs, quick print, strings
// as hex, raw timeticks.
var netsnmpFlags = []string{"-v2c", "-On", "-Oq", "-Ox", "-Ot", "-Oe", "-Cr10"}

// parseQuick turns -On -Oq -Ox output into "oid value" lines, joining hex
// strings that net-snmp wraps over several lines.
func parseQuick(out string) []string {
	var res []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.Contains(l, "No more variables left in this MIB View") {
			continue
		}
		if strings.HasPrefix(l, ".") {
			res = append(res, l)
			continue
		}
		if len(res) > 0 {
			res[len(res)-1] += " " + l
		}
	}
	for i, l := range res {
		oid, val, _ := strings.Cut(l, " ")
		if strings.HasPrefix(val, "\"") {
			val = strings.ToLower(strings.Join(strings.Fields(strings.Trim(val, "\" ")), ""))
			val = "hex:" + val
		}
		res[i] = oid + " " + val
	}
	return res
}

// viewEntries lists every varbind a view serves, in order: its encoded
// entries and the rows of its ONU tables.
func viewEntries(m *mibView) []entry {
	var out []entry
	m.walk(func(o oid, v value, dyn int) { out = append(out, entry{oid: o, val: v, dyn: dyn}) })
	return out
}

// expectQuick renders the varbinds of a view as parseQuick would.
func expectQuick(m *mibView, skipDyn bool) []string {
	var res []string
	for _, e := range viewEntries(m) {
		if e.dyn != dynNone && skipDyn {
			continue
		}
		res = append(res, "."+e.oid.String()+" "+quickValue(e.val))
	}
	return res
}

func quickValue(v value) string {
	switch v.typ {
	case tagInteger:
		return strconv.FormatInt(v.i, 10)
	case tagOctetString:
		return "hex:" + hex.EncodeToString(v.b)
	case tagOID:
		return "." + v.o.String()
	case tagIPAddress:
		return net.IP(v.b).String()
	case tagCounter32, tagGauge32, tagTimeTicks, tagCounter64:
		return strconv.FormatUint(v.u, 10)
	}
	return fmt.Sprintf("type %x", v.typ)
}

func diffLines(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d lines, want %d", len(got), len(want))
	}
	bad := 0
	for i := 0; i < min(len(got), len(want)); i++ {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, got[i], want[i])
			if bad++; bad > 5 {
				return
			}
		}
	}
}

func dropUptime(lines []string) []string {
	out := lines[:0:0]
	for _, l := range lines {
		if !strings.HasPrefix(l, ".1.3.6.1.2.1.1.3.0 ") {
			out = append(out, l)
		}
	}
	return out
}

func TestNetSNMPWalkProfiles(t *testing.T) {
	walk := requireBin(t, "snmpbulkwalk")
	get := requireBin(t, "snmpget")
	var cfg FleetConfig
	for _, p := range ProfileNames() {
		cfg.OLTs = append(cfg.OLTs, OLTConfig{Name: p, Listen: "127.0.0.1:0", Community: "s3cret", Profile: p,
			Shape: Shape{Slots: 2, PortsPerSlot: 2, ONUsPerPort: 8}, Seed: 5})
	}
	f := startFleet(t, cfg)
	for _, o := range f.OLTs() {
		t.Run(o.Name(), func(t *testing.T) {
			target := fmt.Sprintf("127.0.0.1:%d", o.Addr().Port)
			args := append(append([]string{}, netsnmpFlags...), "-c", "s3cret", target, ".1")
			got := dropUptime(parseQuick(runNetSNMP(t, walk, args...)))
			diffLines(t, got, expectQuick(o.view(), true))

			// snmpget of a few rows and of a missing one.
			es := viewEntries(o.view())
			var oids, want []string
			for i := 0; i < len(es); i += len(es)/7 + 1 {
				if es[i].dyn != dynNone {
					continue
				}
				oids = append(oids, "."+es[i].oid.String())
				want = append(want, "."+es[i].oid.String()+" "+quickValue(es[i].val))
			}
			args = append([]string{"-v2c", "-On", "-Oq", "-Ox", "-Ot", "-Oe", "-c", "s3cret", target}, oids...)
			diffLines(t, parseQuick(runNetSNMP(t, get, args...)), want)
			out := runNetSNMP(t, get, "-v2c", "-On", "-c", "s3cret", target, ".1.3.6.1.2.1.1.5.7", ".1.3.6.1.2.1.1.77.0")
			if !strings.Contains(out, ".1.3.6.1.2.1.1.5.7 = No Such Instance") || !strings.Contains(out, ".1.3.6.1.2.1.1.77.0 = No Such Object") {
				t.Errorf("exceptions: %s", out)
			}
		})
	}
}

func TestNetSNMPWalkRecordings(t *testing.T) {
	walk := requireBin(t, "snmpbulkwalk")
	get := requireBin(t, "snmpget")
	files := snmprecFiles(t)
	var cfg FleetConfig
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".snmprec")
		cfg.OLTs = append(cfg.OLTs, OLTConfig{Name: name, Listen: "127.0.0.1:0", Community: name, Recording: file})
	}
	f := startFleet(t, cfg)
	for i, o := range f.OLTs() {
		t.Run(o.Name(), func(t *testing.T) {
			want := independentSnmprec(t, files[i])
			target := fmt.Sprintf("127.0.0.1:%d", o.Addr().Port)
			args := append(append([]string{}, netsnmpFlags...), "-c", o.Name(), target, ".1")
			diffLines(t, parseQuick(runNetSNMP(t, walk, args...)), want)
			// snmpget of every 50th record.
			var oids, wantGet []string
			for j := 0; j < len(want); j += 50 {
				oid, _, _ := strings.Cut(want[j], " ")
				oids = append(oids, oid)
				wantGet = append(wantGet, want[j])
			}
			for len(oids) > 0 {
				n := min(len(oids), 20)
				args = append([]string{"-v2c", "-On", "-Oq", "-Ox", "-Ot", "-Oe", "-c", o.Name(), target}, oids[:n]...)
				diffLines(t, parseQuick(runNetSNMP(t, get, args...)), wantGet[:n])
				oids, wantGet = oids[n:], wantGet[n:]
			}
		})
	}
}

// independentSnmprec renders a recording the simple way, for comparison.
func independentSnmprec(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		oid oid
		val string
	}
	var recs []rec
	seen := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		parts := strings.SplitN(l, "|", 3)
		o, err := parseOID(parts[0])
		if err != nil {
			t.Fatal(err)
		}
		if seen[o.String()] {
			continue
		}
		seen[o.String()] = true
		v := parts[2]
		switch parts[1] {
		case "4":
			v = "hex:" + hex.EncodeToString([]byte(v))
		case "4x":
			v = "hex:" + strings.ToLower(v)
		case "6":
			v = "." + strings.TrimPrefix(v, ".")
		}
		recs = append(recs, rec{o, v})
	}
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && compareOID(recs[j-1].oid, recs[j].oid) > 0; j-- {
			recs[j-1], recs[j] = recs[j], recs[j-1]
		}
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = "." + r.oid.String() + " " + r.val
	}
	return out
}

// TestNetSNMPWalkTruncated walks through GETBULK responses cut to fit a
// small MaxResponseBytes, and checks snmpget's tooBig handling.
func TestNetSNMPWalkTruncated(t *testing.T) {
	walk := requireBin(t, "snmpbulkwalk")
	get := requireBin(t, "snmpget")
	c := huaweiConfig("small", 2, 32)
	c.MaxResponseBytes = 484
	f := startFleet(t, FleetConfig{OLTs: []OLTConfig{c}})
	o := f.OLT("small")
	target := fmt.Sprintf("127.0.0.1:%d", o.Addr().Port)
	args := []string{"-v2c", "-On", "-Oq", "-Ox", "-Ot", "-Oe", "-Cr50", "-c", "public", target, ".1"}
	diffLines(t, dropUptime(parseQuick(runNetSNMP(t, walk, args...))), expectQuick(o.view(), true))
	rec := o.Record()
	if rec.BytesOut/max(1, rec.Responses) > 484 {
		t.Errorf("mean response %d bytes over the bound", rec.BytesOut/rec.Responses)
	}
	var oids []string
	for _, u := range o.ONUs()[:30] {
		oids = append(oids, huaweiBase+".43.1.9."+u.Index)
	}
	cmd := exec.Command(get, append([]string{"-v2c", "-On", "-c", "public", target}, oids...)...)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "(tooBig)") {
		t.Errorf("snmpget of 30 rows: %s", out)
	}
}
