package projector

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// rawKey is what the test itself reads from a row index, with the
// vendor's arithmetic written out here (not Facho's index schemes).
type rawKey struct {
	key  ONUKey
	port string
}

func arcs(s string) []int64 {
	var out []int64
	for _, a := range strings.Split(s, ".") {
		n, _ := strconv.ParseInt(a, 10, 64)
		out = append(out, n)
	}
	return out
}

// vendorKeys: per profile, column id -> raw row index -> key and port name.
var vendorKeys = map[string]func(col, suffix string) rawKey{
	"huawei-ma5800": func(_, s string) rawKey {
		a := arcs(s)
		off := a[0] - 4194304000
		return rawKey{ONUKey{a[0], a[1]}, fmt.Sprintf("0/%d/%d:%d", off/8192, off%8192/256, a[1])}
	},
	"zte-1082": func(col, s string) rawKey {
		a := arcs(s)
		if col == "tx-power" { // 1012 tree: 0x10000000 | slot<<16 | port<<8
			slot, port := a[0]/65536%256, a[0]/256%256
			return rawKey{ONUKey{0x11000000 + 1*65536 + slot*256 + port, a[1]}, ""}
		}
		return rawKey{ONUKey{a[0], a[1]}, fmt.Sprintf("gpon-onu_%d/%d/%d:%d", a[0]/65536%256, a[0]/256%256, a[0]%256, a[1])}
	},
	"generic-if-mib": func(_, s string) rawKey {
		a := arcs(s)
		return rawKey{ONUKey{0, a[0]}, fmt.Sprintf("if%d", a[0])}
	},
	"zte-1012": func(_, s string) rawKey {
		a := arcs(s)
		return rawKey{ONUKey{a[0], a[1]}, fmt.Sprintf("gpon-onu_1/%d/%d:%d", a[0]/65536%256, a[0]/256%256, a[1])}
	},
	"fiberhome-an5516": func(_, s string) rawKey {
		v := arcs(s)[0]
		slot, pon, onu := v/(1<<25), v/(1<<19)%64, v/256%2048
		return rawKey{ONUKey{slot*(1<<25) + pon*(1<<19), onu}, fmt.Sprintf("%d/%d:%d", slot, pon, onu)}
	},
	"vsol-v1600": func(_, s string) rawKey {
		a := arcs(s)
		return rawKey{ONUKey{a[0], a[1]}, fmt.Sprintf("GPON0/%d:%d", a[0], a[1])}
	},
}

func rawInt(v streams.Varbind) int64 { n, _ := strconv.ParseInt(v.Value, 10, 64); return n }
func rawText(v streams.Varbind) string {
	b, _ := hex.DecodeString(v.Value)
	return strings.TrimSpace(string(b))
}
func rawFloat(v streams.Varbind) any { f, _ := strconv.ParseFloat(rawText(v), 64); return f }
func sentinel(n, s int64, f float64) any {
	if n == s {
		return nil
	}
	return f
}

