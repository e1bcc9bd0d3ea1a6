package api_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/services/oltsim"
	"github.com/facho-olt/facho/streams"
)

func TestVendorProfilesEndpoints(t *testing.T) {
	f := setup(t)
	out := f.must("GET", "/api/v1/vendor-profiles", "", http.StatusOK)
	if n, _ := out["count"].(float64); n < 8 {
		t.Fatalf("count %v, want the 8 built-in profiles", out["count"])
	}
	one := f.must("GET", "/api/v1/vendor-profiles/huawei-ma5800", "", http.StatusOK)
	if one["index_scheme"] != "huawei-gpon-ifindex" || one["columns"] == nil || one["jobs"] == nil {
		t.Errorf("profile %v", one)
	}
	f.must("GET", "/api/v1/vendor-profiles/nope", "", http.StatusNotFound)
}

// brand_id "auto" identifies each simulator profile and each shared
// recording with one SNMP GET and creates the brand, OIDs, jobs, OLT and
// assignments as events; an agent no profile matches gets a 422 naming
// what it said.
func TestCreateOLTAutoDetect(t *testing.T) {
	unknown := filepath.Join(t.TempDir(), "unknown.snmprec")
	if err := os.WriteFile(unknown, []byte("1.3.6.1.2.1.1.1.0|4|Mystery Box 3000\n1.3.6.1.2.1.1.2.0|6|1.3.6.1.4.1.424242.7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	olts := []oltsim.OLTConfig{
		{Name: "huawei-ma5800", Profile: "huawei-ma5800"},
		{Name: "zte-1082", Profile: "zte-c300"},
		{Name: "fiberhome-an5516", Profile: "fiberhome-an5516"},
		{Name: "vsol-v1600", Profile: "vsol-v1600g"},
		{Name: "unknown", Recording: unknown},
	}
	want := map[string]string{"huawei-ma5800": "huawei-ma5800", "zte-1082": "zte-1082", "fiberhome-an5516": "fiberhome-an5516", "vsol-v1600": "vsol-v1600"}
	shared := filepath.Join("..", "..", "..", "shared", "snmprec")
	for file, profile := range map[string]string{"smartax_ma5603t": "huawei-ma5800", "zxa10_c300": "zte-1082", "vsolution_v1600gs": "vsol-v1600", "cdata": "cdata-fd16xx", "fiberhome": "fiberhome-an5516"} {
		path := filepath.Join(shared, file+".snmprec")
		if _, err := os.Stat(path); err != nil {
			t.Logf("no recording %s: %v", path, err)
			continue
		}
		olts = append(olts, oltsim.OLTConfig{Name: "rec-" + strings.ReplaceAll(file, "_", "-"), Recording: path})
		want["rec-"+strings.ReplaceAll(file, "_", "-")] = profile
	}
	for i := range olts {
		olts[i].Listen, olts[i].Community = "127.0.0.1:0", "public"
		if olts[i].Profile != "" {
			olts[i].Shape = oltsim.Shape{Slots: 1, PortsPerSlot: 1, ONUsPerPort: 2}
		}
	}
	fleet, err := oltsim.Start(context.Background(), oltsim.FleetConfig{OLTs: olts}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()

	f := setup(t)
	for _, sim := range fleet.OLTs() {
		body := fmt.Sprintf(`{"id":%q,"name":"x","ip":"127.0.0.1","port":%d,"community":"public","brand_id":"auto"}`, sim.Name(), sim.Addr().Port)
		code, out, raw := f.do("POST", "/api/v1/olts", body)
		if sim.Name() == "unknown" {
			msg, _ := out["error"].(string)
			if code != http.StatusUnprocessableEntity || !strings.Contains(msg, "1.3.6.1.4.1.424242.7") || !strings.Contains(msg, "Mystery Box 3000") {
				t.Errorf("unknown agent: %d %s, want 422 naming its sysObjectID and sysDescr", code, raw)
			}
			continue
		}
		if code != http.StatusCreated || out["profile"] != want[sim.Name()] {
			t.Errorf("%s: %d %s, want 201 with profile %s", sim.Name(), code, raw, want[sim.Name()])
			continue
		}
		p := want[sim.Name()]
		olt := decode[streams.OLTUpserted](t, f.last(streams.SubjectOLT(sim.Name())))
		brand := decode[streams.BrandUpserted](t, f.last(streams.SubjectBrand(p)))
		if olt.BrandID != p || brand.Index == nil || brand.Profile != p || strings.Contains(olt.CommunityEnc, "public") {
			t.Errorf("%s: olt %+v brand %+v", sim.Name(), olt, brand)
		}
		job := decode[streams.JobUpserted](t, f.last(streams.SubjectJob(p+"-discovery")))
		if job.BrandID != p || len(job.OIDIDs) == 0 {
			t.Errorf("%s: job %+v", sim.Name(), job)
		}
		for _, id := range job.OIDIDs {
			decode[streams.OIDUpserted](t, f.last(streams.SubjectOID(id)))
		}
		if a := decode[streams.JobOLTAssigned](t, f.last(streams.SubjectAssignment(p+"-discovery", sim.Name()))); !a.Enabled {
			t.Errorf("%s: assignment %+v", sim.Name(), a)
		}
	}
	// A profile given by id needs no SNMP; a second OLT reuses the brand.
	code, out, raw := f.do("POST", "/api/v1/olts", `{"id":"by-id","name":"x","ip":"127.0.0.1","port":1,"community":"c","profile":"huawei-ma5800"}`)
	if code != http.StatusCreated || fmt.Sprint(out["created"]) != "[]" {
		t.Errorf("by profile id: %d %s, want 201 creating nothing new", code, raw)
	}
	if code, _, raw := f.do("POST", "/api/v1/olts", `{"id":"by-id2","name":"x","ip":"127.0.0.1","community":"c","profile":"nope"}`); code != http.StatusBadRequest {
		t.Errorf("unknown profile: %d %s", code, raw)
	}
	if code, _, _ := f.do("POST", "/api/v1/olts", `{"id":"by-id","name":"x","ip":"127.0.0.1","community":"c","profile":"huawei-ma5800"}`); code != http.StatusConflict {
		t.Errorf("existing OLT with a profile: %d, want 409", code)
	}
}

// The ONU list shows the profile fields and the port name beside the raw
// index; an execution shows the varbinds the projector could not place.
func TestONUFieldsAndPlacementShown(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	if _, err := f.db.Exec(ctx, `INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at, deleted) VALUES
		('olt-p', 'P', '10.0.0.1', 161, 'huawei-ma5800', true, now(), false)`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Exec(ctx, `INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, status, first_seen, last_seen, onu_index, port_name,
		tx_power_dbm, distance_m, last_down_cause, removed_at) VALUES
		('olt-p', 4194312960, 5, 'HWTC00000005', 'ONLINE', now(), now(), '4194312960.5', '0/1/3:5', 2.1, 1234, 'DYING_GASP', NULL),
		('olt-p', 4194312960, 6, 'HWTC00000006', 'OFFLINE', now(), now(), '4194312960.6', '0/1/3:6', NULL, NULL, '', now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status) VALUES ('ep', 'j', 'olt-p', 'SUCCESS');
		INSERT INTO execution_placement (olt_id, execution_id, placed_varbinds, unplaced_varbinds, unplaced_reasons)
		VALUES ('olt-p', 'ep', 10, 4, '{"bad_index": 4}')`); err != nil {
		t.Fatal(err)
	}
	out := f.must("GET", "/api/v1/olts/olt-p/onus", "", http.StatusOK)
	onus, _ := out["onus"].([]any)
	if len(onus) != 2 {
		t.Fatalf("onus %v", out)
	}
	a, b := onus[0].(map[string]any), onus[1].(map[string]any)
	if a["port_name"] != "0/1/3:5" || a["onu_index"] != "4194312960.5" || a["tx_power_dbm"] != 2.1 || a["distance_m"] != float64(1234) ||
		a["last_down_cause"] != "DYING_GASP" || a["removed_at"] != nil || a["olt_rx_power_dbm"] != nil {
		t.Errorf("onu 5 %v", a)
	}
	if b["removed_at"] == nil || b["tx_power_dbm"] != nil {
		t.Errorf("onu 6 %v", b)
	}
	ex := f.must("GET", "/api/v1/executions/ep", "", http.StatusOK)["execution"].(map[string]any)
	if ex["placed_varbinds"] != float64(10) || ex["unplaced_varbinds"] != float64(4) || fmt.Sprint(ex["unplaced_reasons"]) != "map[bad_index:4]" {
		t.Errorf("execution %v", ex)
	}
}

// A brand made from a profile can be changed by the API and keeps its
// index definition.
func TestProfileBrandPatchKeepsIndex(t *testing.T) {
	f := setup(t)
	f.must("POST", "/api/v1/olts", `{"id":"olt-z","name":"x","ip":"127.0.0.1","community":"c","profile":"zte-1082"}`, http.StatusCreated)
	f.must("PATCH", "/api/v1/brands/zte-1082", `{"name":"ZTE of the north"}`, http.StatusAccepted)
	b := decode[streams.BrandUpserted](t, f.last(streams.SubjectBrand("zte-1082")))
	if b.Name != "ZTE of the north" || b.Index == nil || b.IndexScheme != "zte-1082-ifindex" {
		t.Errorf("patched brand %+v", b)
	}
}
