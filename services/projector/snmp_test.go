package projector

import (
	"context"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

var fiberhomeColumns = []streams.OIDSpec{
	{ID: "fh-desc", OID: "1.3.6.1.4.1.5875.800.3.10.1.1.7", Field: streams.FieldDescription, Decoder: streams.Decoder{Kind: "string"}},
	{ID: "fh-serial", OID: "1.3.6.1.4.1.5875.800.3.10.1.1.10", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
	{ID: "fh-status", OID: "1.3.6.1.4.1.5875.800.3.10.1.1.11", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: onlineEnum}},
	{ID: "fh-rx", OID: "1.3.6.1.4.1.5875.800.3.9.3.3.1.6", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "scaled", Scale: 0.01}},
}

// zteColumns read a ZTE C300 (1082 tree, shared/OLT-OIDS.md); its Rx power
// table is indexed <pon>.<onu>.1, one arc more than the ONU tables.
var zteColumns = []streams.OIDSpec{
	{ID: "zte-desc", OID: "1.3.6.1.4.1.3902.1082.500.10.2.3.3.1.3", Field: streams.FieldDescription, Decoder: streams.Decoder{Kind: "string"}},
	{ID: "zte-serial", OID: "1.3.6.1.4.1.3902.1082.500.10.2.3.3.1.18", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
	{ID: "zte-phase", OID: "1.3.6.1.4.1.3902.1082.500.10.2.3.8.1.4", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum",
		Enum: map[string]string{"1": "OFFLINE", "2": "OFFLINE", "3": "OFFLINE", "4": "ONLINE", "5": "OFFLINE", "6": "OFFLINE", "7": "OFFLINE"}}},
	{ID: "zte-rx", OID: "1.3.6.1.4.1.3902.1082.500.20.2.2.2.1.10", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "scaled", Scale: 0.002, Offset: -30, NoReading: noReading(65535)}},
}

// vsolColumns read a V-SOL V1600G: optical values are decimal strings.
var vsolColumns = []streams.OIDSpec{
	{ID: "vsol-status", OID: "1.3.6.1.4.1.37950.1.1.6.1.1.1.1.5", Field: streams.FieldStatus, Decoder: streams.Decoder{Kind: "enum", Enum: map[string]string{"3": "ONLINE", "2": "OFFLINE"}}},
	{ID: "vsol-desc", OID: "1.3.6.1.4.1.37950.1.1.6.1.1.2.1.3", Field: streams.FieldDescription, Decoder: streams.Decoder{Kind: "string"}},
	{ID: "vsol-serial", OID: "1.3.6.1.4.1.37950.1.1.6.1.1.2.1.5", Field: streams.FieldSerial, Decoder: streams.Decoder{Kind: "hex_serial"}},
	{ID: "vsol-rx", OID: "1.3.6.1.4.1.37950.1.1.6.1.1.3.1.7", Field: streams.FieldRxPower, Decoder: streams.Decoder{Kind: "float_string"}},
}

// walk reads columns from a simulated OLT over real SNMP and renders the
// varbinds as the contract says (hex OctetStrings, decimal integers).
func walk(t *testing.T, olt *oltsim.OLT, cols []streams.OIDSpec) []streams.Varbind {
	t.Helper()
	g := &gosnmp.GoSNMP{Target: olt.Addr().IP.String(), Port: uint16(olt.Addr().Port), Community: "public",
		Version: gosnmp.Version2c, Timeout: 2 * time.Second, Retries: 2, MaxRepetitions: 20}
	if err := g.Connect(); err != nil {
		t.Fatal(err)
	}
	defer g.Conn.Close()
	var out []streams.Varbind
	for _, c := range cols {
		pdus, err := g.BulkWalkAll(c.OID)
		if err != nil {
			t.Fatalf("walk %s: %v", c.OID, err)
		}
		for _, p := range pdus {
			v := streams.Varbind{OID: strings.TrimPrefix(p.Name, ".")}
			switch p.Type {
			case gosnmp.OctetString:
				v.Type, v.Value = streams.VTOctetString, hex.EncodeToString(p.Value.([]byte))
			case gosnmp.Integer:
				v.Type, v.Value = streams.VTInteger, strconv.FormatInt(gosnmp.ToBigInt(p.Value).Int64(), 10)
			default:
				t.Fatalf("unexpected %s at %s", p.Type, p.Name)
			}
			out = append(out, v)
		}
	}
	return out
}

