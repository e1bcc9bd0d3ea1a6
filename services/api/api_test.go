package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/api"
	"github.com/facho-olt/facho/streams"
)

const token = "test-token-0123456789"

type fixture struct {
	t   *testing.T
	srv *httptest.Server
	js  jetstream.JetStream
	db  *pgxpool.Pool
	box *secret.Box
}

func setup(t *testing.T) *fixture {
	t.Helper()
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	k, _ := secret.NewKey()
	key, _ := secret.ParseKey(k)
	box, err := secret.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.NewHandler(context.Background(), api.Config{Tokens: []string{token}},
		api.Deps{JS: env.JS, DB: db, Box: box, Log: zerolog.Nop(), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{t: t, srv: srv, js: env.JS, db: db, box: box}
}

// do sends a request with the token and decodes the JSON answer.
func (f *fixture) do(method, path, body string) (int, map[string]any, string) {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, string(raw)
}

func (f *fixture) must(method, path, body string, want int) map[string]any {
	f.t.Helper()
	code, out, raw := f.do(method, path, body)
	if code != want {
		f.t.Fatalf("%s %s = %d %s, want %d", method, path, code, raw, want)
	}
	return out
}

// last reads the latest event on a config subject.
func (f *fixture) last(subject string) streams.Envelope {
	f.t.Helper()
	return f.lastOn(streams.StreamConfig, subject)
}

// lastOn reads the latest event on a subject of a stream.
func (f *fixture) lastOn(stream, subject string) streams.Envelope {
	f.t.Helper()
	s, err := f.js.Stream(context.Background(), stream)
	if err != nil {
		f.t.Fatal(err)
	}
	msg, err := s.GetLastMsgForSubject(context.Background(), subject)
	if err != nil {
		f.t.Fatalf("no event on %s: %v", subject, err)
	}
	env, err := streams.DecodeEnvelope(msg.Data)
	if err != nil {
		f.t.Fatal(err)
	}
	if msg.Header.Get("Nats-Msg-Id") == "" {
		f.t.Errorf("event on %s has no Nats-Msg-Id", subject)
	}
	return env
}

func decode[T streams.Event](t *testing.T, env streams.Envelope) T {
	t.Helper()
	var v T
	if env.Type != v.EventType() {
		t.Fatalf("event type %s, want %s", env.Type, v.EventType())
	}
	if err := streams.DecodeData(env, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

const (
	brandBody = `{"id":"huawei","name":"Huawei","index_scheme":"pon.onu"}`
	oidBody   = `{"id":"hw-serial","brand_id":"huawei","name":"serial","oid":"1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3","field":"serial","decoder":{"kind":"hex_serial"}}`
	oltBody   = `{"id":"olt-a","name":"OLT A","ip":"10.0.0.1","community":"s3cr3t-community","brand_id":"huawei"}`
	jobBody   = `{"id":"get-serial","name":"GET serial","brand_id":"huawei","kind":"get","oid_ids":["hw-serial"],"interval_seconds":300}`
)

func (f *fixture) seed() {
	f.must("POST", "/api/v1/brands", brandBody, http.StatusCreated)
	f.must("POST", "/api/v1/oids", oidBody, http.StatusCreated)
	f.must("POST", "/api/v1/olts", oltBody, http.StatusCreated)
	f.must("POST", "/api/v1/jobs", jobBody, http.StatusCreated)
}

func TestConfigEndpointsPublishEvents(t *testing.T) {
	f := setup(t)

	out := f.must("POST", "/api/v1/brands", brandBody, http.StatusCreated)
	if out["id"] != "huawei" {
		t.Errorf("brand response %v", out)
	}
	if b := decode[streams.BrandUpserted](t, f.last(streams.SubjectBrand("huawei"))); b.Name != "Huawei" || b.IndexScheme != "pon.onu" {
		t.Errorf("brand event %+v", b)
	}

	f.must("POST", "/api/v1/oids", oidBody, http.StatusCreated)
	if o := decode[streams.OIDUpserted](t, f.last(streams.SubjectOID("hw-serial"))); o.BrandID != "huawei" || o.Field != "serial" || o.Decoder.Kind != "hex_serial" {
		t.Errorf("oid event %+v", o)
	}

	_, out, raw := f.do("POST", "/api/v1/olts", oltBody)
	if strings.Contains(raw, "s3cr3t") || out["port"] != float64(161) || out["enabled"] != true {
		t.Errorf("OLT response leaks the community or lacks defaults: %s", raw)
	}
	env := f.last(streams.SubjectOLT("olt-a"))
	if strings.Contains(string(env.Data), "s3cr3t") {
		t.Fatalf("OLT event carries the plaintext community: %s", env.Data)
	}
	olt := decode[streams.OLTUpserted](t, env)
	if got, err := f.box.Open(olt.CommunityEnc); err != nil || got != "s3cr3t-community" {
		t.Errorf("sealed community opens to %q, %v", got, err)
	}
	if olt.IP != "10.0.0.1" || olt.Port != 161 || !olt.Enabled || olt.BrandID != "huawei" {
		t.Errorf("OLT event %+v", olt)
	}

	f.must("POST", "/api/v1/jobs", jobBody, http.StatusCreated)
	job := decode[streams.JobUpserted](t, f.last(streams.SubjectJob("get-serial")))
	// An unset max_retries is published as 0: the planner's class default.
	if job.Priority != 40 || job.MaxRetries != 0 || job.RetryDelaySeconds != 120 || !job.Enabled || job.IntervalSeconds != 300 || len(job.OIDIDs) != 1 {
		t.Errorf("job event (defaults) %+v", job)
	}
	// A PATCH of another field keeps the class default; the job overrides
	// it with 1..10 or -1 (none); null goes back to the class default.
	for _, tc := range []struct {
		body string
		want int
	}{{`{"priority":41}`, 0}, {`{"max_retries":1}`, 1}, {`{"priority":42}`, 1}, {`{"max_retries":-1}`, -1}, {`{"max_retries":null}`, 0}} {
		f.must("PATCH", "/api/v1/jobs/get-serial", tc.body, http.StatusAccepted)
		if got := decode[streams.JobUpserted](t, f.last(streams.SubjectJob("get-serial"))).MaxRetries; got != tc.want {
			t.Errorf("PATCH %s: max_retries %d, want %d", tc.body, got, tc.want)
		}
	}
	// A discovery job defaults to priority 90; an id is generated when absent.
	out = f.must("POST", "/api/v1/jobs", `{"name":"disc","brand_id":"huawei","kind":"discovery","oid_ids":["hw-serial"],"interval_seconds":3600}`, http.StatusCreated)
	genID, _ := out["id"].(string)
	if !streams.ValidID(genID) {
		t.Fatalf("generated id %q", genID)
	}
	if d := decode[streams.JobUpserted](t, f.last(streams.SubjectJob(genID))); d.Priority != 90 {
		t.Errorf("discovery priority %d", d.Priority)
	}

	f.must("POST", "/api/v1/jobs/get-serial/olts", `{"olt_id":"olt-a"}`, http.StatusCreated)
	if a := decode[streams.JobOLTAssigned](t, f.last(streams.SubjectAssignment("get-serial", "olt-a"))); !a.Enabled {
		t.Errorf("assignment %+v", a)
	}
	f.must("DELETE", "/api/v1/jobs/get-serial/olts/olt-a", "", http.StatusAccepted)
	decode[streams.JobOLTUnassigned](t, f.last(streams.SubjectAssignment("get-serial", "olt-a")))
	f.must("DELETE", "/api/v1/jobs/get-serial/olts/olt-a", "", http.StatusNotFound)

	// PUT without a community keeps the sealed one.
	f.must("PUT", "/api/v1/olts/olt-a", `{"name":"OLT A","ip":"2001:db8::1","port":1161,"brand_id":"huawei","enabled":false}`, http.StatusAccepted)
	upd := decode[streams.OLTUpserted](t, f.last(streams.SubjectOLT("olt-a")))
	if upd.CommunityEnc != olt.CommunityEnc || upd.IP != "2001:db8::1" || upd.Port != 1161 || upd.Enabled {
		t.Errorf("updated OLT %+v", upd)
	}
	f.must("PUT", "/api/v1/jobs/get-serial", strings.Replace(jobBody, "300", "600", 1), http.StatusAccepted)
	if j := decode[streams.JobUpserted](t, f.last(streams.SubjectJob("get-serial"))); j.IntervalSeconds != 600 {
		t.Errorf("updated job %+v", j)
	}

	f.must("DELETE", "/api/v1/olts/olt-a", "", http.StatusAccepted)
	decode[streams.OLTDeleted](t, f.last(streams.SubjectOLT("olt-a")))
	f.must("PUT", "/api/v1/olts/olt-a", oltBody, http.StatusNotFound)
	f.must("DELETE", "/api/v1/jobs/get-serial", "", http.StatusAccepted)
	decode[streams.JobDeleted](t, f.last(streams.SubjectJob("get-serial")))
	f.must("PUT", "/api/v1/jobs/nope", jobBody, http.StatusNotFound)
}

func TestBadInputNamesTheField(t *testing.T) {
	f := setup(t)
	f.seed()
	olt := func(kv string) string {
		return `{"name":"x","ip":"10.0.0.1","community":"c","brand_id":"huawei",` + kv + `}`
	}
	job := func(kv string) string {
		return `{"name":"j","brand_id":"huawei","kind":"get","oid_ids":["hw-serial"],"interval_seconds":60,` + kv + `}`
	}
	oid := func(kv string) string {
		return `{"brand_id":"huawei","name":"n","field":"serial","decoder":{"kind":"string"},` + kv + `}`
	}
	for _, tc := range []struct {
		name, method, path, body, field string
	}{
		{"bad IP", "POST", "/api/v1/olts", `{"name":"x","ip":"10.0.0.300","community":"c","brand_id":"huawei"}`, "ip"},
		{"hostname is not an IP", "POST", "/api/v1/olts", `{"name":"x","ip":"olt.example","community":"c","brand_id":"huawei"}`, "ip"},
		{"port 0", "POST", "/api/v1/olts", olt(`"port":0`), "port"},
		{"port 70000", "POST", "/api/v1/olts", olt(`"port":70000`), "port"},
		{"port not a number", "POST", "/api/v1/olts", olt(`"port":"161"`), "port"},
		{"unknown brand", "POST", "/api/v1/olts", `{"name":"x","ip":"10.0.0.1","community":"c","brand_id":"nokia"}`, "brand_id"},
		{"missing community", "POST", "/api/v1/olts", `{"name":"x","ip":"10.0.0.1","brand_id":"huawei"}`, "community"},
		{"missing name", "POST", "/api/v1/olts", `{"ip":"10.0.0.1","community":"c","brand_id":"huawei"}`, "name"},
		{"bad id", "POST", "/api/v1/olts", olt(`"id":"a.b"`), "id"},
		{"unknown field", "POST", "/api/v1/olts", olt(`"colour":"red"`), "colour"},
		{"malformed JSON", "POST", "/api/v1/olts", `{"name":`, ""},
		{"two objects", "POST", "/api/v1/brands", brandBody + brandBody, ""},
		{"bad OID letters", "POST", "/api/v1/oids", oid(`"oid":"1.3.6.x"`), "oid"},
		{"bad OID empty arc", "POST", "/api/v1/oids", oid(`"oid":"1.3..6"`), "oid"},
		{"bad OID first arc", "POST", "/api/v1/oids", oid(`"oid":"3.1"`), "oid"},
		{"bad OID one arc", "POST", "/api/v1/oids", oid(`"oid":"1"`), "oid"},
		{"bad field", "POST", "/api/v1/oids", `{"brand_id":"huawei","name":"n","oid":"1.3.6","field":"color","decoder":{"kind":"string"}}`, "field"},
		{"bad decoder", "POST", "/api/v1/oids", `{"brand_id":"huawei","name":"n","oid":"1.3.6","field":"serial","decoder":{"kind":"rot13"}}`, "decoder"},
		{"OID of unknown brand", "POST", "/api/v1/oids", `{"brand_id":"zte","name":"n","oid":"1.3.6","field":"serial","decoder":{"kind":"string"}}`, "brand_id"},
		{"bad index scheme", "POST", "/api/v1/brands", `{"name":"x","index_scheme":"flat"}`, "index_scheme"},
		{"interval too short", "POST", "/api/v1/jobs", `{"name":"j","brand_id":"huawei","kind":"get","oid_ids":["hw-serial"],"interval_seconds":5}`, "interval_seconds"},
		{"bad kind", "POST", "/api/v1/jobs", `{"name":"j","brand_id":"huawei","kind":"set","oid_ids":["hw-serial"],"interval_seconds":60}`, "kind"},
		{"job of unknown brand", "POST", "/api/v1/jobs", `{"name":"j","brand_id":"zte","kind":"get","oid_ids":["hw-serial"],"interval_seconds":60}`, "brand_id"},
		{"unknown OID", "POST", "/api/v1/jobs", `{"name":"j","brand_id":"huawei","kind":"get","oid_ids":["nope"],"interval_seconds":60}`, "oid_ids"},
		{"no OIDs", "POST", "/api/v1/jobs", `{"name":"j","brand_id":"huawei","kind":"get","oid_ids":[],"interval_seconds":60}`, "oid_ids"},
		{"negative retries", "POST", "/api/v1/jobs", job(`"max_retries":-2`), "max_retries"},
		{"retries 11", "POST", "/api/v1/jobs", job(`"max_retries":11`), "max_retries"},
		{"priority 101", "POST", "/api/v1/jobs", job(`"priority":101`), "priority"},
		{"unknown OLT in assignment", "POST", "/api/v1/jobs/get-serial/olts", `{"olt_id":"olt-z"}`, "olt_id"},
		// Issue 6 item 4: accepted before, then refused by the projector.
		{"IP 0.0.0.0", "POST", "/api/v1/olts", `{"name":"x","ip":"0.0.0.0","community":"c","brand_id":"huawei"}`, "ip"},
		{"IP ::", "POST", "/api/v1/olts", `{"name":"x","ip":"::","community":"c","brand_id":"huawei"}`, "ip"},
		{"IP broadcast", "POST", "/api/v1/olts", `{"name":"x","ip":"255.255.255.255","community":"c","brand_id":"huawei"}`, "ip"},
		{"IP multicast", "POST", "/api/v1/olts", `{"name":"x","ip":"224.0.0.251","community":"c","brand_id":"huawei"}`, "ip"},
		{"IPv6 multicast", "POST", "/api/v1/olts", `{"name":"x","ip":"ff02::1","community":"c","brand_id":"huawei"}`, "ip"},
		{"NUL in an OLT name", "POST", "/api/v1/olts", `{"name":"x\u0000y","ip":"10.0.0.1","community":"c","brand_id":"huawei"}`, "name"},
		{"control in an OLT description", "POST", "/api/v1/olts", olt(`"description":"a\u001b[2Jb"`), "description"},
		{"NUL in an OLT description", "PUT", "/api/v1/olts/olt-a", olt(`"description":"\u0000"`), "description"},
		{"long OLT description", "POST", "/api/v1/olts", olt(`"description":"` + strings.Repeat("d", 1001) + `"`), "description"},
		{"invalid UTF-8 in an OLT name", "POST", "/api/v1/olts", "{\"name\":\"x\xc3\x28\",\"ip\":\"10.0.0.1\",\"community\":\"c\",\"brand_id\":\"huawei\"}", "name"},
		{"NUL in a brand name", "POST", "/api/v1/brands", `{"name":"Hua\u0000wei","index_scheme":"pon.onu"}`, "name"},
		{"newline in a brand name", "POST", "/api/v1/brands", `{"name":"Hua\nwei","index_scheme":"pon.onu"}`, "name"},
		{"bidi override in a brand description", "POST", "/api/v1/brands", `{"name":"b","description":"\u202e","index_scheme":"pon.onu"}`, "description"},
		{"long brand name", "POST", "/api/v1/brands", `{"name":"` + strings.Repeat("n", 201) + `","index_scheme":"pon.onu"}`, "name"},
		{"NUL in an OID name", "POST", "/api/v1/oids", oid(`"oid":"1.3.6","name":"\u0000"`), "name"},
		{"NUL in an enum label", "POST", "/api/v1/oids", `{"brand_id":"huawei","name":"n","oid":"1.3.6","field":"status","decoder":{"kind":"enum","enum":{"1":"ON\u0000"}}}`, "decoder.enum"},
		{"NUL in a job name", "POST", "/api/v1/jobs", `{"name":"j\u0000","brand_id":"huawei","kind":"get","oid_ids":["hw-serial"],"interval_seconds":60}`, "name"},
		{"OID of 129 sub-identifiers", "POST", "/api/v1/oids", oid(`"oid":"1.3` + strings.Repeat(".1", 127) + `"`), "oid"},
		{"OID sub-identifier 2^32", "POST", "/api/v1/oids", oid(`"oid":"1.3.6.4294967296"`), "oid"},
		{"scale not a number", "POST", "/api/v1/oids", `{"brand_id":"huawei","name":"n","oid":"1.3.6","field":"rx_power","decoder":{"kind":"scaled","scale":"0.01"}}`, "decoder.scale"},
		{"priority not a number", "POST", "/api/v1/jobs", job(`"priority":"high"`), "priority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, raw := f.do(tc.method, tc.path, tc.body)
			if code != http.StatusBadRequest {
				t.Fatalf("status %d %s, want 400", code, raw)
			}
			field, ok := out["field"].(string)
			if !ok || field != tc.field {
				t.Errorf("field = %q (%s), want %q", field, raw, tc.field)
			}
			msg, _ := out["error"].(string)
			if msg == "" {
				t.Errorf("no error message: %s", raw)
			}
			if strings.Contains(msg, "Go ") || strings.Contains(msg, "of type") || strings.Contains(msg, "float64") {
				t.Errorf("message shows a Go type: %s", msg)
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	f := setup(t)
	for _, auth := range []string{"", "Bearer wrong-token-0123456789", "Basic " + token, "Bearer "} {
		req, _ := http.NewRequest("POST", f.srv.URL+"/api/v1/brands", bytes.NewBufferString(brandBody))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || out["error"] == nil {
			t.Errorf("auth %q: %d %v, want 401 JSON", auth, resp.StatusCode, out)
		}
	}
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/metrics": http.StatusUnauthorized} {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s = %d without a token, want %d", path, resp.StatusCode, want)
		}
	}
}

func TestReadEndpoints(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	if _, err := f.db.Exec(ctx, `INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at, deleted, disabled_reason, disabled_at) VALUES
		('olt-a', 'A', '10.0.0.1', 161, 'huawei', true, $1, false, '', NULL),
		('olt-d', 'D', '10.0.0.4', 161, 'huawei', false, $1, false, '3 consecutive failed executions', $1),
		('olt-x', 'X', '10.0.0.9', 161, 'huawei', true, $1, true, '', NULL)`, now); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Exec(ctx, `INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, description, status, rx_power_dbm, first_seen, last_seen) VALUES
		('olt-a', 4194304256, 2, 'HWTC00000002', 'two', 'OFFLINE', NULL, $1, $1),
		('olt-a', 4194304256, 1, 'HWTC00000001', 'one', 'ONLINE', -18.5, $1, $1),
		('olt-a', 4194304512, 0, 'HWTC00000003', 'three', 'ONLINE', -21.25, $1, $1),
		('olt-b', 1, 1, 'ZTEG00000001', 'other', 'ONLINE', -20, $1, $1)`, now); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Exec(ctx, `INSERT INTO executions (id, job_id, olt_id, status, scheduled_at) VALUES
		('e1', 'j', 'olt-a', 'SUCCESS', $1), ('e2', 'j', 'olt-a', 'PENDING', $2), ('e3', 'j', 'olt-b', 'FAILED', $2)`, now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	out := f.must("GET", "/api/v1/olts", "", http.StatusOK)
	olts, _ := out["olts"].([]any)
	if out["count"] != float64(2) || len(olts) != 2 {
		t.Fatalf("olts %v", out)
	}
	if a := olts[0].(map[string]any); a["id"] != "olt-a" || a["disabled_reason"] != nil || a["disabled_at"] != nil {
		t.Errorf("enabled olt %v", a)
	}
	if d := olts[1].(map[string]any); d["enabled"] != false || d["disabled_reason"] != "3 consecutive failed executions" || d["disabled_at"] != "2026-11-21T10:00:00Z" {
		t.Errorf("auto-disabled olt %v", d)
	}

	out = f.must("GET", "/api/v1/olts/olt-a/onus", "", http.StatusOK)
	onus, _ := out["onus"].([]any)
	if out["olt_id"] != "olt-a" || out["count"] != float64(3) || len(onus) != 3 {
		t.Fatalf("onus %v", out)
	}
	first := onus[0].(map[string]any)
	if first["onu_id"] != float64(1) || first["serial"] != "HWTC00000001" || first["rx_power_dbm"] != -18.5 || first["status"] != "ONLINE" || first["first_seen"] == nil {
		t.Errorf("first onu %v", first)
	}
	if second := onus[1].(map[string]any); second["rx_power_dbm"] != nil || second["onu_id"] != float64(2) {
		t.Errorf("second onu %v", second)
	}

	out = f.must("GET", "/api/v1/olts/olt-a/onus?status=online&limit=1&offset=1", "", http.StatusOK)
	onus, _ = out["onus"].([]any)
	if out["count"] != float64(1) || out["total"] != float64(2) || onus[0].(map[string]any)["serial"] != "HWTC00000003" {
		t.Errorf("filtered onus %v", out)
	}
	if code, out, _ := f.do("GET", "/api/v1/olts/olt-a/onus?limit=-1", ""); code != 400 || out["field"] != "limit" {
		t.Errorf("bad limit: %d %v", code, out)
	}

	out = f.must("GET", "/api/v1/executions?olt_id=olt-a", "", http.StatusOK)
	execs, _ := out["executions"].([]any)
	if len(execs) != 2 || execs[0].(map[string]any)["id"] != "e2" {
		t.Errorf("executions %v", out)
	}

	for _, q := range []string{
		`INSERT INTO brands (id, name, index_scheme, updated_at) VALUES ('huawei', 'Huawei', 'pon.onu', $1), ('zte', 'ZTE', 'pon.onu', $1)`,
		`INSERT INTO oids (id, brand_id, name, oid, field, decoder, updated_at) VALUES
			('hw-serial', 'huawei', 'serial', '1.3.6.1.4.1.2011.6.128.1.1.2.43.1.3', 'serial', '{"kind":"hex_serial"}', $1),
			('zte-serial', 'zte', 'serial', '1.3.6.1.4.1.3902', 'serial', '{"kind":"string"}', $1)`,
		`INSERT INTO snmp_jobs (id, name, brand_id, kind, oid_ids, interval_seconds, max_retries, retry_delay_seconds, timeout_seconds, priority, enabled, deleted, updated_at) VALUES
			('disc', 'Discovery', 'huawei', 'discovery', '{hw-serial}', 3600, 3, 120, 0, 90, true, false, $1),
			('gone', 'Gone', 'huawei', 'get', '{hw-serial}', 300, 3, 120, 0, 40, true, true, $1)`,
		`INSERT INTO coordinator_logs (olt_id, event_type, level, message, details, "timestamp", source_stream, source_seq) VALUES
			('olt-a', 'TASK_ADDED', 'INFO', 'added', '{"job_id":"disc"}', $1, 'FACHO_AUDIT', 1),
			('olt-a', 'EXECUTION_FAILED', 'ERROR', 'failed', '{}', $1, 'FACHO_EXEC', 1),
			(NULL, 'PLAN_ADJUSTED', 'INFO', 'started', '{}', $1, 'FACHO_AUDIT', 2)`,
	} {
		if _, err := f.db.Exec(ctx, q, now); err != nil {
			t.Fatal(err)
		}
	}
	if out := f.must("GET", "/api/v1/brands", "", http.StatusOK); out["count"] != float64(2) {
		t.Errorf("brands %v", out)
	}
	out = f.must("GET", "/api/v1/oids?brand_id=huawei", "", http.StatusOK)
	if oids, _ := out["oids"].([]any); len(oids) != 1 || oids[0].(map[string]any)["decoder"].(map[string]any)["kind"] != "hex_serial" {
		t.Errorf("oids %v", out)
	}
	out = f.must("GET", "/api/v1/jobs", "", http.StatusOK)
	if jobs, _ := out["jobs"].([]any); len(jobs) != 1 || jobs[0].(map[string]any)["oid_ids"].([]any)[0] != "hw-serial" {
		t.Errorf("jobs %v", out)
	}
	for _, tc := range []struct {
		query string
		want  int
	}{{"", 3}, {"?level=error", 1}, {"?event_type=task_added&olt_id=olt-a", 1}, {"?olt_id=GLOBAL", 1}, {"?olt_id=olt-a", 2}} {
		out = f.must("GET", "/api/v1/coordinator-logs"+tc.query, "", http.StatusOK)
		if out["count"] != float64(tc.want) {
			t.Errorf("coordinator logs %s: %v, want %d", tc.query, out["count"], tc.want)
		}
	}
	if code, out, _ := f.do("GET", "/api/v1/coordinator-logs?level=bad-level", ""); code != 400 || out["field"] != "level" {
		t.Errorf("bad level: %d %v", code, out)
	}
}

// TestHealthzHidesTheDetail: /healthz is anonymous, so it says which part
// is down, never the database error (user, database, host, port); the
// detail is logged.
func TestHealthzHidesTheDetail(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	// Nothing listens on port 1: every ping fails with the URL's parts.
	db, err := pgxpool.New(context.Background(), "postgres://secretuser@127.0.0.1:1/secretdb?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	k, _ := secret.NewKey()
	key, _ := secret.ParseKey(k)
	box, _ := secret.NewBox(key)
	var logBuf syncBuffer
	h, err := api.NewHandler(context.Background(), api.Config{Tokens: []string{token}},
		api.Deps{JS: env.JS, DB: db, Box: box, Log: zerolog.New(&logBuf), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func() (int, map[string]any, string) {
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return resp.StatusCode, out, string(raw)
	}
	code, out, raw := get()
	checks, _ := out["checks"].(map[string]any)
	if code != http.StatusServiceUnavailable || checks["postgres"] != "database unavailable" || checks["nats"] != "ok" {
		t.Errorf("/healthz = %d %s, want 503 with postgres: database unavailable, nats: ok", code, raw)
	}
	for _, leak := range []string{"secretuser", "secretdb", "127.0.0.1", ":1", "refused"} {
		if strings.Contains(raw, leak) {
			t.Errorf("/healthz shows %q: %s", leak, raw)
		}
	}
	if log := logBuf.String(); !strings.Contains(log, "secretdb") || !strings.Contains(log, `"level":"warn"`) {
		t.Errorf("the detail is not logged at warn: %s", log)
	}
	// A second probe with the same failure adds no log line.
	before := strings.Count(logBuf.String(), "\n")
	get()
	if after := strings.Count(logBuf.String(), "\n"); after != before {
		t.Errorf("a repeated failure logged again: %d lines, then %d", before, after)
	}

	env.NC.Close()
	_, out, raw = get()
	if checks, _ := out["checks"].(map[string]any); checks["nats"] != "nats unavailable" {
		t.Errorf("/healthz with NATS closed: %s, want nats: nats unavailable", raw)
	}
}

// syncBuffer is a bytes.Buffer safe for the handler's and the test's
// goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
