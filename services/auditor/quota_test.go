package auditor_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/natsauth"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/pkg/secret"
	"github.com/facho-olt/facho/services/auditor"
	"github.com/facho-olt/facho/streams"
)

// clock is the auditor's fake clock for the hourly rules.
type clock struct{ ns atomic.Int64 }

func (c *clock) set(t time.Time)  { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time   { return time.Unix(0, c.ns.Load()).UTC() }
func newClock(t time.Time) *clock { c := &clock{}; c.set(t); return c }
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitQuotaConsumers waits until both quota consumers (schedule and
// execution events) have applied their streams up to the last message.
func waitQuotaConsumers(ctx context.Context, t *testing.T, js jetstream.JetStream, db *pgxpool.Pool) {
	t.Helper()
	for _, c := range []struct{ stream, name string }{{streams.StreamSchedule, streams.ConsumerAuditorSchedule}, {streams.StreamExec, streams.ConsumerAuditorQuotaExec}} {
		s, err := js.Stream(ctx, c.stream)
		if err != nil {
			t.Fatal(err)
		}
		last := s.CachedInfo().State.LastSeq
		waitFor(t, c.name+" at the end of its stream", func() bool {
			seq, err := projection.Checkpoint(ctx, db, c.name)
			return err == nil && seq >= last
		})
	}
}

// receiver is a webhook endpoint that answers 500 to the first request of
// each notification and 200 to the others, and verifies every signature.
type receiver struct {
	secret string
	mu     sync.Mutex
	reqs   []received
}

type received struct {
	header   http.Header
	body     []byte
	sigError error
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, received{header: req.Header.Clone(), body: body,
		sigError: auditor.VerifySignature(r.secret, req.Header, body, time.Now(), 5*time.Minute)})
	first := true
	for _, prev := range r.reqs[:len(r.reqs)-1] {
		first = first && prev.header.Get(auditor.HeaderNotification) != req.Header.Get(auditor.HeaderNotification)
	}
	r.mu.Unlock()
	if first {
		http.Error(w, "not today", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// got returns the requests about notifications of olt.
func (r *receiver) got(olt string) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []received
	for _, q := range r.reqs {
		if strings.Contains(q.header.Get(auditor.HeaderNotification), ":"+olt+":") {
			out = append(out, q)
		}
	}
	return out
}

type trackerRow struct {
	required, completed, failed, skipped, pending int
	status                                        string
	checked                                       bool
}

func trackerOf(t *testing.T, db *pgxpool.Pool, olt, task string, start time.Time) (trackerRow, bool) {
	t.Helper()
	var r trackerRow
	err := db.QueryRow(context.Background(), `SELECT quota_required, quota_completed, quota_failed, quota_skipped, quota_pending, status, checked_at IS NOT NULL
		FROM quota_tracker WHERE olt_id = $1 AND task_type = $2 AND period_start = $3`, olt, task, start).
		Scan(&r.required, &r.completed, &r.failed, &r.skipped, &r.pending, &r.status, &r.checked)
	if err != nil {
		return r, false
	}
	return r, true
}

func nodeDue(exec, olt string, at time.Time) streams.NodeDue {
	return streams.NodeDue{ExecutionID: exec, NodeID: "discovery:" + olt, JobID: "discovery", JobName: "Discovery", OLTID: olt, Kind: streams.KindDiscovery,
		Target: streams.Target{Host: "127.0.0.1", Port: 161, CommunityEnc: "v1:x"}, OIDs: []streams.OIDSpec{{ID: "o", OID: "1.3.6", Field: "serial", Decoder: streams.Decoder{Kind: "string"}}},
		Priority: 90, IntervalSeconds: 900, ScheduledAt: at}
}

// An hour in which a 15-minute discovery ran 2 times out of 4 (one
// failure, one skipped run) is a HIGH quota violation (seed 002, scenario
// 2): a quota_violations row with its report, a QUOTA_VIOLATION
// coordinator log row, a notification on facho.notify.quota_violation.<olt>
// and a signed webhook delivery, refused once by the receiver and
// delivered on the retry. An OLT disabled mid-hour has its tracker
// INTERRUPTED and no violation, whether disabled by a configuration event
// or by the planner (OLT_DISABLED); the previous hour, in which the node
// first ran at :45, owed one run and is COMPLETED; three final failures in
// a row and an OLT_DISABLED audit event are notified too.
func TestHourBelowQuotaIsViolationNotifiedToWebhook(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage}, jstest.WithAuth())
	db := pgtest.New(t)
	ctx := context.Background()
	key, err := secret.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k, _ := secret.ParseKey(key)
	box, err := secret.NewBox(k)
	if err != nil {
		t.Fatal(err)
	}
	rcv := &receiver{secret: "webhook-secret-of-the-test"}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	sealed, err := box.Seal(rcv.secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO webhooks (id, url, secret_enc, events, enabled) VALUES ('ops', $1, $2, $3, true)`,
		srv.URL, sealed, []string{streams.NotifyQuotaViolation}); err != nil {
		t.Fatal(err)
	}

	h10 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	// Events are queued, then published in time order as they would be.
	type queued struct {
		subject string
		at      time.Time
		ev      streams.Event
	}
	var queue []queued
	pub := func(subject string, at time.Time, ev streams.Event) { queue = append(queue, queued{subject, at, ev}) }
	due := func(nd streams.NodeDue) { pub(streams.SubjectNodeDue(nd.OLTID), nd.ScheduledAt, nd) }
	started := func(exec, olt string, at time.Time) {
		pub(streams.SubjectExec(olt, streams.PhaseStarted), at, streams.ExecutionStarted{ExecutionID: exec, JobID: "discovery", OLTID: olt, PollerID: "p1", Attempt: 1, StartedAt: at})
	}
	succeeded := func(exec, olt string, at time.Time) {
		started(exec, olt, at)
		pub(streams.SubjectExec(olt, streams.PhaseSucceeded), at.Add(2*time.Second), streams.ExecutionSucceeded{ExecutionID: exec, JobID: "discovery", OLTID: olt, PollerID: "p1", Attempt: 1,
			StartedAt: at, FinishedAt: at.Add(2 * time.Second), DurationMS: 2000, Varbinds: 10, Batches: 1})
	}
	failed := func(exec, olt string, at time.Time) {
		started(exec, olt, at)
		pub(streams.SubjectExec(olt, streams.PhaseFailed), at.Add(time.Second), streams.ExecutionFailed{ExecutionID: exec, JobID: "discovery", OLTID: olt, PollerID: "p1", Attempt: 1,
			StartedAt: at, FinishedAt: at.Add(time.Second), DurationMS: 1000, Error: "request timeout"})
	}

	// olt-a: first run 09:45 (one owed in the 09:00 hour), then 10:00 ok,
	// 10:15 failed, 10:30 ok, 10:45 skipped. The execution events of 10:30
	// are projected before its NodeDue (another stream, published after
	// them): counted all the same.
	due(nodeDue("a0945", "olt-a", h10.Add(-15*time.Minute)))
	succeeded("a0945", "olt-a", h10.Add(-15*time.Minute))
	due(nodeDue("a1000", "olt-a", h10))
	succeeded("a1000", "olt-a", h10)
	due(nodeDue("a1015", "olt-a", h10.Add(15*time.Minute)))
	failed("a1015", "olt-a", h10.Add(15*time.Minute))
	succeeded("a1030", "olt-a", h10.Add(30*time.Minute))
	due(nodeDue("a1030", "olt-a", h10.Add(30*time.Minute)))
	due(nodeDue("a1045", "olt-a", h10.Add(45*time.Minute)))
	pub(streams.SubjectExec("olt-a", streams.PhaseSkipped), h10.Add(61*time.Minute), streams.ExecutionSkipped{ExecutionID: "a1045", JobID: "discovery", OLTID: "olt-a",
		PollerID: "p1", ScheduledAt: h10.Add(45 * time.Minute), SkippedAt: h10.Add(61 * time.Minute), Reason: "stale"})
	// olt-b: known since 09:30 (2 of 2 in the 09:00 hour), one run at
	// 10:00, disabled at 10:20.
	due(nodeDue("b0930", "olt-b", h10.Add(-30*time.Minute)))
	succeeded("b0930", "olt-b", h10.Add(-30*time.Minute))
	due(nodeDue("b0945", "olt-b", h10.Add(-15*time.Minute)))
	succeeded("b0945", "olt-b", h10.Add(-15*time.Minute))
	due(nodeDue("b1000", "olt-b", h10))
	succeeded("b1000", "olt-b", h10)
	pub(streams.SubjectOLT("olt-b"), h10.Add(20*time.Minute), streams.OLTUpserted{ID: "olt-b", Name: "b", IP: "192.0.2.2", Port: 161, BrandID: "huawei", CommunityEnc: "v1:x", Enabled: false})
	// olt-c: three final failures in a row (and a CRITICAL violation: 0
	// of 4).
	for i, at := range []time.Duration{0, 15 * time.Minute, 30 * time.Minute} {
		exec := []string{"c1", "c2", "c3"}[i]
		due(nodeDue(exec, "olt-c", h10.Add(at)))
		failed(exec, "olt-c", h10.Add(at))
	}
	// olt-d: one run, then disabled by the planner (an audit event, no
	// configuration event): its hour is INTERRUPTED too.
	due(nodeDue("d1000", "olt-d", h10))
	succeeded("d1000", "olt-d", h10)
	pub(streams.SubjectAudit("planner"), h10.Add(40*time.Minute), streams.AuditEvent{OLTID: "olt-d", Kind: streams.AuditOLTDisabled, Level: streams.LevelCritical,
		Message: "OLT disabled after 3 consecutive failures", Details: map[string]any{"reason": "3 consecutive failures", "community": "public"}})
	// olt-e: re-enabled by the availability service's recovery probes.
	pub(streams.SubjectAudit(streams.AuditCategoryAvailability), h10.Add(45*time.Minute), streams.AuditEvent{OLTID: "olt-e", Kind: streams.AuditOLTEnabled, Level: streams.LevelInfo,
		Message: "OLT olt-e enabled again: answered 3 consecutive probes after its auto-disable", Details: map[string]any{"automatic": true, "probes": 3}})

	sort.SliceStable(queue, func(i, j int) bool { return queue[i].at.Before(queue[j].at) })
	for _, q := range queue {
		if q.ev.EventType() == streams.TypeNodeDue && q.ev.(streams.NodeDue).ExecutionID == "a1030" {
			continue
		}
		publish(t, env.JS, q.subject, q.at, q.ev)
	}
	publish(t, env.JS, streams.SubjectNodeDue("olt-a"), h10.Add(30*time.Minute), nodeDue("a1030", "olt-a", h10.Add(30*time.Minute)))

	clk := newClock(h10.Add(50 * time.Minute))
	_, js := env.Connect(t, natsauth.Auditor)
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cfg := auditor.Config{LogFile: "-", FetchWait: 100 * time.Millisecond, NackDelay: 200 * time.Millisecond,
			Quota:  auditor.QuotaConfig{CheckEvery: 50 * time.Millisecond},
			Notify: auditor.NotifyConfig{Backoff: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, MaxAttempts: 3, PublishEvery: 50 * time.Millisecond, DeliverEvery: 50 * time.Millisecond},
		}
		if err := auditor.Run(runCtx, cfg, auditor.Deps{JS: js, DB: db, Log: zerolog.Nop(), Registry: prometheus.NewRegistry(), Now: clk.now, Box: box}); err != nil {
			t.Errorf("auditor.Run: %v", err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	// Every event is in the trackers; the 10:00 hour is open (IN_PROGRESS,
	// no violation), the 09:00 hour was closed at once (its end + 5m
	// grace is before the clock).
	waitFor(t, "olt-a's 10:00 tracker", func() bool {
		r, ok := trackerOf(t, db, "olt-a", "discovery", h10)
		return ok && r.completed == 2 && r.failed == 1 && r.skipped == 1
	})
	if r, _ := trackerOf(t, db, "olt-a", "discovery", h10); r != (trackerRow{required: 4, completed: 2, failed: 1, skipped: 1, status: auditor.QuotaInProgress}) {
		t.Errorf("olt-a 10:00 before the check = %+v", r)
	}
	waitFor(t, "olt-a's 09:00 tracker checked", func() bool { r, _ := trackerOf(t, db, "olt-a", "discovery", h10.Add(-time.Hour)); return r.checked })
	if r, _ := trackerOf(t, db, "olt-a", "discovery", h10.Add(-time.Hour)); r.required != 1 || r.completed != 1 || r.status != auditor.QuotaCompleted {
		t.Errorf("olt-a 09:00 = %+v, want 1 of 1 COMPLETED", r)
	}
	waitFor(t, "olt-b's tracker interrupted", func() bool {
		r, _ := trackerOf(t, db, "olt-b", "discovery", h10)
		return r.status == auditor.QuotaInterrupted
	})
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM quota_violations`).Scan(&n); err != nil || n != 0 {
		rs, _ := db.Query(ctx, `SELECT olt_id, task_type, period_start::text, report::text FROM quota_violations`)
		for rs.Next() {
			var a, b, c, d string
			_ = rs.Scan(&a, &b, &c, &d)
			t.Log(a, b, c, d)
		}
		t.Fatalf("violations before the end of the hour: %d, %v", n, err)
	}

	// 11:05 is the end of the hour plus the grace: the check closes it.
	clk.set(h10.Add(65 * time.Minute))
	waitFor(t, "the deliveries delivered", func() bool {
		var delivered int
		_ = db.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'`).Scan(&delivered)
		return delivered == 2
	})
	if r, _ := trackerOf(t, db, "olt-a", "discovery", h10); r.status != auditor.QuotaNotMet || !r.checked {
		t.Errorf("olt-a 10:00 after the check = %+v", r)
	}
	for _, olt := range []string{"olt-b", "olt-d"} {
		if r, _ := trackerOf(t, db, olt, "discovery", h10); r.status != auditor.QuotaInterrupted || !r.checked {
			t.Errorf("%s 10:00 after the check = %+v, want INTERRUPTED", olt, r)
		}
	}

	// One violation, HIGH (2 of 4 = 50 %), with its report, notified
	// (projected from its notification).
	waitFor(t, "the violations projected", func() bool {
		_ = db.QueryRow(ctx, `SELECT count(*) FROM quota_violations`).Scan(&n)
		return n == 2
	})
	var (
		olt, task, severity string
		compliance          float64
		report              map[string]any
		notified            bool
		notifiedAt          *time.Time
	)
	if err := db.QueryRow(ctx, `SELECT olt_id, task_type, severity, compliance, report, notified, notified_at FROM quota_violations WHERE olt_id = 'olt-a'`).
		Scan(&olt, &task, &severity, &compliance, &report, &notified, &notifiedAt); err != nil {
		t.Fatal(err)
	}
	if olt != "olt-a" || task != "discovery" || severity != auditor.SeverityHigh || compliance != 0.5 {
		t.Errorf("violation %s/%s %s %g, want olt-a/discovery HIGH 0.5", olt, task, severity, compliance)
	}
	if report["quota_required"] != float64(4) || report["quota_completed"] != float64(2) || report["quota_failed"] != float64(1) || report["quota_skipped"] != float64(1) {
		t.Errorf("report %v", report)
	}
	var sevC string
	if err := db.QueryRow(ctx, `SELECT count(*), min(severity) FILTER (WHERE olt_id = 'olt-c') FROM quota_violations`).Scan(&n, &sevC); err != nil || n != 2 || sevC != auditor.SeverityCritical {
		t.Errorf("%d violations, olt-c's %q; want 2, CRITICAL (%v)", n, sevC, err)
	}
	waitFor(t, "the violations marked notified", func() bool {
		_ = db.QueryRow(ctx, `SELECT count(*) FROM quota_violations WHERE notified AND notified_at IS NOT NULL`).Scan(&n)
		return n == 2
	})

	// The receiver got it twice: refused, then delivered; signed, the same
	// notification both times.
	got := rcv.got("olt-a")
	if len(got) != 2 {
		t.Fatalf("receiver got %d requests, want 2", len(got))
	}
	for i, g := range got {
		if g.sigError != nil {
			t.Errorf("request %d: %v", i+1, g.sigError)
		}
		if g.header.Get(auditor.HeaderEvent) != streams.NotifyQuotaViolation || g.header.Get(auditor.HeaderAttempt) != []string{"1", "2"}[i] {
			t.Errorf("request %d headers %v", i+1, g.header)
		}
	}
	if got[0].header.Get(auditor.HeaderNotification) != got[1].header.Get(auditor.HeaderNotification) || string(got[0].body) != string(got[1].body) {
		t.Errorf("the retry is not the same notification")
	}
	_, note, err := streams.Decode[streams.Notification](got[1].body)
	if err != nil || note.Kind != streams.NotifyQuotaViolation || note.OLTID != "olt-a" || note.Severity != auditor.SeverityHigh {
		t.Errorf("webhook body %+v, %v", note, err)
	}
	// A forged signature does not verify.
	if err := auditor.VerifySignature("another secret", got[1].header, got[1].body, time.Now(), 5*time.Minute); err == nil {
		t.Error("a wrong secret verifies")
	}
	var attempts int
	var lastErr string
	if err := db.QueryRow(ctx, `SELECT attempts, last_error FROM webhook_deliveries WHERE notification_id LIKE '%:olt-a:%'`).Scan(&attempts, &lastErr); err != nil || attempts != 2 || lastErr != "" {
		t.Errorf("delivery attempts %d, last error %q (%v), want 2 and none", attempts, lastErr, err)
	}
	if c := rcv.got("olt-c"); len(c) != 2 {
		t.Errorf("olt-c's violation was received %d times, want 2", len(c))
	}

	// The QUOTA_VIOLATION coordinator log row (through facho.audit.quota).
	waitFor(t, "the QUOTA_VIOLATION log row", func() bool {
		for _, r := range rows(t, db) {
			if r.typ == streams.AuditQuotaViolation && r.olt == "olt-a" && r.level == streams.LevelCritical && strings.Contains(r.msg, "[HIGH]") {
				return true
			}
		}
		return false
	})

	// Operators' subjects: the violation, the failure streak of olt-c, the
	// disabled olt-d (its details sanitized).
	notify, err := env.JS.Stream(ctx, streams.StreamNotify)
	if err != nil {
		t.Fatal(err)
	}
	for _, subject := range []string{
		streams.SubjectNotify(streams.NotifyQuotaViolation, "olt-a"),
		streams.SubjectNotify(streams.NotifyRepeatedFailures, "olt-c"),
		streams.SubjectNotify(streams.NotifyOLTDisabled, "olt-d"),
		streams.SubjectNotify(streams.NotifyOLTEnabled, "olt-e"),
	} {
		var msg *jetstream.RawStreamMsg
		waitFor(t, subject, func() bool { msg, err = notify.GetLastMsgForSubject(ctx, subject); return err == nil })
		if _, _, err := streams.DecodeOn[streams.Notification](subject, msg.Data); err != nil {
			t.Errorf("%s: %v", subject, err)
		}
		if strings.Contains(string(msg.Data), "public") {
			t.Errorf("%s carries a secret: %s", subject, msg.Data)
		}
	}
	info, err := notify.Info(ctx)
	if err != nil || info.State.Msgs != 5 {
		t.Errorf("FACHO_NOTIFY holds %d messages, want 5 (%v)", info.State.Msgs, err)
	}
	b, _ := json.Marshal(report)
	if strings.Contains(string(b), rcv.secret) {
		t.Error("secret in the report")
	}

	// Retention: the trackers of hours before 11:00 and their executions
	// go; the violations stay.
	cancel()
	wg.Wait()
	if n, err := auditor.CleanupQuotas(ctx, db, h10.Add(time.Hour)); err != nil || n == 0 {
		t.Errorf("CleanupQuotas = %d, %v", n, err)
	}
	var left, violations int
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM quota_tracker) + (SELECT count(*) FROM quota_executions), (SELECT count(*) FROM quota_violations)`).Scan(&left, &violations); err != nil || left != 0 || violations != 2 {
		t.Errorf("after cleanup: %d trackers and executions, %d violations (%v); want 0, 2", left, violations, err)
	}
}

// The trackers are a projection: replaying the schedule and execution
// streams from the start (checkpoints reset, consumers recreated) gives
// the same rows, and an execution's retries count once.
func TestQuotaTrackersReplayToTheSameRows(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	h10 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for i := range 12 {
		at := h10.Add(time.Duration(i) * 5 * time.Minute)
		exec := "x" + strconv.Itoa(i)
		nd := nodeDue(exec, "olt-a", at)
		nd.IntervalSeconds = 300
		publish(t, env.JS, streams.SubjectNodeDue("olt-a"), at, nd)
		publish(t, env.JS, streams.SubjectExec("olt-a", streams.PhaseStarted), at, streams.ExecutionStarted{ExecutionID: exec, JobID: "discovery", OLTID: "olt-a", Attempt: 1, StartedAt: at})
		if i%4 == 0 {
			// A failed first attempt, then a retry that succeeds.
			publish(t, env.JS, streams.SubjectExec("olt-a", streams.PhaseFailed), at.Add(time.Second), streams.ExecutionFailed{ExecutionID: exec, JobID: "discovery", OLTID: "olt-a", Attempt: 1, DurationMS: 1000, Error: "timeout", Retryable: true})
			publish(t, env.JS, streams.SubjectExec("olt-a", streams.PhaseStarted), at.Add(time.Minute), streams.ExecutionStarted{ExecutionID: exec, JobID: "discovery", OLTID: "olt-a", Attempt: 2, StartedAt: at.Add(time.Minute)})
			publish(t, env.JS, streams.SubjectExec("olt-a", streams.PhaseSucceeded), at.Add(time.Minute+time.Second), streams.ExecutionSucceeded{ExecutionID: exec, JobID: "discovery", OLTID: "olt-a", Attempt: 2, DurationMS: 1000})
		} else if i%4 == 1 {
			publish(t, env.JS, streams.SubjectExec("olt-a", streams.PhaseSucceeded), at.Add(3*time.Second), streams.ExecutionSucceeded{ExecutionID: exec, JobID: "discovery", OLTID: "olt-a", Attempt: 1, DurationMS: 3000})
		}
		// The others stay running.
	}
	run := func() {
		stop := startAuditor(t, env.JS, db, auditor.Config{LogFile: "-"}, func() time.Time { return h10.Add(30 * time.Minute) })
		defer stop()
		waitQuotaConsumers(ctx, t, env.JS, db)
	}
	snapshot := func() string {
		var s string
		if err := db.QueryRow(ctx, `SELECT string_agg(concat_ws(',', olt_id, task_type, period_start, quota_required, quota_completed, quota_failed,
			quota_skipped, quota_pending, total_duration_ms, avg_duration_ms, status), ';' ORDER BY olt_id, task_type, period_start) FROM quota_tracker`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	run()
	first := snapshot()
	r, _ := trackerOf(t, db, "olt-a", "discovery", h10)
	if r != (trackerRow{required: 12, completed: 6, pending: 6, status: auditor.QuotaInProgress}) {
		t.Fatalf("tracker %+v, want 6 of 12 completed, 6 pending", r)
	}
	for _, c := range []struct{ stream, name string }{{streams.StreamSchedule, streams.ConsumerAuditorSchedule}, {streams.StreamExec, streams.ConsumerAuditorQuotaExec}} {
		if err := env.JS.DeleteConsumer(ctx, c.stream, c.name); err != nil {
			t.Fatal(err)
		}
		if err := projection.Reset(ctx, db, c.name, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := streams.Provision(ctx, env.JS, streams.Options{Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	run()
	if again := snapshot(); again != first {
		t.Errorf("after a replay:\n%s\nwant\n%s", again, first)
	}
}

// The quotas and the violations rebuild from the streams to the live rows
// (the check's verdicts aside), and a lost tracker comes back.
func TestRebuildQuotasAndViolations(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	h10 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for i := range 8 {
		at := h10.Add(time.Duration(i) * 15 * time.Minute)
		olt := []string{"olt-a", "olt-b"}[i%2]
		exec := "r" + strconv.Itoa(i)
		publish(t, env.JS, streams.SubjectNodeDue(olt), at, nodeDue(exec, olt, at))
		if i%3 != 0 {
			publish(t, env.JS, streams.SubjectExec(olt, streams.PhaseSucceeded), at.Add(time.Second), streams.ExecutionSucceeded{ExecutionID: exec, JobID: "discovery", OLTID: olt, Attempt: 1, DurationMS: 900 + int64(i)})
		} else {
			publish(t, env.JS, streams.SubjectExec(olt, streams.PhaseFailed), at.Add(time.Second), streams.ExecutionFailed{ExecutionID: exec, JobID: "discovery", OLTID: olt, Attempt: 1, DurationMS: 500, Error: "timeout"})
		}
	}
	publish(t, env.JS, streams.SubjectOLT("olt-b"), h10.Add(100*time.Minute), streams.OLTDeleted{ID: "olt-b"})
	stop := startAuditor(t, env.JS, db, auditor.Config{LogFile: "-", Quota: auditor.QuotaConfig{CheckEvery: 50 * time.Millisecond}}, func() time.Time { return h10.Add(3 * time.Hour) })
	waitFor(t, "the violations", func() bool {
		var n int
		_ = db.QueryRow(ctx, `SELECT count(*) FROM quota_violations`).Scan(&n)
		// olt-a 10:00 (1 of 4), olt-b 10:00 (first run 10:15: 1 of 3),
		// olt-a 11:00 (1 of 4); olt-b 11:00 was interrupted.
		return n == 3
	})
	stop()
	models, err := auditor.ReadModels(auditor.Config{}, zerolog.Nop(), func() time.Time { return h10.Add(3 * time.Hour) })
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]projection.ReadModel{}
	for _, m := range models {
		byName[m.Name] = m
	}
	rebuild := func(name string, dry bool) replay.Report {
		t.Helper()
		rep, err := replay.Rebuild(ctx, env.JS, db, byName[name], replay.RebuildOptions{DryRun: dry, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(rep.String())
		return rep
	}
	for _, name := range []string{auditor.ReadModelQuotas, auditor.ReadModelViolations, auditor.ReadModelCoordinatorLogs} {
		if rep := rebuild(name, true); !rep.Identical {
			t.Errorf("%s rebuilt differs from live: %s", name, rep.String())
		}
	}
	if _, err := db.Exec(ctx, `DELETE FROM quota_tracker WHERE olt_id = 'olt-a' AND period_start = $1`, h10.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if rep := rebuild(auditor.ReadModelQuotas, false); !rep.Swapped {
		t.Fatalf("lost tracker not swapped back: %s", rep.String())
	}
	if r, ok := trackerOf(t, db, "olt-a", "discovery", h10.Add(time.Hour)); !ok || r.required != 4 {
		t.Errorf("tracker after the rebuild: %+v, %v", r, ok)
	}
	var notifications int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM notifications`).Scan(&notifications); err != nil || notifications != 3 {
		t.Errorf("notifications after the rebuilds: %d (%v), want the 3 violations' only", notifications, err)
	}
}