// What the simulator's ONUs are, projected through a real SNMP walk, is
// what onu_data holds.
func TestSimulatedOLTsProjectAsTheyAre(t *testing.T) {
	ctx := context.Background()
	fleet, err := oltsim.Start(ctx, oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{
		{Name: "hw", Listen: "127.0.0.1:0", Community: "public", Profile: "huawei-ma5800", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 12}, Seed: 1},
		// 256 ONUs a port: ids 1..256, the last one past 8 bits.
		{Name: "fh", Listen: "127.0.0.1:0", Community: "public", Profile: "fiberhome-an5516", Shape: oltsim.Shape{Slots: 2, PortsPerSlot: 1, ONUsPerPort: 256}, Seed: 2},
		{Name: "zte", Listen: "127.0.0.1:0", Community: "public", Profile: "zte-c300", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 10}, Seed: 3},
		{Name: "vsol", Listen: "127.0.0.1:0", Community: "public", Profile: "vsol-v1600g", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 10}, Seed: 4},
	}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()

	r := newRig(t)
	r.start()
	for _, tc := range []struct {
		olt    string
		scheme string
		cols   []streams.OIDSpec
	}{
		{"hw", SchemePonONU, huaweiColumns},
		{"fh", SchemeFiberhome, fiberhomeColumns},
		{"zte", SchemePonONU, zteColumns},
		{"vsol", SchemePonONU, vsolColumns},
	} {
		sim := fleet.OLT(tc.olt)
		b := streams.VarbindBatch{ExecutionID: "e-" + tc.olt, JobID: "j", OLTID: tc.olt, IndexScheme: tc.scheme, Columns: tc.cols,
			CollectedAt: time.Now().UTC(), Varbinds: walk(t, sim, tc.cols)}
		seq := r.publish(streams.SubjectVarbinds(tc.olt), b)
		r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)

		got := r.onus(tc.olt)
		want := sim.ONUs()
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, simulator has %d onus", tc.olt, len(got), len(want))
		}
		for _, o := range want {
			row, ok := got[ONUKey{o.PonIndex, int64(o.ID)}]
			if !ok {
				t.Fatalf("%s: onu %s missing", tc.olt, o.Index)
			}
			status := "OFFLINE"
			if o.Online {
				status = "ONLINE"
			}
			if row.Serial != o.Serial || row.Description != o.Description || row.Status != status {
				t.Errorf("%s onu %s: row %+v, simulator %+v", tc.olt, o.Index, row, o)
			}
			switch {
			case math.IsNaN(o.RxPowerDBm) && row.RxPowerDBm != nil:
				t.Errorf("%s onu %s: rx %v, want no reading", tc.olt, o.Index, *row.RxPowerDBm)
			case !math.IsNaN(o.RxPowerDBm) && (row.RxPowerDBm == nil || math.Abs(*row.RxPowerDBm-o.RxPowerDBm) > 1e-6):
				t.Errorf("%s onu %s: rx %v, want %v", tc.olt, o.Index, row.RxPowerDBm, o.RxPowerDBm)
			}
		}
	}
}

// An ONU of a FiberHome that goes offline loses its optical row: the next
// walk, split into batches like the poller's and ending with a Last batch,
// leaves it OFFLINE without an Rx power, and every other ONU with its own.
func TestOfflineFiberhomeONULosesItsRxReading(t *testing.T) {
	fleet, err := oltsim.Start(context.Background(), oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{
		{Name: "fh", Listen: "127.0.0.1:0", Community: "public", Profile: "fiberhome-an5516", Shape: oltsim.Shape{Slots: 1, PortsPerSlot: 2, ONUsPerPort: 16}, Seed: 5},
	}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	sim := fleet.OLT("fh")
	r := newRig(t)
	r.start()

	// poll walks the OLT as execution exec and publishes the varbinds in
	// batches of 25, the last one marked Last.
	poll := func(exec string, rev uint64) {
		t.Helper()
		vbs := walk(t, sim, fiberhomeColumns)
		var seq uint64
		for n, start := 1, 0; start < len(vbs); n, start = n+1, start+25 {
			end := min(start+25, len(vbs))
			seq = r.publish(streams.SubjectVarbinds("fh"), streams.VarbindBatch{ExecutionID: exec, JobID: "j", OLTID: "fh",
				IndexScheme: SchemeFiberhome, LeaseRevision: rev, Batch: n, Columns: fiberhomeColumns, CollectedAt: time.Now().UTC(),
				Varbinds: vbs[start:end], Last: end == len(vbs)})
		}
		r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	}
	check := func() {
		t.Helper()
		got := r.onus("fh")
		for _, o := range sim.ONUs() {
			row := got[ONUKey{o.PonIndex, int64(o.ID)}]
			status := "OFFLINE"
			if o.Online {
				status = "ONLINE"
			}
			if row.Status != status {
				t.Errorf("onu %s status %s, want %s", o.Index, row.Status, status)
			}
			switch {
			case !o.Online && row.RxPowerDBm != nil:
				t.Errorf("offline onu %s keeps rx %v", o.Index, *row.RxPowerDBm)
			case o.Online && (row.RxPowerDBm == nil || math.Abs(*row.RxPowerDBm-o.RxPowerDBm) > 1e-6):
				t.Errorf("onu %s rx %v, want %v", o.Index, row.RxPowerDBm, o.RxPowerDBm)
			}
		}
	}

	poll("e1", 1)
	check()
	var target oltsim.ONU
	for _, o := range sim.ONUs() {
		if o.Online {
			target = o
			break
		}
	}
	if !target.Online {
		t.Fatal("no online onu")
	}
	if rx := r.onus("fh")[ONUKey{target.PonIndex, int64(target.ID)}].RxPowerDBm; rx == nil {
		t.Fatalf("onu %s has no rx before going offline", target.Index)
	}
	if err := sim.SetONUOnline(target.Index, false); err != nil {
		t.Fatal(err)
	}
	poll("e2", 2)
	check()
	if row := r.onus("fh")[ONUKey{target.PonIndex, int64(target.ID)}]; row.Status != "OFFLINE" || row.RxPowerDBm != nil {
		t.Fatalf("onu %s after going offline: %+v", target.Index, row)
	}
}
