package projector

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/profiles"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

// A vendor added by a YAML file alone: its ONU table is indexed by
// <pon>.<length>.<serial bytes> (an OCTET STRING index), served by the
// simulator from a recording written here; its ONUs land in onu_data with
// the right fields.
func TestVendorAddedByYAMLAlone(t *testing.T) {
	dir := t.TempDir()
	const profileYAML = `
id: acme-gpon
name: ACME GPON 9000
vendor: ACME
match:
  sys_object_id: ["1.3.6.1.4.1.99999"]
index_scheme: acme-pon-serial
index:
  parts:
    - {name: pon, type: int}
    - {name: serial, type: string}
  pon_index: pon
  onu_id: hash(serial)
  port_name: "PON{pon}/{serial}"
columns:
  - {id: serial, name: serial, oid: 1.3.6.1.4.1.99999.1.1.1.2, field: serial, decoder: {kind: string}}
  - {id: descr, name: description, oid: 1.3.6.1.4.1.99999.1.1.1.3, field: description, decoder: {kind: string}}
  - id: status
    name: status
    oid: 1.3.6.1.4.1.99999.1.1.1.4
    field: status
    decoder: {kind: enum, enum: {"1": ONLINE, "2": LOS, "3": DYING_GASP}}
  - {id: rx, name: rx (0.1 dBm), oid: 1.3.6.1.4.1.99999.1.1.1.5, field: rx_power, decoder: {kind: scaled, scale: 0.1, no_reading: -32768}}
  - {id: temp, name: temperature, oid: 1.3.6.1.4.1.99999.1.1.1.6, field: temperature, decoder: {kind: scaled, scale: 0.5}}
  - {id: up, name: last up, oid: 1.3.6.1.4.1.99999.1.1.1.7, field: last_up_time, decoder: {kind: date_and_time}}
jobs:
  - {id: discovery, name: ACME discovery, kind: discovery, columns: [serial, descr, status, rx, temp, up], interval_seconds: 300}
`
	if err := os.WriteFile(filepath.Join(dir, "acme.yaml"), []byte(profileYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	type onu struct {
		pon              int
		serial, descr    string
		status, rx, temp int
		upHex            string
		wantStatus       string
		wantRx           *float64
		wantUp           time.Time
		wantTemp         float64
	}
	f := func(v float64) *float64 { return &v }
	onus := []onu{
		{7, "ACME0001", "casa 1", 1, -185, 80, "07ea0b170a141e002b0000", "ONLINE", f(-18.5), time.Date(2026, 11, 23, 10, 20, 30, 0, time.UTC), 40},
		{7, "ACME0002", "casa 2", 2, -32768, 61, "07e90102030405062d0300", "LOS", nil, time.Date(2025, 1, 2, 6, 4, 5, 600_000_000, time.UTC), 30.5},
		{9, "ACME0003", "casa 3", 3, -231, 90, "0000000000000000", "DYING_GASP", f(-23.1), time.Time{}, 45},
	}
	var rec strings.Builder
	fmt.Fprintf(&rec, "1.3.6.1.2.1.1.1.0|4|ACME GPON 9000\n1.3.6.1.2.1.1.2.0|6|1.3.6.1.4.1.99999.1\n")
	idx := func(o onu) string {
		parts := []string{fmt.Sprint(o.pon), fmt.Sprint(len(o.serial))}
		for _, c := range []byte(o.serial) {
			parts = append(parts, fmt.Sprint(c))
		}
		return strings.Join(parts, ".")
	}
	for col := 2; col <= 7; col++ {
		for _, o := range onus {
			oid := fmt.Sprintf("1.3.6.1.4.1.99999.1.1.1.%d.%s", col, idx(o))
			switch col {
			case 2:
				fmt.Fprintf(&rec, "%s|4|%s\n", oid, o.serial)
			case 3:
				fmt.Fprintf(&rec, "%s|4|%s\n", oid, o.descr)
			case 4:
				fmt.Fprintf(&rec, "%s|2|%d\n", oid, o.status)
			case 5:
				fmt.Fprintf(&rec, "%s|2|%d\n", oid, o.rx)
			case 6:
				fmt.Fprintf(&rec, "%s|2|%d\n", oid, o.temp)
			case 7:
				fmt.Fprintf(&rec, "%s|4x|%s\n", oid, o.upHex)
			}
		}
	}
	recPath := filepath.Join(t.TempDir(), "acme.snmprec")
	if err := os.WriteFile(recPath, []byte(rec.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cat, err := profiles.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cat.Identify("1.3.6.1.4.1.99999.1", "ACME GPON 9000")
	if !ok || p.ID != "acme-gpon" {
		t.Fatalf("identified %q %v", p.ID, ok)
	}
	fleet, err := oltsim.Start(context.Background(), oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{
		{Name: "acme", Listen: "127.0.0.1:0", Community: "public", Recording: recPath},
	}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()

	r := newRig(t)
	r.start()
	index := p.Index
	b := streams.VarbindBatch{ExecutionID: "e-acme", JobID: p.JobID("discovery"), OLTID: "acme", BrandID: p.ID, IndexScheme: p.IndexScheme,
		Index: &index, Columns: p.Specs(), CollectedAt: time.Now().UTC(), Varbinds: walk(t, fleet.OLT("acme"), p.Specs())}
	if len(b.Varbinds) != 18 {
		t.Fatalf("walked %d varbinds, the recording has 18", len(b.Varbinds))
	}
	seq := r.publish(streams.SubjectVarbinds("acme"), b)
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)

	type row struct {
		serial, descr, status, index, port string
		rx, temp                           *float64
		up                                 *time.Time
	}
	got := map[[2]int64]row{}
	rows, err := r.pool.Query(context.Background(), `SELECT pon_index, onu_id, serial, description, status, onu_index, port_name, rx_power_dbm, temperature_c, last_up_at,
		tx_power_dbm, distance_m, model FROM onu_data WHERE olt_id = 'acme'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k [2]int64
		var x row
		var tx, dist *float64
		var model string
		if err := rows.Scan(&k[0], &k[1], &x.serial, &x.descr, &x.status, &x.index, &x.port, &x.rx, &x.temp, &x.up, &tx, &dist, &model); err != nil {
			t.Fatal(err)
		}
		if tx != nil || dist != nil || model != "" {
			t.Errorf("onu %v: a field the vendor has no column for is set: tx %v distance %v model %q", k, tx, dist, model)
		}
		got[k] = x
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(onus) {
		t.Fatalf("%d rows, want %d: %+v", len(got), len(onus), got)
	}
	for _, o := range onus {
		h := fnv.New32a()
		h.Write([]byte(o.serial))
		k := [2]int64{int64(o.pon), int64(h.Sum32() & 0x7fffffff)}
		x, ok := got[k]
		if !ok {
			t.Fatalf("onu %s: no row %v", o.serial, k)
		}
		if x.serial != o.serial || x.descr != o.descr || x.status != o.wantStatus || x.index != idx(o) || x.port != fmt.Sprintf("PON%d/%s", o.pon, o.serial) {
			t.Errorf("onu %s: %+v", o.serial, x)
		}
		if (x.rx == nil) != (o.wantRx == nil) || (x.rx != nil && *x.rx != *o.wantRx) {
			t.Errorf("onu %s: rx %v, want %v", o.serial, x.rx, o.wantRx)
		}
		if x.temp == nil || *x.temp != o.wantTemp {
			t.Errorf("onu %s: temperature %v, want %v", o.serial, x.temp, o.wantTemp)
		}
		switch {
		case o.wantUp.IsZero() && x.up != nil:
			t.Errorf("onu %s: last up %v, want none", o.serial, x.up)
		case !o.wantUp.IsZero() && (x.up == nil || !x.up.Equal(o.wantUp)):
			t.Errorf("onu %s: last up %v, want %v", o.serial, x.up, o.wantUp)
		}
	}
}
