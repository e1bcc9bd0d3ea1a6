package alerter_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/alerter"
	"github.com/facho-olt/facho/services/auditor"
	"github.com/facho-olt/facho/streams"
)

func publish(t testing.TB, js jetstream.JetStream, subject string, at time.Time, ev streams.Event) {
	t.Helper()
	b, err := streams.Encode("test", at, ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), subject, b); err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
}

func fp(v float64) *float64 { return &v }

// onu publishes an onu.changed of olt-1 as the projector does.
func onu(t testing.TB, js jetstream.JetStream, pon, id int64, status string, rx *float64, at time.Time) {
	t.Helper()
	ev := streams.ONUChanged{OLTID: "olt-1", PonIndex: pon, ONUID: id, Change: streams.ONUStatusChanged,
		Current:     streams.ONUState{Serial: fmt.Sprintf("HWTC%04d%04d", pon, id), Description: fmt.Sprintf("cliente %d-%d", pon, id), Status: status, RxPowerDBm: rx, PortName: fmt.Sprintf("0/1/%d", pon)},
		ExecutionID: "e1", ObservedAt: at}
	publish(t, js, streams.SubjectONU("olt-1", streams.ONUStatusChanged), at, ev)
}

type running struct {
	stop func()
	reg  *prometheus.Registry
}

func startAlerter(t testing.TB, js jetstream.JetStream, db *pgxpool.Pool, box *secret.Box, amURL string) running {
	return startAlerterWith(t, js, db, box, amURL, prometheus.NewRegistry())
}

func startAlerterWith(t testing.TB, js jetstream.JetStream, db *pgxpool.Pool, box *secret.Box, amURL string, reg *prometheus.Registry) running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hold := 500 * time.Millisecond
	cfg := alerter.Config{
		AlertmanagerURLs: alerter.ParseURLs(amURL), ResendInterval: time.Second, Tick: 50 * time.Millisecond,
		FetchWait: 100 * time.Millisecond, NackDelay: 200 * time.Millisecond, Backoff: 100 * time.Millisecond, LeaderRetry: 100 * time.Millisecond,
		Rules: alerter.Rules{Global: alerter.Override{ONUDownHold: &hold}},
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := alerter.Run(ctx, cfg, alerter.Deps{JS: js, DB: db, Log: testLog(), Registry: reg, Box: box}); err != nil {
			t.Errorf("alerter.Run: %v", err)
		}
	}()
	stop := func() { cancel(); wg.Wait() }
	t.Cleanup(stop) // before the database closes, if the test ends early
	return running{stop: stop, reg: reg}
}

func waitFor(t testing.TB, what string, d time.Duration, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// amAlerts counts, per "alertname/status/pon/onu_id", the alerts
// Alertmanager's webhook receiver got.
func (r *receiver) amAlerts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]int{}
	for _, n := range r.am {
		for _, a := range n.Alerts {
			m[a.Labels["alertname"]+"/"+a.Status+"/"+a.Labels["pon"]+"/"+a.Labels["onu_id"]]++
		}
	}
	return m
}

func (r *receiver) fachoByID() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]int{}
	for _, d := range r.facho {
		m[d.ID]++
	}
	return m
}

