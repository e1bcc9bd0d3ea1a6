package auditor_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/auditor"
	"github.com/facho-olt/facho/streams"
)

// An OLT_DISABLED audit event is notified once: the auditor restarted
// after the notification was delivered, with the same audit event
// published again after the stream's duplicate window (what a restarted
// planner did with the configuration event it replayed last), sends
// nothing more; a new disable is still notified.
func TestOLTDisabledNotifiedOnceAcrossRestarts(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	key, _ := secret.NewKey()
	k, _ := secret.ParseKey(key)
	box, err := secret.NewBox(k)
	if err != nil {
		t.Fatal(err)
	}
	const whSecret = "webhook-secret-of-the-test"
	var mu sync.Mutex
	got := map[string]int{} // OLT -> requests
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := auditor.VerifySignature(whSecret, r.Header, body, time.Now(), time.Minute); err != nil {
			t.Errorf("webhook: %v", err)
		}
		env, err := streams.DecodeEnvelope(body)
		if err != nil {
			t.Errorf("webhook body: %v", err)
		}
		var n streams.Notification
		_ = streams.DecodeData(env, &n)
		mu.Lock()
		got[n.OLTID]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	sealed, err := box.Seal(whSecret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO webhooks (id, url, secret_enc, events, enabled) VALUES ('ops', $1, $2, $3, true)`,
		srv.URL, sealed, []string{streams.NotifyOLTDisabled}); err != nil {
		t.Fatal(err)
	}
	requests := func(olt string) int {
		mu.Lock()
		defer mu.Unlock()
		return got[olt]
	}
	run := func() (stop func()) {
		rctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := auditor.Config{LogFile: "-", FetchWait: 100 * time.Millisecond, NackDelay: 200 * time.Millisecond,
				Notify: auditor.NotifyConfig{Backoff: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, MaxAttempts: 3,
					PublishEvery: 50 * time.Millisecond, DeliverEvery: 50 * time.Millisecond}}
			if err := auditor.Run(rctx, cfg, auditor.Deps{JS: env.JS, DB: db, Log: zerolog.Nop(), Registry: prometheus.NewRegistry(), Box: box}); err != nil {
				t.Errorf("auditor.Run: %v", err)
			}
		}()
		return func() { cancel(); wg.Wait() }
	}
	// disabled publishes the planner's audit of a disable by
	// configuration: its id derives from the configuration event's
	// sequence. Published without Nats-Msg-Id: as after the duplicate
	// window, JetStream stores every copy.
	disabled := func(olt string, configSeq int) uint64 {
		t.Helper()
		id := streams.MsgID("audit", "planner", streams.AuditOLTDisabled, olt, configSeq)
		b, err := streams.EncodeWithID(id, "planner", time.Now(), streams.AuditEvent{OLTID: olt, Kind: streams.AuditOLTDisabled,
			Level: streams.LevelWarning, Message: "OLT " + olt + " disabled by configuration"})
		if err != nil {
			t.Fatal(err)
		}
		ack, err := env.JS.Publish(ctx, streams.SubjectAudit("planner"), b)
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	notifications := func() int {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE kind = $1`, streams.NotifyOLTDisabled).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	stop := run()
	disabled("olt-d", 7)
	waitFor(t, "the olt_disabled webhook", func() bool { return requests("olt-d") == 1 })
	stop()

	// Restarted: the same audit again, then a new disable of another OLT
	// (and of olt-d at a later configuration event), each notified once.
	dup := disabled("olt-d", 7)
	stop = run()
	defer stop()
	waitFor(t, "the audit consumer past the copy", func() bool {
		rs := rows(t, db)
		return len(rs) >= 2 && uint64(rs[len(rs)-1].seq) >= dup
	})
	disabled("olt-e", 9)
	disabled("olt-d", 12)
	waitFor(t, "the later disables' webhooks", func() bool { return requests("olt-e") == 1 && requests("olt-d") >= 2 })
	if n := requests("olt-d"); n != 2 {
		t.Errorf("olt-d notified %d times, want 2 (its first disable once, its second once)", n)
	}
	if n := notifications(); n != 3 {
		t.Errorf("%d olt_disabled notifications, want 3", n)
	}
	// On the notify stream: one message per notification.
	s, err := env.JS.Stream(ctx, streams.StreamNotify)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(streams.SubjectNotify(streams.NotifyOLTDisabled, "olt-d")))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects[streams.SubjectNotify(streams.NotifyOLTDisabled, "olt-d")]; n != 2 {
		t.Errorf("%d olt_disabled notifications of olt-d on the notify stream, want 2", n)
	}
}

// Silences of alerts share FACHO_CONFIG: the auditor's configuration
// consumer (filtered on OLT subjects) goes past them without an error or
// a dead letter.
func TestAuditorIgnoresSilences(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	now := time.Now().UTC()
	publish(t, env.JS, streams.SubjectSilence("s1"), now, streams.SilenceUpserted{ID: "s1", OLTID: "olt-1", StartsAt: now, EndsAt: now.Add(time.Hour), CreatedBy: "ana", CreatedAt: now})
	publish(t, env.JS, streams.SubjectSilence("s1"), now, streams.SilenceDeleted{ID: "s1"})
	publish(t, env.JS, streams.SubjectOLT("olt-1"), now, streams.OLTUpserted{ID: "olt-1", Name: "A", IP: "10.0.0.1", Port: 161, BrandID: "huawei", Enabled: true})
	stop := startAuditor(t, env.JS, db, auditor.Config{LogFile: "-"}, nil)
	defer stop()
	waitFor(t, "the auditor's config consumer past the silences", func() bool {
		seq, err := projection.Checkpoint(ctx, db, streams.ConsumerAuditorConfig)
		return err == nil && seq >= 3
	})
	s, err := env.JS.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Errorf("%d dead letters, want 0", info.State.Msgs)
	}
}