// vendorValues: per profile and column id, the field value the raw
// varbind means, per shared/OLT-OIDS.md.
var vendorValues = map[string]map[string]func(v streams.Varbind) any{
	"huawei-ma5800": {
		"serial": func(v streams.Varbind) any {
			b, _ := hex.DecodeString(v.Value)
			return string(b[:4]) + strings.ToUpper(hex.EncodeToString(b[4:]))
		},
		"description": func(v streams.Varbind) any { return rawText(v) },
		"status":      func(v streams.Varbind) any { return map[int64]string{1: "ONLINE", 2: "OFFLINE"}[rawInt(v)] },
		"distance":    func(v streams.Varbind) any { return sentinel(rawInt(v), -1, float64(rawInt(v))) },
		"last-down-cause": func(v streams.Varbind) any {
			return map[int64]string{2: "LOS", 13: "DYING_GASP", 16: "POWER_OFF"}[rawInt(v)]
		},
		"tx-power":     func(v streams.Varbind) any { return sentinel(rawInt(v), 2147483647, float64(rawInt(v))/100) },
		"rx-power":     func(v streams.Varbind) any { return sentinel(rawInt(v), 2147483647, float64(rawInt(v))/100) },
		"olt-rx-power": func(v streams.Varbind) any { return sentinel(rawInt(v), 2147483647, float64(rawInt(v)-10000)/100) },
	},
	"zte-1082": {
		"name":        func(v streams.Varbind) any { return rawText(v) },
		"description": func(v streams.Varbind) any { return rawText(v) },
		"serial":      func(v streams.Varbind) any { return rawText(v) },
		"status": func(v streams.Varbind) any {
			return map[int64]string{2: "LOS", 4: "ONLINE", 5: "DYING_GASP", 7: "OFFLINE"}[rawInt(v)]
		},
		"last-down-cause": func(v streams.Varbind) any {
			return map[int64]string{2: "LOS", 13: "DYING_GASP", 16: "POWER_OFF"}[rawInt(v)]
		},
		"distance": func(v streams.Varbind) any { return sentinel(rawInt(v), -1, float64(rawInt(v))) },
		"rx-power": func(v streams.Varbind) any { return sentinel(rawInt(v), 65535, float64(rawInt(v))*0.002-30) },
		"tx-power": func(v streams.Varbind) any { return sentinel(rawInt(v), 65535, float64(rawInt(v))*0.002-30) },
	},
	"generic-if-mib": {
		"descr": func(v streams.Varbind) any { return rawText(v) },
		"name":  func(v streams.Varbind) any { return rawText(v) },
		"status": func(v streams.Varbind) any {
			return map[int64]string{1: "ONLINE", 2: "OFFLINE", 3: "TESTING", 5: "DORMANT", 6: "NOT_PRESENT", 7: "LOWER_LAYER_DOWN"}[rawInt(v)]
		},
	},
	"zte-1012": {
		"tx-power": func(v streams.Varbind) any { return sentinel(rawInt(v), 65535, float64(rawInt(v))*0.002-30) },
	},
	"fiberhome-an5516": {
		"model":       func(v streams.Varbind) any { return strconv.FormatInt(rawInt(v), 10) }, // a type code
		"description": func(v streams.Varbind) any { return rawText(v) },
		"serial":      func(v streams.Varbind) any { return rawText(v) },
		"status":      func(v streams.Varbind) any { return map[int64]string{1: "ONLINE", 2: "OFFLINE"}[rawInt(v)] },
		"rx-power":    func(v streams.Varbind) any { return float64(rawInt(v)) / 100 },
		"tx-power":    func(v streams.Varbind) any { return float64(rawInt(v)) / 100 },
		"voltage":     func(v streams.Varbind) any { return float64(rawInt(v)) / 100 },
		"bias":        func(v streams.Varbind) any { return float64(rawInt(v)) / 100 },
		"temperature": func(v streams.Varbind) any { return float64(rawInt(v)) / 100 },
	},
	"vsol-v1600": {
		"status":      func(v streams.Varbind) any { return map[int64]string{2: "OFFLINE", 3: "ONLINE"}[rawInt(v)] },
		"description": func(v streams.Varbind) any { return rawText(v) },
		"serial":      func(v streams.Varbind) any { return rawText(v) },
		"temperature": rawFloat, "voltage": rawFloat, "bias": rawFloat, "tx-power": rawFloat, "rx-power": rawFloat,
	},
}

// fieldOf is what DecodeBatch made of field for one ONU.
func fieldOf(f *ONUFields, field string) (any, bool) {
	s := func(p *string) (any, bool) {
		if p == nil {
			return nil, false
		}
		return *p, true
	}
	switch field {
	case streams.FieldSerial:
		return s(f.Serial)
	case streams.FieldDescription:
		return s(f.Description)
	case streams.FieldStatus:
		return s(f.Status)
	case streams.FieldRxPower:
		if f.RxPowerDBm == nil {
			return nil, f.RxPowerSet
		}
		return *f.RxPowerDBm, true
	}
	if v, ok := f.Text[field]; ok {
		return v, true
	}
	if v, ok := f.Num[field]; ok {
		if v == nil {
			return nil, true
		}
		return *v, true
	}
	if v, ok := f.Time[field]; ok {
		if v == nil {
			return nil, true
		}
		return *v, true
	}
	return nil, false
}

