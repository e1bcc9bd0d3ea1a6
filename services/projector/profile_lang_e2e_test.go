package projector

import (
	"context"
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

// A vendor described by YAML alone whose ONTs are IF-MIB interfaces named
// "Ont <id>/<port>", served by the simulator from a recording written
// here and walked over SNMP: one ONU per ONT with the right ids, its
// interfaces grouped, the other interfaces and the filtered ones no ONU,
// optics taken from "mW (dBm)" text; a discovery walk without a serial
// column moves last_seen and marks an ONT that is gone as removed.
func TestIFMIBNamedONTsByYAMLAlone(t *testing.T) {
	dir := t.TempDir()
	const profileYAML = `
id: acme-ifmib
name: ACME ONTs in IF-MIB
vendor: ACME
match: {sys_object_id: ["1.3.6.1.4.1.99998"]}
index_scheme: acme-ont-names
index:
  parts: [{name: ifindex, type: int}]
  key: {column: name, pattern: '^Ont (?P<onu>[0-9]+)/(?P<port>[a-z][0-9]+)$'}
  filter: [{column: descr, match: 'Ethernet'}]
  pon_index: "0"
  onu_id: onu
  port_name: "ont {onu}"
columns:
  - {id: descr, name: ifDescr, oid: 1.3.6.1.2.1.2.2.1.2, field: description, decoder: {kind: string}}
  - {id: name, name: ifName, oid: 1.3.6.1.2.1.31.1.1.1.1, field: name, decoder: {kind: string}}
  - {id: status, name: ifOperStatus, oid: 1.3.6.1.2.1.2.2.1.8, field: status, decoder: {kind: enum, enum: {"1": ONLINE, "2": OFFLINE}}}
  - {id: rx, name: Rx text, oid: 1.3.6.1.4.1.99998.1.1.1, field: rx_power, decoder: {kind: regex, pattern: '\((?P<dbm>-?[0-9.]+) dBm\)', group: dbm}}
  - {id: tx, name: Tx text, oid: 1.3.6.1.4.1.99998.1.1.2, field: tx_power, decoder: {kind: regex, pattern: '^([0-9.]+) mW', unit: mW}}
jobs:
  - {id: discovery, name: ONTs, kind: discovery, columns: [descr, name, status], interval_seconds: 900}
  - {id: optical, name: optics, kind: bulkwalk, columns: [descr, name, rx, tx], interval_seconds: 300}
`
	if err := os.WriteFile(filepath.Join(dir, "acme.yaml"), []byte(profileYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	cat, err := profiles.Load(dir)
	if err != nil || len(cat.Problems()) > 0 {
		t.Fatalf("load: %v %+v", err, cat.Problems())
	}
	p, ok := cat.Identify("1.3.6.1.4.1.99998.5", "")
	if !ok || p.ID != "acme-ifmib" {
		t.Fatalf("identified %q %v", p.ID, ok)
	}
	type iface struct {
		ifindex      int
		descr, name  string
		oper         int
		rxText, txMW string // optics; "" none
	}
	ifs := []iface{
		{1, "GigabitEthernet uplink", "ge-1/1", 1, "", ""},
		{2, "GPON port", "pon-1/1", 1, "", ""},
		{1001, "ONT Ethernet port", "Ont 50515061/g1", 1, "0.0123 mW (-19.10 dBm)", "1.995"},
		{1002, "ONT Ethernet port", "Ont 50515061/g2", 2, "0.0001 mW (-40.00 dBm)", "0.5"},
		{1003, "ONT POTS port", "Ont 50515061/p1", 2, "", ""},
		{1101, "ONT Ethernet port", "Ont 50515062/g1", 2, "N/A", "0.00"},
		{1201, "ONT Ethernet port", "Ont 123/g1", 1, "0.0500 mW (-13.01 dBm)", "2.2"},
		{1301, "ONT POTS port", "Ont 777/p1", 1, "", ""}, // only a filtered interface: no ONU
	}
	record := func(name string, skip int) string {
		var rec strings.Builder
		fmt.Fprintf(&rec, "1.3.6.1.2.1.1.1.0|4|ACME OLT\n1.3.6.1.2.1.1.2.0|6|1.3.6.1.4.1.99998.5\n")
		for _, col := range []string{"1.3.6.1.2.1.2.2.1.2", "1.3.6.1.2.1.2.2.1.8", "1.3.6.1.2.1.31.1.1.1.1", "1.3.6.1.4.1.99998.1.1.1", "1.3.6.1.4.1.99998.1.1.2"} {
			for _, f := range ifs {
				if f.ifindex == skip {
					continue
				}
				oid := fmt.Sprintf("%s.%d", col, f.ifindex)
				switch col {
				case "1.3.6.1.2.1.2.2.1.2":
					fmt.Fprintf(&rec, "%s|4|%s\n", oid, f.descr)
				case "1.3.6.1.2.1.2.2.1.8":
					fmt.Fprintf(&rec, "%s|2|%d\n", oid, f.oper)
				case "1.3.6.1.2.1.31.1.1.1.1":
					fmt.Fprintf(&rec, "%s|4|%s\n", oid, f.name)
				case "1.3.6.1.4.1.99998.1.1.1":
					if f.rxText != "" {
						fmt.Fprintf(&rec, "%s|4|%s\n", oid, f.rxText)
					}
				default:
					if f.txMW != "" {
						fmt.Fprintf(&rec, "%s|4|%s mW\n", oid, f.txMW)
					}
				}
			}
		}
		path := filepath.Join(t.TempDir(), name+".snmprec")
		if err := os.WriteFile(path, []byte(rec.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	fleet, err := oltsim.Start(context.Background(), oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{
		{Name: "before", Listen: "127.0.0.1:0", Community: "public", Recording: record("before", 0)},
		{Name: "after", Listen: "127.0.0.1:0", Community: "public", Recording: record("after", 1201)}, // ONT 123 gone
	}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()

	r := newRig(t)
	r.start()
	index := p.Index
	jobBatch := func(sim, exec, job string, at time.Time) streams.VarbindBatch {
		j := p.Jobs[0]
		for _, x := range p.Jobs {
			if x.ID == job {
				j = x
			}
		}
		specs := p.Specs(j.Columns...)
		return streams.VarbindBatch{ExecutionID: exec, JobID: p.JobID(job), OLTID: "acme", BrandID: p.ID, IndexScheme: p.IndexScheme,
			Index: &index, Columns: specs, CollectedAt: at, Varbinds: walk(t, fleet.OLT(sim), specs), Last: true, JobKind: j.Kind}
	}
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	r.publish(streams.SubjectVarbinds("acme"), jobBatch("before", "e-disc-1", "discovery", t0))
	seq := r.publish(streams.SubjectVarbinds("acme"), jobBatch("before", "e-opt-1", "optical", t0.Add(time.Second)))
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)

	// Expected, worked out from the interfaces: ONTs by name, first
	// Ethernet interface's values.
	type want struct {
		status, descr string
		rx, tx        *float64
	}
	f := func(v float64) *float64 { return &v }
	dbm := func(text string) *float64 { // "(… dBm)" read by hand
		_, after, ok := strings.Cut(text, "(")
		num, _, ok2 := strings.Cut(after, " dBm)")
		v, err := strconv.ParseFloat(num, 64)
		if !ok || !ok2 || err != nil {
			return nil
		}
		return f(v)
	}
	mw := func(s string) *float64 {
		v, _ := strconv.ParseFloat(s, 64)
		if v <= 0 {
			return nil
		}
		return f(10 * math.Log10(v))
	}
	wants := map[ONUKey]want{}
	for _, x := range ifs {
		var id int64
		var port string
		if n, _ := fmt.Sscanf(x.name, "Ont %d/%s", &id, &port); n != 2 || !strings.Contains(x.descr, "Ethernet") {
			continue
		}
		k := ONUKey{0, id}
		if _, seen := wants[k]; !seen {
			wants[k] = want{map[int]string{1: "ONLINE", 2: "OFFLINE"}[x.oper], x.descr, dbm(x.rxText), mw(x.txMW)}
		}
	}
	if len(wants) != 3 {
		t.Fatalf("the test's own reading found %d ONTs", len(wants))
	}
	type row struct {
		status, descr, port string
		rx, tx              *float64
		removed             *time.Time
		lastSeen            time.Time
	}
	read := func() map[ONUKey]row {
		rows, err := r.pool.Query(context.Background(), `SELECT d.pon_index, d.onu_id, d.status, d.description, d.port_name, d.rx_power_dbm, d.tx_power_dbm, d.removed_at,
			CASE WHEN d.removed_at IS NULL AND w.seen_at > d.last_seen THEN w.seen_at ELSE d.last_seen END
			FROM onu_data d LEFT JOIN onu_walks w USING (olt_id) WHERE d.olt_id = 'acme'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[ONUKey]row{}
		for rows.Next() {
			var k ONUKey
			var x row
			if err := rows.Scan(&k.PonIndex, &k.ONUID, &x.status, &x.descr, &x.port, &x.rx, &x.tx, &x.removed, &x.lastSeen); err != nil {
				t.Fatal(err)
			}
			out[k] = x
		}
		return out
	}
	same := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || math.Abs(*a-*b) < 1e-6) }
	got := read()
	if len(got) != len(wants) {
		t.Fatalf("%d ONUs stored, want one per ONT (%d): %+v", len(got), len(wants), got)
	}
	for k, w := range wants {
		x, ok := got[k]
		if !ok {
			t.Fatalf("ONT %d: no ONU %v", k.ONUID, k)
		}
		if x.status != w.status || x.descr != w.descr || x.port != fmt.Sprintf("ont %d", k.ONUID) || !same(x.rx, w.rx) || !same(x.tx, w.tx) || x.removed != nil {
			t.Errorf("ONT %d: %+v (rx %v tx %v), want %+v (rx %v tx %v)", k.ONUID, x, x.rx, x.tx, w, w.rx, w.tx)
		}
	}

	// The interfaces that are no ONT are counted as filtered, not as
	// unplaced: 3 varbinds each in the discovery, 2 plus their optics in
	// the optical walk.
	wantFiltered := 0
	for _, x := range ifs {
		var id int64
		var port string
		if n, _ := fmt.Sscanf(x.name, "Ont %d/%s", &id, &port); n == 2 && strings.Contains(x.descr, "Ethernet") {
			continue
		}
		wantFiltered += 3 + 2
		if x.rxText != "" {
			wantFiltered++
		}
		if x.txMW != "" {
			wantFiltered++
		}
	}
	if got := counterValue(t, r.reg, "facho_projector_varbinds_filtered_total"); got != float64(wantFiltered) {
		t.Errorf("facho_projector_varbinds_filtered_total %v, want %d", got, wantFiltered)
	}
	var unplaced int
	if err := r.pool.QueryRow(context.Background(), `SELECT COALESCE(SUM(unplaced_varbinds), 0) FROM execution_placement WHERE olt_id = 'acme'`).Scan(&unplaced); err != nil || unplaced != 0 {
		t.Errorf("unplaced varbinds %d (%v), want 0", unplaced, err)
	}

	// A later discovery walk without ONT 123: it is removed, the others
	// were seen then.
	t1 := t0.Add(time.Hour)
	seq = r.publish(streams.SubjectVarbinds("acme"), jobBatch("after", "e-disc-2", "discovery", t1))
	r.waitCheckpoint(streams.ConsumerProjectorVarbinds, seq)
	got = read()
	for k := range wants {
		x := got[k]
		if k.ONUID == 123 {
			if x.removed == nil || !x.removed.Equal(t1) {
				t.Errorf("ONT 123 gone from the walk: removed_at %v, want %v", x.removed, t1)
			}
			continue
		}
		if x.removed != nil || !x.lastSeen.Equal(t1) {
			t.Errorf("ONT %d read again: removed %v, last_seen %v, want %v", k.ONUID, x.removed, x.lastSeen, t1)
		}
	}
}
