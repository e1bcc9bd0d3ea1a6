package auditor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/projection"
	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/services/auditor"
	"github.com/facho-olt/facho/streams"
)

// Rebuilding coordinator_logs equals the live auditor's rows; rows the
// daily cleanup deleted live stay deleted (Prune); a lost row comes back
// with a new id; the file gets no line from a rebuild.
func TestRebuildCoordinatorLogs(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	now := time.Now().UTC()
	for i := 0; i < 40; i++ {
		olt := fmt.Sprintf("olt-%d", i%3)
		at := now.Add(-time.Duration(40-i) * time.Minute)
		publish(t, env.JS, streams.SubjectExec(olt, streams.PhaseFailed), at, streams.ExecutionFailed{ExecutionID: fmt.Sprintf("e%d", i), JobID: "j", OLTID: olt,
			Attempt: 1, StartedAt: at, FinishedAt: at.Add(time.Second), DurationMS: 1000, Error: "timeout"})
		publish(t, env.JS, streams.SubjectAudit("planner"), at, streams.AuditEvent{OLTID: olt, Kind: streams.AuditTaskAdded, Level: streams.LevelInfo, Message: fmt.Sprintf("task %d", i)})
	}
	// An old event: the live cleanup deleted its row, the rebuild prunes it.
	old := now.Add(-10 * 24 * time.Hour)
	publish(t, env.JS, streams.SubjectAudit("planner"), old, streams.AuditEvent{Kind: streams.AuditPlanAdjusted, Level: streams.LevelInfo, Message: "long ago"})
	stop := startAuditor(t, env.JS, db, auditor.Config{LogFile: "-"}, time.Now)
	// Wait for both consumers to reach the ends of their streams (the
	// old row may or may not be cleaned yet).
	for _, c := range []struct{ stream, consumer string }{{streams.StreamExec, streams.ConsumerAuditorExec}, {streams.StreamAudit, streams.ConsumerAuditorAudit}} {
		s, err := env.JS.Stream(ctx, c.stream)
		if err != nil {
			t.Fatal(err)
		}
		last := s.CachedInfo().State.LastSeq
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if cp, err := projection.Checkpoint(ctx, db, c.consumer); err == nil && cp == last {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not reach seq %d", c.consumer, last)
			}
		}
	}
	stop()
	if _, err := db.Exec(ctx, `DELETE FROM coordinator_logs WHERE message = 'long ago'`); err != nil {
		t.Fatal(err)
	}
	models, err := auditor.ReadModels(auditor.Config{}, zerolog.Nop(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	rebuild := func(dry bool) replay.Report {
		t.Helper()
		rep, err := replay.Rebuild(ctx, env.JS, db, models[0], replay.RebuildOptions{DryRun: dry, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(rep.String())
		return rep
	}
	if rep := rebuild(false); !rep.Identical || rep.Tables[0].LiveRows != 80 {
		t.Fatalf("intact coordinator_logs: %+v", rep)
	}
	if _, err := db.Exec(ctx, `DELETE FROM coordinator_logs WHERE source_stream = $1 AND source_seq = 7`, streams.StreamExec); err != nil {
		t.Fatal(err)
	}
	rep := rebuild(false)
	if !rep.Swapped || rep.Tables[0].Differing != 1 || rep.Tables[0].Examples[0] != (replay.RowDiff{Key: "source_stream=FACHO_EXEC source_seq=7", Where: "rebuild only"}) {
		t.Fatalf("lost row: %+v", rep)
	}
	if got := rows(t, db); len(got) != 80 {
		t.Fatalf("%d rows after the swap, want 80", len(got))
	}
	if rep := rebuild(true); !rep.Identical {
		t.Errorf("after the swap: %+v", rep)
	}
}

// TestRebuild100k rebuilds coordinator_logs from an exec stream of 100,000
// lifecycle events, as the pollers publish them, and checks the result row
// for row against the events; a second rebuild finds it identical, and so
// does one that applies each message by itself (the live path). Under
// the race detector (CI), 10,000 events: the same code, a tenth of the time.
func TestRebuild100k(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	js, err := jetstream.New(env.NC, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		t.Fatal(err)
	}
	n := 100000
	if raceEnabled {
		n = 10000
	}
	base := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Millisecond)
	for i := 0; i < n; i++ {
		olt := fmt.Sprintf("olt-%d", i%16)
		id := fmt.Sprintf("exec-%06d", i/2)
		at := base.Add(time.Duration(i) * time.Millisecond)
		var subject string
		var ev streams.Event
		if i%2 == 0 {
			subject, ev = streams.SubjectExec(olt, streams.PhaseStarted), streams.ExecutionStarted{ExecutionID: id, JobID: "job-1", OLTID: olt,
				PollerID: "poller-1", Attempt: 1, LeaseRevision: uint64(i), StartedAt: at}
		} else {
			subject, ev = streams.SubjectExec(olt, streams.PhaseSucceeded), streams.ExecutionSucceeded{ExecutionID: id, JobID: "job-1", OLTID: olt,
				PollerID: "poller-1", Attempt: 1, LeaseRevision: uint64(i), StartedAt: at, FinishedAt: at, DurationMS: int64(i % 1000), Varbinds: 64}
		}
		b, err := streams.Encode("poller-1", at, ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishAsync(subject, b, jetstream.WithStallWait(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		t.Fatal("publish did not complete")
	}
	models, err := auditor.ReadModels(auditor.Config{}, zerolog.Nop(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := replay.Rebuild(ctx, env.JS, db, models[0], replay.RebuildOptions{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events rebuilt in %s (%.0f/s)", rep.Messages, time.Since(start).Round(time.Millisecond), float64(rep.Messages)/time.Since(start).Seconds())
	if !rep.Swapped || rep.Messages != uint64(n) {
		t.Fatalf("report: %+v", rep)
	}
	rows, err := db.Query(ctx, `SELECT olt_id, event_type, level, message, "timestamp", source_seq FROM coordinator_logs
		WHERE source_stream = $1 ORDER BY source_seq`, streams.StreamExec)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var olt, typ, level, msg string
		var ts time.Time
		var seq int64
		if err := rows.Scan(&olt, &typ, &level, &msg, &ts, &seq); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("exec-%06d", i/2)
		want := fmt.Sprintf("execution %s of job job-1 started (attempt 1, poller poller-1)", id)
		wantType := streams.AuditExecStarted
		if i%2 == 1 {
			want = fmt.Sprintf("execution %s of job job-1 succeeded in %d ms (64 varbinds)", id, i%1000)
			wantType = streams.AuditExecSucceeded
		}
		if seq != int64(i+1) || olt != fmt.Sprintf("olt-%d", i%16) || typ != wantType || level != streams.LevelInfo || msg != want ||
			!ts.Equal(base.Add(time.Duration(i)*time.Millisecond)) {
			t.Fatalf("row %d: seq %d %s %s %s %q %s", i, seq, olt, typ, level, msg, ts)
		}
		i++
	}
	if rows.Err() != nil || i != n {
		t.Fatalf("%d rows (%v), want %d", i, rows.Err(), n)
	}
	if rep, err := replay.Rebuild(ctx, env.JS, db, models[0], replay.RebuildOptions{DryRun: true, Log: zerolog.Nop()}); err != nil || !rep.Identical {
		t.Errorf("second rebuild: %v %+v", err, rep)
	}
	// The rebuild above inserted the rows set-based (ApplyBatch); message
	// by message, each message's own Apply (the live consumer's insert)
	// makes the same rows.
	start = time.Now()
	rep, err = replay.Rebuild(ctx, env.JS, db, models[0], replay.RebuildOptions{DryRun: true, PerMessage: true, Log: zerolog.Nop()})
	if err != nil || !rep.Identical {
		t.Errorf("per-message rebuild: %v %+v", err, rep)
	}
	t.Logf("message by message: %d events in %s (%.0f/s)", rep.Messages, time.Since(start).Round(time.Millisecond), float64(rep.Messages)/time.Since(start).Seconds())
}