func same(a, b any) bool {
	x, ok1 := a.(float64)
	y, ok2 := b.(float64)
	if ok1 && ok2 {
		return math.Abs(x-y) < 1e-6
	}
	return a == b
}

// checkProfile decodes vbs with profile p and checks every ONU field
// against the raw values, and that every varbind was placed.
func checkProfile(t *testing.T, p profiles.Profile, vbs []streams.Varbind) Decoded {
	t.Helper()
	idx := p.Index
	d, err := DecodeBatch(streams.VarbindBatch{ExecutionID: "e", OLTID: "o", IndexScheme: p.IndexScheme, Index: &idx,
		Columns: p.Specs(), CollectedAt: time.Now(), Varbinds: vbs})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Skipped) > 0 {
		t.Errorf("%s: varbinds not placed: %v", p.ID, d.Skipped)
	}
	keyOf, values := vendorKeys[p.ID], vendorValues[p.ID]
	checked := 0
	for _, vb := range vbs {
		for _, c := range p.Columns {
			if !strings.HasPrefix(vb.OID, c.OID+".") {
				continue
			}
			want, ok := values[c.ID]
			if !ok {
				t.Fatalf("%s: no expectation for column %s", p.ID, c.ID)
			}
			rk := keyOf(c.ID, strings.TrimPrefix(vb.OID, c.OID+"."))
			f := d.ONUs[rk.key]
			if f == nil {
				t.Fatalf("%s: %s placed no onu %+v", p.ID, vb.OID, rk.key)
			}
			got, _ := fieldOf(f, c.Field)
			if w := want(vb); !same(got, w) {
				t.Errorf("%s %s: %s = %v, raw %s says %v", p.ID, vb.OID, c.Field, got, vb.Value, w)
			}
			if rk.port != "" && f.PortName != rk.port {
				t.Errorf("%s %s: port name %q, want %q", p.ID, vb.OID, f.PortName, rk.port)
			}
			checked++
		}
	}
	if checked != len(vbs) {
		t.Errorf("%s: checked %d of %d varbinds", p.ID, checked, len(vbs))
	}
	return d
}

// Each profile against the simulator's profile of its vendor: every column
// walked over real SNMP, every field equal to what the raw value says.
func TestProfilesAgainstSimulator(t *testing.T) {
	cat, err := profiles.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := oltsim.Start(context.Background(), oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{
		{Name: "huawei-ma5800", Listen: "127.0.0.1:0", Community: "public", Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 2, PortsPerSlot: 2, ONUsPerPort: 6}, Seed: 11},
		{Name: "zte-1082", Listen: "127.0.0.1:0", Community: "public", Profile: "zte-c300", Shape: oltsim.Shape{Slots: 2, PortsPerSlot: 2, ONUsPerPort: 6}, Seed: 12},
		{Name: "fiberhome-an5516", Listen: "127.0.0.1:0", Community: "public", Profile: "fiberhome-an5516", Shape: oltsim.Shape{Slots: 2, PortsPerSlot: 2, ONUsPerPort: 6}, Seed: 13},
		{Name: "vsol-v1600", Listen: "127.0.0.1:0", Community: "public", Profile: "vsol-v1600g", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 3, ONUsPerPort: 6}, Seed: 14},
	}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	for _, sim := range fleet.OLTs() {
		t.Run(sim.Name(), func(t *testing.T) {
			p, ok := cat.Get(sim.Name())
			if !ok {
				t.Fatalf("no profile %s", sim.Name())
			}
			vbs := walk(t, sim, p.Specs())
			d := checkProfile(t, p, vbs)
			onus := sim.ONUs()
			if len(d.ONUs) != len(onus) {
				t.Fatalf("%d onus decoded, simulator has %d", len(d.ONUs), len(onus))
			}
			offline := 0
			for _, o := range onus {
				f := d.ONUs[ONUKey{o.PonIndex, int64(o.ID)}]
				if f == nil || f.Serial == nil || *f.Serial != o.Serial {
					t.Errorf("onu %s: %+v, simulator serial %s", o.Index, f, o.Serial)
				}
				if !o.Online {
					offline++
				}
			}
			if offline == 0 || offline == len(onus) {
				t.Logf("%d of %d onus offline: both states not covered", offline, len(onus))
			}
		})
	}
}

