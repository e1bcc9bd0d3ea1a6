package api

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/facho-olt/facho/services/api/auth"
	"github.com/facho-olt/facho/streams"
)

// The console's alerts: the Alerts page (active first, the most severe
// first, an outage as its incident's one row with the count of the alerts
// it groups and a link to them, filters), an acknowledgement and a silence through the API (the
// events on their subjects; the API's 400 at the field), the silences
// list with delete, the outage banner on every page while a PON incident
// fires, and the OLT page's PON view with the outage as one red row.
func TestConsoleAlerts(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := r.s.deps.DB.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour).UTC()
	exec(`INSERT INTO olts (id, name, ip, port, brand_id, enabled, updated_at) VALUES ('olt-1', 'Centro', '10.0.0.1', 161, 'huawei', true, now())`)
	// The OLT page reads the OLT's configuration event.
	b, err0 := streams.Encode("test", time.Now(), streams.OLTUpserted{ID: "olt-1", Name: "Centro", IP: "10.0.0.1", Port: 161, BrandID: "huawei", Enabled: true})
	if err := err0; err != nil {
		t.Fatal(err)
	}
	if _, err := r.s.deps.JS.Publish(ctx, streams.SubjectOLT("olt-1"), b); err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO onu_data (olt_id, pon_index, onu_id, serial, status, rx_power_dbm, port_name, first_seen, last_seen) VALUES
		('olt-1', 1, 1, 'S1', 'LOS', NULL, '0/1/1:1', $1, $1), ('olt-1', 1, 2, 'S2', 'LOS', NULL, '0/1/1:2', $1, $1),
		('olt-1', 1, 3, 'S3', 'LOS', NULL, '0/1/1:3', $1, $1), ('olt-1', 1, 4, 'S4', 'LOS', NULL, '0/1/1:4', $1, $1),
		('olt-1', 2, 1, 'S5', 'ONLINE', -21.5, '0/1/2:1', $1, $1), ('olt-1', 2, 2, 'S6', 'ONLINE', -29.5, '0/1/2:2', $1, $1)`, t0)
	alert := func(id, rule, sev, state string, ponIndex int, pon string, onu any, incident any, summary string) {
		t.Helper()
		exec(`INSERT INTO alerts (id, key, rule, severity, state, olt_id, olt_name, pon_index, pon, onu_id, summary, incident_id, inhibited, starts_at, stream_seq)
			VALUES ($1, $1, $2, $3, $4, 'olt-1', 'Centro', $5, $6, $7, $8, $9, $9::text IS NOT NULL AND $9::text <> $1, $10, 1)`,
			id, rule, sev, state, ponIndex, pon, onu, summary, incident, t0)
	}
	alert("inc-1", streams.RulePONOutage, streams.SeverityCritical, "firing", 1, "0/1/1", nil, "inc-1", "PON 0/1/1 of Centro: 4 ONUs down")
	for i := 1; i <= 4; i++ {
		alert("down-"+string(rune('0'+i)), streams.RuleONUDown, streams.SeverityWarning, "firing", 1, "0/1/1", i, "inc-1", "ONU down")
	}
	alert("rx-1", streams.RuleONURxLow, streams.SeverityWarning, "firing", 2, "0/1/2", 2, nil, "ONU S6 at -29.5 dBm")
	alert("old-1", streams.RuleONURxLow, streams.SeverityWarning, "resolved", 2, "0/1/2", 1, nil, "resolved one")

	_, op, csrf := r.user("otto", auth.Operator)
	_, viewer, vcsrf := r.user("vera", auth.Viewer)
	form := func(v url.Values) string { v.Set("csrf", csrf); return v.Encode() }

	// The Alerts page: in the navigation, firing alerts only, the
	// critical incident first.
	code, body := r.do(op, "GET", "/alerts", "", "", "")
	if code != 200 || !strings.Contains(body, `id="nav-alerts"`) {
		t.Fatalf("alerts page = %d", code)
	}
	rows := regexp.MustCompile(`data-alert="([^"]+)"`).FindAllStringSubmatch(body, -1)
	var order []string
	for _, m := range rows {
		order = append(order, m[1])
	}
	if strings.Join(order, ",") != "inc-1,rx-1" {
		t.Errorf("alerts page rows = %v, want the firing ones but those grouped under the incident, inc-1 first", order)
	}
	// The incident says how many alerts it groups and links to them; they
	// are listed with a filter, or one by one with the others.
	if !strings.Contains(body, `<a class="members-link" href="/alerts?incident_id=inc-1&amp;state=all"`) || !strings.Contains(body, "4 grouped alerts") {
		t.Errorf("the incident row without its 4 grouped alerts:\n%s", body)
	}
	alertRows := func(path string) string {
		t.Helper()
		_, body := r.do(op, "GET", path, "", "", "")
		var ids []string
		for _, m := range regexp.MustCompile(`data-alert="([^"]+)"`).FindAllStringSubmatch(body, -1) {
			ids = append(ids, m[1])
		}
		return strings.Join(ids, ",")
	}
	if got := alertRows("/alerts?incident_id=inc-1&state=all"); got != "down-1,down-2,down-3,down-4" {
		t.Errorf("the incident's alerts = %s, want its 4 ONU alerts", got)
	}
	if got := alertRows("/alerts?grouped=show"); got != "inc-1,down-1,down-2,down-3,down-4,rx-1" {
		t.Errorf("alerts one by one = %s, want the 6 firing ones", got)
	}
	// Filters go to the API; a bad one shows its error.
	if _, body := r.do(op, "GET", "/alerts?pon=0/1/2&state=all", "", "", ""); !strings.Contains(body, `data-alert="rx-1"`) || !strings.Contains(body, `data-alert="old-1"`) || strings.Contains(body, `data-alert="inc-1"`) {
		t.Errorf("filtered alerts page:\n%s", body)
	}
	if _, body := r.do(op, "GET", "/alerts?severity=loud", "", "", ""); !strings.Contains(body, `id="error-severity"`) {
		t.Errorf("bad severity not shown at its field")
	}
	// The outage banner on every page.
	for _, p := range []string{"/alerts", "/olts", "/logs", "/silences"} {
		if _, body := r.do(op, "GET", p, "", "", ""); !strings.Contains(body, `id="outage-banner"`) || !strings.Contains(body, "PON 0/1/1 of Centro: 4 ONUs down") {
			t.Errorf("%s without the outage banner", p)
		}
	}

	// Acknowledge: a viewer is refused, an operator's ack is the API's event.
	if code, _ := r.do(viewer, "POST", "/alerts/rx-1/ack", "", "", url.Values{"csrf": {vcsrf}}.Encode()); code != http.StatusForbidden {
		t.Errorf("viewer ack = %d, want 403", code)
	}
	code, _ = r.do(op, "POST", "/alerts/rx-1/ack", "", "", form(url.Values{"comment": {"on it"}, "back": {"/alerts?pon=0/1/2"}}))
	if code != http.StatusSeeOther {
		t.Fatalf("ack = %d", code)
	}
	stream, _ := r.s.deps.JS.Stream(ctx, streams.StreamAlert)
	msg, err := stream.GetLastMsgForSubject(ctx, streams.SubjectAlert("olt-1", streams.AlertStateAcknowledged))
	if err != nil || msg.Header.Get("Nats-Msg-Id") != "ack:rx-1" || !strings.Contains(string(msg.Data), `"by":"otto"`) || !strings.Contains(string(msg.Data), "on it") {
		t.Errorf("ack event = %v %v", msg, err)
	}

	// Silence: the API's 400 at the field, then one created.
	code, body = r.do(op, "POST", "/silences", "", "", form(url.Values{"olt_id": {"olt-1"}, "duration": {"forever"}}))
	if code != http.StatusBadRequest || !strings.Contains(body, `id="error-duration"`) || !strings.Contains(body, `value="olt-1"`) {
		t.Errorf("bad silence = %d, want the error at duration", code)
	}
	code, body = r.do(op, "POST", "/silences", "", "", form(url.Values{"olt_id": {"olt-1"}, "pon": {"0/1/1"}, "duration": {"2h"}, "comment": {"splice"}}))
	if code != http.StatusSeeOther {
		t.Fatalf("silence = %d %s", code, body)
	}
	cfg, _ := r.s.deps.JS.Stream(ctx, streams.StreamConfig)
	info, err := cfg.Info(ctx, jetstream.WithSubjectFilter(streams.SubjectSilence("*")))
	if err != nil || len(info.State.Subjects) != 1 {
		t.Fatalf("silence events = %v %v, want 1", info, err)
	}
	// The list reads alert_silences (the projector's); delete goes
	// through the API.
	var sid string
	for s := range info.State.Subjects {
		sid = strings.TrimPrefix(s, "facho.config.silence.")
	}
	exec(`INSERT INTO alert_silences (id, olt_id, pon, starts_at, ends_at, created_by, comment, created_at, stream_seq)
		VALUES ($1, 'olt-1', '0/1/1', now(), now() + interval '2 hours', 'otto', 'splice', now(), 1)`, sid)
	if _, body := r.do(op, "GET", "/silences", "", "", ""); !strings.Contains(body, `data-silence="`+sid+`"`) || !strings.Contains(body, "splice") {
		t.Errorf("silences page without %s", sid)
	}
	if code, _ := r.do(op, "POST", "/silences/"+sid+"/delete", "", "", form(url.Values{})); code != http.StatusSeeOther {
		t.Errorf("delete silence = %d", code)
	}
	msg, err = cfg.GetLastMsgForSubject(ctx, streams.SubjectSilence(sid))
	if err != nil || !strings.Contains(string(msg.Data), streams.TypeSilenceDeleted) {
		t.Errorf("after delete: %v %v", msg, err)
	}

	// The OLT page's PON view: the outage PON is one red row.
	_, body = r.do(viewer, "GET", "/olts/olt-1", "", "", "")
	outage := regexp.MustCompile(`<tr class="pon outage" data-pon="0/1/1">.*?class="pon-total">4<.*?class="pon-online">0<.*?class="pon-down">4<`).MatchString(strings.ReplaceAll(body, "\n", " "))
	other := regexp.MustCompile(`<tr class="pon" data-pon="0/1/2">.*?class="pon-total">2<.*?class="pon-online">2<.*?class="pon-down">0<.*?onu_rx_low 2`).MatchString(strings.ReplaceAll(body, "\n", " "))
	if !outage || !other {
		t.Errorf("PON view: outage row %v, other row %v:\n%s", outage, other, body)
	}
	if n := strings.Count(body, `class="pon outage"`); n != 1 {
		t.Errorf("%d outage rows, want 1", n)
	}
}
