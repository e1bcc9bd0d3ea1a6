package api_test

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/streams"
)

// alertsFixture: OLT olt-1 with PON 1 (port 0/1/1: four ONUs, three
// down in a fiber cut) and PON 2 (port 0/1/2: two ONUs online, one at
// -29 dBm), olt-2 with one ONU; in alerts a firing pon_outage incident on
// 0/1/1 grouping three onu_down alerts, a firing onu_rx_low warning on
// 0/1/2, a resolved onu_down on olt-2, and a firing olt_unreachable on
// olt-2.
func alertsFixture(t *testing.T) *fixture {
	f := setup(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := f.db.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at) VALUES
		('olt-1', 'Centro', '10.0.0.1', 161, 'huawei', true, now()), ('olt-2', 'Norte', '10.0.0.2', 161, 'zte', true, now())`)
	exec(`INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, status, rx_power_dbm, port_name, first_seen, last_seen, removed_at) VALUES
		('olt-1', 1, 1, 'S1', 'ONLINE', -20, '0/1/1:1', $1, $1, NULL),
		('olt-1', 1, 2, 'S2', 'LOS', NULL, '0/1/1:2', $1, $1, NULL),
		('olt-1', 1, 3, 'S3', 'LOS', NULL, '0/1/1:3', $1, $1, NULL),
		('olt-1', 1, 4, 'S4', 'OFFLINE', NULL, '0/1/1:4', $1, $1, NULL),
		('olt-1', 1, 5, 'S5', 'OFFLINE', NULL, '0/1/1:5', $1, $1, $1),
		('olt-1', 2, 1, 'S6', 'ONLINE', -21, '0/1/2:1', $1, $1, NULL),
		('olt-1', 2, 2, 'S7', 'ONLINE', -29, '0/1/2:2', $1, $1, NULL),
		('olt-2', 7, 1, 'S8', 'ONLINE', -18, '', $1, $1, NULL)`, t0)
	a := func(id, rule, sev, state, olt string, ponIndex any, pon any, onu any, serial any, incident any, startsAt time.Time, endsAt any) {
		t.Helper()
		exec(`INSERT INTO alerts (id, key, rule, severity, state, olt_id, olt_name, pon_index, pon, onu_id, serial, summary, incident_id,
			inhibited, starts_at, ends_at, stream_seq) VALUES ($1, $2 || ':' || $1, $2, $3, $4, $5, 'name of ' || $5, $6, $7, $8, $9, 'summary ' || $1, $10,
			$10::text IS NOT NULL AND $10::text <> $1, $11, $12, 1)`,
			id, rule, sev, state, olt, ponIndex, pon, onu, serial, incident, startsAt, endsAt)
	}
	a("inc-1", streams.RulePONOutage, streams.SeverityCritical, "firing", "olt-1", 1, "0/1/1", nil, nil, "inc-1", t0.Add(time.Hour), nil)
	for i, onu := range []int{2, 3, 4} {
		a("down-"+string(rune('a'+i)), streams.RuleONUDown, streams.SeverityWarning, "firing", "olt-1", 1, "0/1/1", onu, "S"+string(rune('2'+i)), "inc-1", t0.Add(time.Hour), nil)
	}
	a("rx-1", streams.RuleONURxLow, streams.SeverityWarning, "firing", "olt-1", 2, "0/1/2", 2, "S7", nil, t0.Add(2*time.Hour), nil)
	a("old-1", streams.RuleONUDown, streams.SeverityWarning, "resolved", "olt-2", 7, "7", 1, "S8", nil, t0, t0.Add(time.Minute))
	a("unr-1", streams.RuleOLTUnreachable, streams.SeverityCritical, "firing", "olt-2", nil, nil, nil, nil, nil, t0.Add(3*time.Hour), nil)
	return f
}

func ids(t *testing.T, out map[string]any, key string) []string {
	t.Helper()
	var got []string
	for _, x := range out[key].([]any) {
		got = append(got, x.(map[string]any)["id"].(string))
	}
	return got
}

func TestAlertsList(t *testing.T) {
	f := alertsFixture(t)
	tests := []struct {
		query string
		want  []string // in order
	}{
		// Active by default: critical first, newest first.
		{"", []string{"unr-1", "inc-1", "rx-1", "down-a", "down-b", "down-c"}},
		{"?state=all", []string{"unr-1", "inc-1", "rx-1", "down-a", "down-b", "down-c", "old-1"}},
		{"?state=resolved", []string{"old-1"}},
		{"?olt_id=olt-2&state=all", []string{"unr-1", "old-1"}},
		{"?pon=0/1/1", []string{"inc-1", "down-a", "down-b", "down-c"}},
		{"?rule=onu_down", []string{"down-a", "down-b", "down-c"}},
		{"?severity=critical", []string{"unr-1", "inc-1"}},
		{"?severity=CRITICAL&olt_id=olt-1", []string{"inc-1"}},
		// An outage as one row: the alerts its incident groups left out;
		// those alerts alone, or one incident's.
		{"?inhibited=false", []string{"unr-1", "inc-1", "rx-1"}},
		{"?inhibited=true", []string{"down-a", "down-b", "down-c"}},
		{"?incident_id=inc-1", []string{"down-a", "down-b", "down-c"}},
		{"?incident_id=inc-1&state=all&inhibited=false", nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			out := f.must("GET", "/api/v1/alerts"+strings.ReplaceAll(tt.query, "/", "%2F"), "", http.StatusOK)
			if got := ids(t, out, "alerts"); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("alerts%s = %v, want %v", tt.query, got, tt.want)
			}
		})
	}
	// Each alert carries exactly the contract's keys.
	out := f.must("GET", "/api/v1/alerts?rule=onu_rx_low", "", http.StatusOK)
	got := out["alerts"].([]any)[0].(map[string]any)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"acked_at", "acked_by", "cause", "description", "ends_at", "id", "incident_id", "inhibited", "key", "olt_id", "olt_name",
		"onu_id", "pon", "rule", "serial", "severity", "starts_at", "state", "summary", "unit", "value"}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Errorf("alert keys = %v, want %v", keys, want)
	}
	if got["olt_id"] != "olt-1" || got["pon"] != "0/1/2" || got["onu_id"] != float64(2) || got["serial"] != "S7" || got["state"] != "firing" {
		t.Errorf("alert = %v", got)
	}
	// Bad filters name the field.
	for _, bad := range []struct{ query, field string }{
		{"state=open", "state"}, {"severity=loud", "severity"}, {"inhibited=maybe", "inhibited"}, {"rule=Bad-Rule", "rule"}, {"olt_id=a%20b", "olt_id"}, {"sort=nope", "sort"},
	} {
		code, body, raw := f.do("GET", "/api/v1/alerts?"+bad.query, "")
		if code != http.StatusBadRequest || body["field"] != bad.field {
			t.Errorf("?%s = %d %s, want 400 naming %s", bad.query, code, raw, bad.field)
		}
	}
	// One alert; unknown: 404.
	one := f.must("GET", "/api/v1/alerts/rx-1", "", http.StatusOK)
	if one["id"] != "rx-1" || one["rule"] != streams.RuleONURxLow {
		t.Errorf("alert rx-1 = %v", one)
	}
	f.must("GET", "/api/v1/alerts/nope", "", http.StatusNotFound)
}

func TestIncidents(t *testing.T) {
	f := alertsFixture(t)
	out := f.must("GET", "/api/v1/incidents", "", http.StatusOK)
	if got := ids(t, out, "incidents"); len(got) != 1 || got[0] != "inc-1" {
		t.Fatalf("incidents = %v, want [inc-1]", got)
	}
	if inc := out["incidents"].([]any)[0].(map[string]any); inc["alerts"] != float64(3) || inc["pon"] != "0/1/1" {
		t.Errorf("incident = %v, want 3 alerts on 0/1/1", inc)
	}
	one := f.must("GET", "/api/v1/incidents/inc-1", "", http.StatusOK)
	if got := ids(t, one, "alerts"); strings.Join(got, ",") != "down-a,down-b,down-c" {
		t.Errorf("incident alerts = %v", got)
	}
	for _, a := range one["alerts"].([]any) {
		if a.(map[string]any)["inhibited"] != true || a.(map[string]any)["incident_id"] != "inc-1" {
			t.Errorf("grouped alert %v: want inhibited under inc-1", a)
		}
	}
	f.must("GET", "/api/v1/incidents/rx-1", "", http.StatusNotFound) // an alert, no incident
}

func TestAlertAck(t *testing.T) {
	f := alertsFixture(t)
	out := f.must("POST", "/api/v1/alerts/rx-1/ack", `{"comment":"crew on site"}`, http.StatusAccepted)
	if out["alert_id"] != "rx-1" || out["by"] != "token" {
		t.Errorf("ack answer = %v", out)
	}
	subject := streams.SubjectAlert("olt-1", streams.AlertStateAcknowledged)
	msg := lastMsg(t, f, streams.StreamAlert, subject)
	if id := msg.Header.Get("Nats-Msg-Id"); id != "ack:rx-1" {
		t.Errorf("Nats-Msg-Id = %q, want ack:rx-1", id)
	}
	env, err := streams.DecodeEnvelope(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	ack := decode[streams.AlertAcknowledged](t, env)
	if ack.AlertID != "rx-1" || ack.Key != "onu_rx_low:rx-1" || ack.OLTID != "olt-1" || ack.Comment != "crew on site" || ack.At.IsZero() {
		t.Errorf("acknowledged = %+v", ack)
	}
	// Again (no body, an empty object): the same Nats-Msg-Id, stored once.
	f.must("POST", "/api/v1/alerts/rx-1/ack", "", http.StatusAccepted)
	f.must("POST", "/api/v1/alerts/rx-1/ack", "{}", http.StatusAccepted)
	if n := subjectCount(t, f, streams.StreamAlert, subject); n != 1 {
		t.Errorf("%d acknowledgements stored after two acks, want 1", n)
	}
	// A global alert (no OLT) on facho.alert.global.acknowledged.
	if _, err := f.db.Exec(context.Background(), `INSERT INTO alerts (id, key, rule, severity, state, summary, starts_at, stream_seq)
		VALUES ('g-1', 'quota_violation', 'quota_violation', 'warning', 'firing', 'x', now(), 2)`); err != nil {
		t.Fatal(err)
	}
	f.must("POST", "/api/v1/alerts/g-1/ack", "", http.StatusAccepted)
	lastMsg(t, f, streams.StreamAlert, "facho.alert.global.acknowledged")

	f.must("POST", "/api/v1/alerts/nope/ack", "", http.StatusNotFound)
	code, _, raw := f.do("POST", "/api/v1/alerts/old-1/ack", "")
	if code != http.StatusConflict {
		t.Errorf("ack of a resolved alert = %d %s, want 409", code, raw)
	}
	for _, bad := range []string{`{"comment":"a\u0000b"}`, `{"comment":5}`} {
		code, body, raw := f.do("POST", "/api/v1/alerts/rx-1/ack", bad)
		if code != http.StatusBadRequest || body["field"] != "comment" {
			t.Errorf("ack %s = %d %s, want 400 naming comment", bad, code, raw)
		}
	}
}

func TestSilences(t *testing.T) {
	f := alertsFixture(t)
	out := f.must("POST", "/api/v1/silences", `{"olt_id":"olt-1","pon":"0/1/1","duration":"2h","comment":"fiber repair"}`, http.StatusCreated)
	id, _ := out["id"].(string)
	if id == "" || out["created_by"] != "token" {
		t.Fatalf("created silence = %v", out)
	}
	msg := lastMsg(t, f, streams.StreamConfig, streams.SubjectSilence(id))
	if msg.Header.Get("Nats-Msg-Id") == "" {
		t.Error("silence event without Nats-Msg-Id")
	}
	env, err := streams.DecodeEnvelope(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	sil := decode[streams.SilenceUpserted](t, env)
	if sil.OLTID != "olt-1" || sil.Pon != "0/1/1" || sil.Rule != "" || sil.EndsAt.Sub(sil.StartsAt) != 2*time.Hour || sil.Comment != "fiber repair" {
		t.Errorf("silence event = %+v", sil)
	}

	now := time.Now().UTC()
	for _, bad := range []struct{ body, field string }{
		{`{"duration":"1h"}`, "olt_id"},
		{`{"rule":"onu_down"}`, "ends_at"},
		{`{"rule":"onu_down","duration":"soon"}`, "duration"},
		{`{"rule":"onu_down","duration":"-1h"}`, "duration"},
		{`{"rule":"onu_down","duration":"1000h"}`, "duration"},
		{`{"rule":"onu_down","duration":"1h","ends_at":"` + now.Add(time.Hour).Format(time.RFC3339) + `"}`, "duration"},
		{`{"rule":"onu_down","ends_at":"` + now.Add(-time.Hour).Format(time.RFC3339) + `"}`, "ends_at"},
		{`{"rule":"onu_down","starts_at":"` + now.Add(2*time.Hour).Format(time.RFC3339) + `","ends_at":"` + now.Add(time.Hour).Format(time.RFC3339) + `"}`, "ends_at"},
		{`{"rule":"Not A Rule","duration":"1h"}`, "rule"},
		{`{"olt_id":"olt-9","duration":"1h"}`, "olt_id"},
		{`{"olt_id":"bad id","duration":"1h"}`, "olt_id"},
		{`{"pon":"` + strings.Repeat("x", 65) + `","duration":"1h"}`, "pon"},
		{`{"rule":"onu_down","duration":"1h","colour":"red"}`, "colour"},
	} {
		code, body, raw := f.do("POST", "/api/v1/silences", bad.body)
		if code != http.StatusBadRequest || body["field"] != bad.field {
			t.Errorf("POST %s = %d %s, want 400 naming %s", bad.body, code, raw, bad.field)
		}
	}

	// The list reads alert_silences (the projector's read model).
	if _, err := f.db.Exec(context.Background(), `INSERT INTO alert_silences (id, olt_id, pon, rule, starts_at, ends_at, created_by, created_at, stream_seq) VALUES
		('s-active', 'olt-1', '0/1/1', NULL, $1, $2, 'ana', $1, 1),
		('s-pending', NULL, NULL, 'onu_down', $2, $3, 'ana', $1, 2),
		('s-expired', 'olt-2', NULL, NULL, $4, $1, 'ana', $4, 3)`, now.Add(-time.Hour), now.Add(time.Hour), now.Add(2*time.Hour), now.Add(-3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Exec(context.Background(), `INSERT INTO alert_silences (id, rule, starts_at, ends_at, created_by, created_at, deleted_at, stream_seq)
		VALUES ('s-deleted', 'onu_rx_low', $1, $2, 'ana', $1, $1, 4)`, now.Add(-time.Hour), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ query, want string }{
		{"", "s-active,s-pending"}, {"?state=active", "s-active"}, {"?state=pending", "s-pending"},
		{"?state=expired", "s-expired"}, {"?state=deleted", "s-deleted"}, {"?state=all&sort=created_at", "s-expired,s-active,s-deleted,s-pending"},
		{"?state=all&olt_id=olt-2", "s-expired"},
	} {
		out := f.must("GET", "/api/v1/silences"+tt.query, "", http.StatusOK)
		if got := strings.Join(ids(t, out, "silences"), ","); got != tt.want {
			t.Errorf("silences%s = %s, want %s", tt.query, got, tt.want)
		}
	}
	out = f.must("GET", "/api/v1/silences?state=all&olt_id=olt-2", "", http.StatusOK)
	if st := out["silences"].([]any)[0].(map[string]any)["state"]; st != "expired" {
		t.Errorf("state of s-expired = %v", st)
	}
	code, body, _ := f.do("GET", "/api/v1/silences?state=maybe", "")
	if code != http.StatusBadRequest || body["field"] != "state" {
		t.Errorf("?state=maybe = %d %v", code, body)
	}

	// Delete: silence.deleted on its subject; then 404.
	f.must("DELETE", "/api/v1/silences/"+id, "", http.StatusAccepted)
	env = f.last(streams.SubjectSilence(id))
	if del := decode[streams.SilenceDeleted](t, env); del.ID != id {
		t.Errorf("deleted = %+v", del)
	}
	f.must("DELETE", "/api/v1/silences/"+id, "", http.StatusNotFound)
	f.must("DELETE", "/api/v1/silences/nope", "", http.StatusNotFound)
}

func TestPONs(t *testing.T) {
	f := alertsFixture(t)
	out := f.must("GET", "/api/v1/olts/olt-1/pons", "", http.StatusOK)
	pons := out["pons"].([]any)
	if len(pons) != 2 {
		t.Fatalf("pons = %v, want 2", pons)
	}
	p1, p2 := pons[0].(map[string]any), pons[1].(map[string]any)
	// PON 1: 4 present ONUs (one removed), 3 down, the outage firing
	// (the incident and its three ONU alerts).
	if p1["pon_index"] != float64(1) || p1["pon"] != "0/1/1" || p1["onus_total"] != float64(4) || p1["onus_online"] != float64(1) ||
		p1["onus_down"] != float64(3) || p1["outage"] != true || p1["outage_alert_id"] != "inc-1" || p1["alerts_firing"] != float64(4) ||
		p1["rx_min_dbm"] != float64(-20) || p1["severity"] != "critical" {
		t.Errorf("PON 1 = %v", p1)
	}
	if p2["pon"] != "0/1/2" || p2["onus_total"] != float64(2) || p2["onus_down"] != float64(0) || p2["outage"] != false ||
		p2["alerts_firing"] != float64(1) || p2["rx_min_dbm"] != float64(-29) || p2["rx_median_dbm"] != float64(-25) || p2["severity"] != "warning" {
		t.Errorf("PON 2 = %v", p2)
	}
	// A PON without port names is named by its index.
	out = f.must("GET", "/api/v1/olts/olt-2/pons", "", http.StatusOK)
	if p := out["pons"].([]any)[0].(map[string]any); p["pon"] != "7" || p["alerts_firing"] != float64(0) {
		t.Errorf("olt-2 PON = %v", p)
	}
	f.must("GET", "/api/v1/olts/olt-9/pons", "", http.StatusNotFound)
}

func lastMsg(t *testing.T, f *fixture, stream, subject string) *jetstream.RawStreamMsg {
	t.Helper()
	s, err := f.js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.GetLastMsgForSubject(context.Background(), subject)
	if err != nil {
		t.Fatalf("no event on %s: %v", subject, err)
	}
	return msg
}

func subjectCount(t *testing.T, f *fixture, stream, subject string) uint64 {
	t.Helper()
	s, err := f.js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}