// The 1012-tree profile against the simulated ZTE: it serves only the Tx
// power table in that tree (the rest in the 1082 tree).
func TestZTE1012ProfileAgainstSimulator(t *testing.T) {
	cat, err := profiles.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := oltsim.Start(context.Background(), oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{
		{Name: "zte", Listen: "127.0.0.1:0", Community: "public", Profile: "zte-c300", Shape: oltsim.Shape{Slots: 2, PortsPerSlot: 2, ONUsPerPort: 4}, Seed: 21},
	}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	p, _ := cat.Get("zte-1012")
	p.Columns = []profiles.Column{mustColumn(t, p, "tx-power")}
	vbs := walk(t, fleet.OLT("zte"), p.Specs())
	if d := checkProfile(t, p, vbs); len(d.ONUs) != 16 {
		t.Errorf("%d onus, the simulator has 16", len(d.ONUs))
	}
}

func mustColumn(t *testing.T, p profiles.Profile, id string) profiles.Column {
	t.Helper()
	c, ok := p.Column(id)
	if !ok {
		t.Fatalf("%s has no column %s", p.ID, id)
	}
	return c
}

// readSnmprec reads the rows of a recording under prefix (type 2 and 4),
// as the contract renders them (hex octet strings, decimal integers).
func readSnmprec(t *testing.T, path, prefix string) []streams.Varbind {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []streams.Varbind
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[0], prefix+".") {
			continue
		}
		switch parts[1] {
		case "2":
			out = append(out, streams.Varbind{OID: parts[0], Type: streams.VTInteger, Value: parts[2]})
		case "4":
			out = append(out, streams.Varbind{OID: parts[0], Type: streams.VTOctetString, Value: hex.EncodeToString([]byte(parts[2]))})
		case "6":
			out = append(out, streams.Varbind{OID: parts[0], Type: streams.VTOID, Value: strings.TrimPrefix(parts[2], ".")})
		case "4x":
			out = append(out, streams.Varbind{OID: parts[0], Type: streams.VTOctetString, Value: parts[2]})
		}
	}
	return out
}

// Every shared recording is identified, and the rows it has for its
// profile decode to what the raw values say.
func TestProfilesAgainstRecordings(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "snmprec")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no shared recordings: %v", err)
	}
	cat, err := profiles.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, profile string }{
		{"smartax_ma5603t", "huawei-ma5800"}, {"zxa10_c300", "zte-1082"}, {"vsolution_v1600gs", "vsol-v1600"},
		{"cdata", "cdata-fd16xx"}, {"fiberhome", "fiberhome-an5516"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(dir, tc.file+".snmprec")
			sys := readSnmprec(t, path, "1.3.6.1.2.1.1")
			var oid, descr string
			for _, v := range sys {
				switch v.OID {
				case "1.3.6.1.2.1.1.1.0":
					descr = rawText(v)
				case "1.3.6.1.2.1.1.2.0":
					oid = v.Value
				}
			}
			p, ok := cat.Identify(oid, descr)
			if !ok || p.ID != tc.profile {
				t.Fatalf("sysObjectID %s sysDescr %q identified as %q (%v), want %s", oid, descr, p.ID, ok, tc.profile)
			}
			var vbs []streams.Varbind
			for _, c := range p.Columns {
				vbs = append(vbs, readSnmprec(t, path, c.OID)...)
			}
			d := checkProfile(t, p, vbs)
			t.Logf("%s: %d varbinds, %d onus", tc.file, len(vbs), len(d.ONUs))
			// The generic IF-MIB profile reads every recording's interfaces.
			g, _ := cat.Get("generic-if-mib")
			var ifs []streams.Varbind
			for _, c := range g.Columns {
				ifs = append(ifs, readSnmprec(t, path, c.OID)...)
			}
			gd := checkProfile(t, g, ifs)
			t.Logf("%s: generic-if-mib: %d varbinds, %d interfaces", tc.file, len(ifs), len(gd.ONUs))
			if tc.file == "vsolution_v1600gs" && len(d.ONUs) != 3 {
				t.Errorf("%d onus, the recording has optical rows of 3", len(d.ONUs))
			}
		})
	}
}