// End to end: a fiber cut of 16 ONUs, a single ONU offline, an ONU at
// -31.5 dBm, one drifting -4 dB below its 7-day baseline and one flapping,
// through real JetStream (the alerter with its own NATS identity), real
// Postgres and a real Alertmanager whose webhook receiver is this test;
// the alerter is restarted in the middle. Each receiver gets each alert
// once; the fiber cut is one PON incident; the alerts read model rebuilds
// to the same rows.
func TestEndToEnd(t *testing.T) {
	rcv := newReceiver(t)
	amURL := startAlertmanager(t, rcv)
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	_, ajs := env.Connect(t, natsauth.Alerter)
	db := pgtest.New(t)
	ctx := context.Background()
	key, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := secret.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.NewBox(raw)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := box.Seal("a-webhook-secret-0123")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO webhooks (id, url, secret_enc, events, enabled) VALUES ('noc', $1, $2, $3, true)`,
		rcv.srv.URL+"/facho", sealed, []string{streams.NotifyAlertFiring, streams.NotifyAlertResolved}); err != nil {
		t.Fatal(err)
	}

	now := time.Now().UTC()
	publish(t, env.JS, streams.SubjectOLT("olt-1"), now, streams.OLTUpserted{ID: "olt-1", Name: "Norte", IP: "192.0.2.1", Port: 161, BrandID: "huawei", CommunityEnc: "x", Enabled: true})
	// PON 1: 16 ONUs; PON 2: 8 ONUs; ONU 2/5 with a week of readings
	// around -19 dBm.
	for i := int64(1); i <= 16; i++ {
		onu(t, env.JS, 1, i, "ONLINE", fp(-20), now)
	}
	for d := 7; d >= 1; d-- {
		onu(t, env.JS, 2, 5, "ONLINE", fp(-19), now.Add(-time.Duration(d)*24*time.Hour))
	}
	for i := int64(1); i <= 8; i++ {
		onu(t, env.JS, 2, i, "ONLINE", fp(-19), now)
	}
	run := startAlerter(t, ajs, db, box, amURL)

	at := time.Now().UTC()
	for i := int64(1); i <= 16; i++ { // the fiber cut
		onu(t, env.JS, 1, i, "LOS", nil, at)
	}
	onu(t, env.JS, 2, 1, "OFFLINE", nil, at)      // one ONU offline
	onu(t, env.JS, 2, 2, "ONLINE", fp(-31.5), at) // weak signal
	onu(t, env.JS, 2, 5, "ONLINE", fp(-23), at)   // drift of -4 dB
	for i := 0; i < 6; i++ {                      // flapping
		onu(t, env.JS, 2, 7, "OFFLINE", nil, at.Add(time.Duration(2*i)*time.Millisecond))
		onu(t, env.JS, 2, 7, "ONLINE", fp(-19), at.Add(time.Duration(2*i+1)*time.Millisecond))
	}

	firing := map[string]int{
		"pon_outage/firing/0/1/1/": 1, "onu_down/firing/0/1/2/1": 1, "onu_rx_low/firing/0/1/2/2": 1,
		"onu_rx_drift/firing/0/1/2/5": 1, "onu_flapping/firing/0/1/2/7": 1,
	}
	waitFor(t, "the five alerts in Alertmanager's receiver", 30*time.Second, func() bool { return len(rcv.amAlerts()) >= len(firing) })
	// The PON gauges while the PON is cut.
	if v := gauge(t, run.reg, "facho_pon_onus", map[string]string{"olt_id": "olt-1", "pon": "0/1/1", "state": "down"}); v != 16 {
		t.Errorf("facho_pon_onus down of the cut PON = %g, want 16", v)
	}

	// A second replica starts (standing by: one holds the lock), then the
	// first one stops in the middle: the second takes over, and nothing
	// is sent twice.
	second := startAlerter(t, ajs, db, box, amURL)
	time.Sleep(500 * time.Millisecond)
	run.stop()
	run = second
	time.Sleep(2 * time.Second) // a re-send period of the new replica
	// The incident's summary follows the outage: half the PON back, the
	// read model's row says 8 of 16 (an alert.updated, not notified).
	waitFor(t, "the incident row at 16 of 16", 30*time.Second, func() bool {
		return strings.Contains(incidentSummary(t, db), "PON 0/1/1 of OLT ") && strings.HasSuffix(incidentSummary(t, db), ": 16 of 16 ONUs down (probable fiber cut)")
	})
	back := time.Now().UTC()
	for i := int64(1); i <= 8; i++ {
		onu(t, env.JS, 1, i, "ONLINE", fp(-20), back)
	}
	waitFor(t, "the incident row at 8 of 16", 30*time.Second, func() bool {
		return strings.HasSuffix(incidentSummary(t, db), ": 8 of 16 ONUs down (probable fiber cut)")
	})
	for i := int64(9); i <= 16; i++ {
		onu(t, env.JS, 1, i, "ONLINE", fp(-20), back)
	}
	onu(t, env.JS, 2, 1, "ONLINE", fp(-19), back)
	want := map[string]int{"pon_outage/resolved/0/1/1/": 1, "onu_down/resolved/0/1/2/1": 1}
	for k, v := range firing {
		want[k] = v
	}
	waitFor(t, "the resolutions in Alertmanager's receiver", 30*time.Second, func() bool { return len(rcv.amAlerts()) >= len(want) })
	waitFor(t, "7 webhook deliveries", 30*time.Second, func() bool { return len(rcv.fachoByID()) >= 7 })
	time.Sleep(2 * time.Second) // room for a duplicate to show
	run.stop()

	if got := rcv.amAlerts(); !equalCounts(got, want) {
		t.Errorf("alertmanager receiver got %v, want %v", got, want)
	}
	byID := rcv.fachoByID()
	if len(byID) != 7 {
		t.Errorf("webhook got %d distinct alert events, want 7: %v", len(byID), byID)
	}
	for id, n := range byID {
		if n != 1 {
			t.Errorf("webhook got %s %d times", id, n)
		}
	}
	checkSignature(t, rcv, "a-webhook-secret-0123")

	// The read model: 21 rows (16 inhibited under the incident).
	var total, inhibited, underIncident int
	if err := db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE inhibited),
		count(*) FILTER (WHERE incident_id = (SELECT id FROM alerts WHERE rule = 'pon_outage') AND rule = 'onu_down') FROM alerts`).Scan(&total, &inhibited, &underIncident); err != nil {
		t.Fatal(err)
	}
	if total != 21 || inhibited != 16 || underIncident != 16 {
		t.Errorf("alerts: %d rows, %d inhibited, %d under the incident; want 21, 16, 16", total, inhibited, underIncident)
	}
	var incidents, covered int
	var st string
	_ = db.QueryRow(ctx, `SELECT string_agg(rule || ' ' || state || ' ' || coalesce(pon, '') || ' ' || coalesce(onu_id::text, ''), '; ') FROM alerts WHERE NOT inhibited`).Scan(&st)
	t.Logf("alerts: %s", st)
	if err := db.QueryRow(ctx, `SELECT count(*), coalesce(max(alerts), 0) FROM incidents WHERE state = 'resolved'`).Scan(&incidents, &covered); err != nil {
		t.Fatal(err)
	}
	if incidents != 1 || covered != 16 {
		t.Errorf("incidents: %d resolved covering %d alerts, want 1 covering 16", incidents, covered)
	}
	rep, err := replay.Rebuild(ctx, env.JS, db, alerter.ReadModels()[0], replay.RebuildOptions{DryRun: true, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Identical {
		t.Errorf("rebuild of alerts differs from live: %s", rep.String())
	}
}

// incidentSummary is the summary of the pon_outage row of the alerts
// read model ("" none yet).
func incidentSummary(t testing.TB, db *pgxpool.Pool) string {
	t.Helper()
	var s string
	_ = db.QueryRow(context.Background(), `SELECT summary FROM alerts WHERE rule = 'pon_outage'`).Scan(&s)
	return s
}

// checkSignature verifies every webhook delivery's HMAC signature as a
// receiver would, and that its body is the alert event its headers name.
func checkSignature(t *testing.T, rcv *receiver, secretText string) {
	t.Helper()
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, d := range rcv.facho {
		if err := auditor.VerifySignature(secretText, d.Header, d.Body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("webhook delivery %s: %v", d.ID, err)
		}
		env, err := streams.DecodeEnvelope(d.Body)
		if err != nil || env.Type != d.Event || env.ID != d.ID {
			t.Errorf("webhook delivery %s: envelope %+v (%v), event header %q", d.ID, env, err, d.Event)
		}
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

func gauge(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}
