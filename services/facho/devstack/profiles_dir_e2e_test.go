package devstack_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/services/facho/devstack"
	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/services/planner"
)

// `facho dev` with a profiles folder: a vendor described by a YAML file
// alone, whose ONTs are IF-MIB interfaces named "Ont <id>/<port>", is
// identified by brand_id "auto", polled by the whole pipeline, and lands
// one ONU per ONT with the ids of the names.
func TestDevProfilesDirVendorByIFMIBNames(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dir := t.TempDir()
	profile := `id: acme-ifmib
name: ACME ONTs in IF-MIB
vendor: ACME
match: {sys_object_id: ["1.3.6.1.4.1.99996"]}
index_scheme: acme-ont-names
index:
  parts: [{name: ifindex, type: int}]
  key: {column: name, pattern: '^Ont (?P<onu>[0-9]+)/[a-z][0-9]+$'}
  pon_index: "0"
  onu_id: onu
  port_name: "ont {onu}"
columns:
  - {id: name, name: ifName, oid: 1.3.6.1.2.1.31.1.1.1.1, field: name, decoder: {kind: string}}
  - {id: status, name: ifOperStatus, oid: 1.3.6.1.2.1.2.2.1.8, field: status, decoder: {kind: enum, enum: {"1": ONLINE, "2": OFFLINE}}}
jobs:
  - {id: discovery, name: ONTs, kind: discovery, columns: [name, status], interval_seconds: 60}
`
	if err := os.WriteFile(filepath.Join(dir, "acme.yaml"), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	names := map[int]string{1: "uplink-1", 100: "Ont 50515061/g1", 101: "Ont 50515061/g2", 102: "Ont 50515062/g1", 200: "Ont 7/g1", 300: "pon-1"}
	var rec strings.Builder
	rec.WriteString("1.3.6.1.2.1.1.1.0|4|ACME OLT\n1.3.6.1.2.1.1.2.0|6|1.3.6.1.4.1.99996.3\n")
	for _, col := range []string{"1.3.6.1.2.1.2.2.1.8", "1.3.6.1.2.1.31.1.1.1.1"} {
		for _, ix := range []int{1, 100, 101, 102, 200, 300} {
			if col == "1.3.6.1.2.1.2.2.1.8" {
				fmt.Fprintf(&rec, "%s.%d|2|%d\n", col, ix, 1+ix%2)
			} else {
				fmt.Fprintf(&rec, "%s.%d|4|%s\n", col, ix, names[ix])
			}
		}
	}
	recPath := filepath.Join(t.TempDir(), "acme.snmprec")
	if err := os.WriteFile(recPath, []byte(rec.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := devstack.Start(ctx, devstack.Config{
		DataDir: t.TempDir(), NATSPort: -1, DatabaseURL: pgtest.URL(t), APIAddr: "127.0.0.1:0", APIToken: token, Pollers: 1,
		Planner:     planner.Config{FirstRunDelay: 200 * time.Millisecond, Tick: 100 * time.Millisecond, FirstRunSpread: -1},
		Fleet:       oltsim.FleetConfig{OLTs: []oltsim.OLTConfig{{Name: "acme", Listen: "127.0.0.1:0", Community: "public", Recording: recPath}}},
		ProfilesDir: dir,
	}, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	client := &devstack.Client{BaseURL: s.APIURL, Token: token}
	body := map[string]any{"id": "acme", "name": "acme", "ip": "127.0.0.1", "port": s.Fleet.OLT("acme").Addr().Port, "community": "public", "brand_id": "auto"}
	var created map[string]any
	if err := client.Do(ctx, http.MethodPost, "/api/v1/olts", body, &created); err != nil {
		t.Fatalf("add the OLT with brand_id auto: %v", err)
	}
	// Worked out from the names: ONT 50515061 (two interfaces, the
	// first one's status), 50515062 and 7; PON 0.
	want := map[int64]string{}
	for ix, n := range names {
		var id int64
		var port string
		if c, _ := fmt.Sscanf(n, "Ont %d/%s", &id, &port); c == 2 && (ix != 101) {
			want[id] = map[int]string{1: "ONLINE", 2: "OFFLINE"}[1+ix%2]
		}
	}
	var got struct {
		ONUs []profileONU `json:"onus"`
	}
	waitFor(t, "one ONU per ONT", 60*time.Second, func() (bool, string) {
		got.ONUs = nil
		if err := client.Do(ctx, http.MethodGet, "/api/v1/olts/acme/onus", nil, &got); err != nil {
			return false, err.Error()
		}
		return len(got.ONUs) == len(want), fmt.Sprintf("%d onus, want %d", len(got.ONUs), len(want))
	})
	for _, o := range got.ONUs {
		w, ok := want[o.ONUID]
		if !ok || o.PonIndex != 0 || o.Status != w || o.PortName != fmt.Sprintf("ont %d", o.ONUID) {
			t.Errorf("onu %+v: want pon 0, status %q, port ont %d (known %v)", o, w, o.ONUID, ok)
		}
	}
}
