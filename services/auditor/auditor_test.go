package auditor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	"github.com/facho-olt/facho/services/auditor"
	"github.com/facho-olt/facho/streams"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func publish(t *testing.T, js jetstream.JetStream, subject string, at time.Time, ev streams.Event) {
	t.Helper()
	b, err := streams.Encode("test", at, ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), subject, b); err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
}

func startAuditor(t *testing.T, js jetstream.JetStream, db *pgxpool.Pool, cfg auditor.Config, now func() time.Time) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cfg.FetchWait = 100 * time.Millisecond
		cfg.NackDelay = 200 * time.Millisecond
		if err := auditor.Run(ctx, cfg, auditor.Deps{JS: js, DB: db, Log: zerolog.Nop(), Registry: prometheus.NewRegistry(), Now: now}); err != nil {
			t.Errorf("auditor.Run: %v", err)
		}
	}()
	return func() { cancel(); wg.Wait() }
}

type row struct {
	olt, typ, level, msg, details string
	ts                            time.Time
	stream                        string
	seq                           int64
}

func rows(t *testing.T, db *pgxpool.Pool) []row {
	t.Helper()
	rs, err := db.Query(context.Background(), `SELECT coalesce(olt_id, ''), event_type, level, message, details::text, "timestamp", source_stream, source_seq
		FROM coordinator_logs ORDER BY source_stream, source_seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.olt, &r.typ, &r.level, &r.msg, &r.details, &r.ts, &r.stream, &r.seq); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// waitRows waits until coordinator_logs holds n rows.
func waitRows(t *testing.T, db *pgxpool.Pool, n int) []row {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := rows(t, db)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("coordinator_logs has %d rows, want %d", len(got), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestExecutionAndAuditEventsBecomeLogs(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	file := filepath.Join(t.TempDir(), "coordinator", "main.log")

	// A malformed message first: it must be dead-lettered and not stop the
	// consumer.
	if _, err := env.JS.Publish(context.Background(), streams.SubjectExec("olt-a", streams.PhaseStarted), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	publish(t, env.JS, streams.SubjectExec("olt-a", streams.PhaseStarted), t0, streams.ExecutionStarted{ExecutionID: "e1", JobID: "j1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, StartedAt: t0})
	publish(t, env.JS, streams.SubjectExec("olt-a", streams.PhaseSucceeded), t0.Add(time.Second), streams.ExecutionSucceeded{ExecutionID: "e1", JobID: "j1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, DurationMS: 900, Varbinds: 64})
	publish(t, env.JS, streams.SubjectExec("olt-b", streams.PhaseFailed), t0.Add(2*time.Second), streams.ExecutionFailed{ExecutionID: "e2", JobID: "j1", OLTID: "olt-b", PollerID: "p1", Attempt: 3, Error: "request timeout"})
	publish(t, env.JS, streams.SubjectAudit("planner"), t0.Add(3*time.Second), streams.AuditEvent{OLTID: "olt-a", Kind: streams.AuditTaskAdded, Level: streams.LevelInfo,
		Message: "task added\nforged line", Details: map[string]any{"job_id": "j1", "community": "public", "nested": map[string]any{"snmp_community": "private"}}})
	publish(t, env.JS, streams.SubjectAudit("planner"), t0.Add(4*time.Second), streams.AuditEvent{Kind: streams.AuditPlanAdjusted, Level: "info", Message: "planner started"})

	stop := startAuditor(t, env.JS, db, auditor.Config{LogFile: file}, nil)
	got := waitRows(t, db, 5)
	stop()

	want := []struct{ olt, typ, level, stream string }{
		{"olt-a", streams.AuditTaskAdded, streams.LevelInfo, streams.StreamAudit},
		{"", streams.AuditPlanAdjusted, streams.LevelInfo, streams.StreamAudit},
		{"olt-a", streams.AuditExecStarted, streams.LevelInfo, streams.StreamExec},
		{"olt-a", streams.AuditExecSucceeded, streams.LevelInfo, streams.StreamExec},
		{"olt-b", streams.AuditExecFailed, streams.LevelError, streams.StreamExec},
	}
	if len(got) != len(want) {
		t.Fatalf("rows = %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.olt != w.olt || g.typ != w.typ || g.level != w.level || g.stream != w.stream {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
	if !got[2].ts.Equal(t0) || !got[4].ts.Equal(t0.Add(2*time.Second)) {
		t.Errorf("timestamps are not the event times: %s, %s", got[2].ts, got[4].ts)
	}
	if !strings.Contains(got[4].msg, "request timeout") || !strings.Contains(got[4].details, `"attempt": 3`) {
		t.Errorf("failed row: %+v", got[4])
	}
	for _, g := range got {
		if strings.Contains(g.details, "public") || strings.Contains(g.details, "private") || strings.Contains(g.msg, "\n") {
			t.Errorf("row not sanitized: %+v", g)
		}
	}

	// The file has one JSON line per row, sanitized.
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 5 {
		t.Fatalf("file has %d lines, want 5:\n%s", len(lines), b)
	}
	if strings.Contains(string(b), "public") || strings.Contains(string(b), "private") || !strings.Contains(string(b), `"olt_id":"GLOBAL"`) {
		t.Errorf("file not sanitized or no GLOBAL line:\n%s", b)
	}

	// The malformed message is a dead letter.
	dlq, err := env.JS.Stream(context.Background(), streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dlq.GetLastMsgForSubject(context.Background(), streams.SubjectDLQ(streams.ConsumerAuditorExec)); err != nil {
		t.Errorf("no dead letter for the malformed message: %v", err)
	}

	// Redelivery of everything (the consumer is recreated from the start):
	// no new row, no new line.
	ctx := context.Background()
	if err := env.JS.DeleteConsumer(ctx, streams.StreamExec, streams.ConsumerAuditorExec); err != nil {
		t.Fatal(err)
	}
	if err := env.JS.DeleteConsumer(ctx, streams.StreamAudit, streams.ConsumerAuditorAudit); err != nil {
		t.Fatal(err)
	}
	if err := streams.Provision(ctx, env.JS, streams.Options{Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	publish(t, env.JS, streams.SubjectAudit("planner"), t0.Add(5*time.Second), streams.AuditEvent{Kind: streams.AuditTaskRemoved, Level: streams.LevelWarning, OLTID: "olt-a", Message: "marker"})
	stop = startAuditor(t, env.JS, db, auditor.Config{LogFile: file}, nil)
	got = waitRows(t, db, 6)
	// The marker is the last message of its stream: once it is in, the
	// earlier ones were redelivered before it.
	time.Sleep(300 * time.Millisecond)
	stop()
	if got = rows(t, db); len(got) != 6 {
		t.Errorf("after redelivery: %d rows, want 6", len(got))
	}
	b, _ = os.ReadFile(file)
	if n := len(strings.Split(strings.TrimSpace(string(b)), "\n")); n != 6 {
		t.Errorf("after redelivery: %d file lines, want 6", n)
	}
}

func TestCleanupDeletesOldRowsOnly(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	now := t0.Add(30 * 24 * time.Hour)
	for i, age := range []time.Duration{8 * 24 * time.Hour, 7*24*time.Hour + time.Minute, 6 * 24 * time.Hour, time.Hour} {
		if _, err := db.Exec(ctx, `INSERT INTO coordinator_logs (olt_id, event_type, level, message, "timestamp", source_stream, source_seq)
			VALUES ('olt-a', 'TASK_ADDED', 'INFO', 'm', $1, 'TEST', $2)`, now.Add(-age), i+1); err != nil {
			t.Fatal(err)
		}
	}
	// Run cleans at start with its clock.
	stop := startAuditor(t, env.JS, db, auditor.Config{LogFile: "-"}, func() time.Time { return now })
	deadline := time.Now().Add(10 * time.Second)
	for len(rows(t, db)) != 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	got := rows(t, db)
	if len(got) != 2 || got[0].seq != 3 || got[1].seq != 4 {
		t.Fatalf("rows left = %+v, want the 6-day and 1-hour old ones", got)
	}
	n, err := auditor.Cleanup(ctx, db, now)
	if err != nil || n != 2 {
		t.Fatalf("Cleanup = %d, %v; want 2", n, err)
	}
}

// A database that cannot take the rows for a while (here: the table is
// away) holds the consumer back; nothing is lost, reordered, dead-lettered
// or written twice to the file.
func TestTransientDatabaseErrorIsRetriedWithoutLoss(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	if _, err := db.Exec(ctx, `ALTER TABLE coordinator_logs RENAME TO coordinator_logs_away`); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		publish(t, env.JS, streams.SubjectAudit("planner"), t0.Add(time.Duration(i)*time.Second),
			streams.AuditEvent{Kind: streams.AuditTaskAdded, Level: streams.LevelInfo, OLTID: "olt-a", Message: fmt.Sprintf("task %d", i+1)})
	}
	file := filepath.Join(t.TempDir(), "main.log")
	reg := prometheus.NewRegistry()
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cfg := auditor.Config{LogFile: file, FetchWait: 100 * time.Millisecond, NackDelay: 200 * time.Millisecond}
		if err := auditor.Run(runCtx, cfg, auditor.Deps{JS: env.JS, DB: db, Log: zerolog.Nop(), Registry: reg}); err != nil {
			t.Errorf("auditor.Run: %v", err)
		}
	}()
	stop := func() { cancel(); wg.Wait() }
	defer stop()
	// A missing table is an outage (projection.Unavailable): the message
	// is held and tried again, without being NAKed or counted.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if outageRetries(t, reg) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not held while the table was away")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := db.Exec(ctx, `ALTER TABLE coordinator_logs_away RENAME TO coordinator_logs`); err != nil {
		t.Fatal(err)
	}
	got := waitRows(t, db, 3)
	stop()
	for i, r := range got {
		if r.seq != int64(i+1) || r.msg != fmt.Sprintf("task %d", i+1) {
			t.Errorf("row %d = %+v", i, r)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 3 {
		t.Errorf("file has %d lines, want 3:\n%s", len(lines), b)
	}
	dlq, err := env.JS.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := dlq.Info(ctx); err != nil || info.State.Msgs != 0 {
		t.Errorf("dead letters for a transient error: %+v, %v", info.State, err)
	}
}

// A row Postgres will never take (a NUL in the OLT id: SQLSTATE 22021) is
// dead-lettered with the reason, and the consumer carries on.
func TestRowTheDatabaseRefusesIsDeadLettered(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	publish(t, env.JS, streams.SubjectAudit("planner"), t0, streams.AuditEvent{Kind: streams.AuditTaskAdded, Level: streams.LevelInfo, OLTID: "olt\x00a", Message: "refused"})
	publish(t, env.JS, streams.SubjectAudit("planner"), t0.Add(time.Second), streams.AuditEvent{Kind: streams.AuditTaskAdded, Level: streams.LevelInfo, OLTID: "olt-a", Message: "next"})
	stop := startAuditor(t, env.JS, db, auditor.Config{LogFile: "-"}, nil)
	got := waitRows(t, db, 1)
	stop()
	if len(got) != 1 || got[0].msg != "next" || got[0].seq != 2 {
		t.Fatalf("rows = %+v, want only the second message", got)
	}
	dlq, err := env.JS.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := dlq.GetLastMsgForSubject(ctx, streams.SubjectDLQ(streams.ConsumerAuditorAudit))
	if err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	_, dl, err := streams.Decode[streams.DeadLetter](raw.Data)
	if err != nil {
		t.Fatal(err)
	}
	if dl.StreamSeq != 1 || !strings.Contains(dl.Reason, "22021") {
		t.Errorf("dead letter %+v", dl)
	}
}

func outageRetries(t *testing.T, g prometheus.Gatherer) int {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() == "facho_consumer_outage_retries_total" {
			for _, m := range mf.GetMetric() {
				n += int(m.GetCounter().GetValue())
			}
		}
	}
	return n
}
