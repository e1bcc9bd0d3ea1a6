package auditor_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/facho-olt/facho/pkg/jstest"
	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/pkg/replay"
	"github.com/facho-olt/facho/services/auditor"
	"github.com/facho-olt/facho/streams"
)

// Attempt 1 of an execution fails and the planner retries it (attempt 2,
// the same execution id). While the retry runs, a poller skips a stale
// delivery of attempt 1's NodeDue: the skipped event of attempt 1 is not
// the retry's end, and the quota execution stays RUNNING (pending in its
// tracker) until the retry's own outcome, here an interruption. A skip
// without attempt (an event from before the field) or of the attempt in
// flight still ends it, and a skip of a pending execution as before. The
// rebuild (the batch form) leaves the same rows.
func TestLateSkipOfAnEarlierAttemptDoesNotEndTheRetry(t *testing.T) {
	env := jstest.Start(t, streams.Options{Storage: jetstream.MemoryStorage})
	db := pgtest.New(t)
	ctx := context.Background()
	h10 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	const olt = "olt-a"
	exec := func(phase string, at time.Time, ev streams.Event) {
		publish(t, env.JS, streams.SubjectExec(olt, phase), at, ev)
	}
	started := func(id string, at time.Time, a int) {
		exec(streams.PhaseStarted, at, streams.ExecutionStarted{ExecutionID: id, JobID: "discovery", OLTID: olt, PollerID: "p1", Attempt: a,
			LeaseRevision: uint64(a), StartedAt: at})
	}
	retried := func(id string, at time.Time) {
		started(id, at, 1)
		exec(streams.PhaseFailed, at.Add(time.Second), streams.ExecutionFailed{ExecutionID: id, JobID: "discovery", OLTID: olt, PollerID: "p1", Attempt: 1,
			LeaseRevision: 1, StartedAt: at, FinishedAt: at.Add(time.Second), DurationMS: 1000, Error: "timeout", Retryable: true})
		started(id, at.Add(time.Minute), 2)
	}
	skipped := func(id string, at time.Time, a int) {
		exec(streams.PhaseSkipped, at.Add(2*time.Minute), streams.ExecutionSkipped{ExecutionID: id, JobID: "discovery", OLTID: olt, PollerID: "p2", Attempt: a,
			ScheduledAt: at, SkippedAt: at.Add(2 * time.Minute), Reason: "stale"})
	}
	want := map[string]string{}
	for i, c := range []struct {
		id, outcome string
		events      func(id string, at time.Time)
	}{
		{"late-skip", "RUNNING", func(id string, at time.Time) {
			retried(id, at)
			skipped(id, at, 1)
		}},
		{"late-skip-then-interrupted", "INTERRUPTED", func(id string, at time.Time) {
			retried(id, at)
			skipped(id, at, 1)
			exec(streams.PhaseInterrupted, at.Add(3*time.Minute), streams.ExecutionInterrupted{ExecutionID: id, JobID: "discovery", OLTID: olt, PollerID: "p1",
				Attempt: 2, LeaseRevision: 2, StartedAt: at.Add(time.Minute), InterruptedAt: at.Add(3 * time.Minute), DetectedBy: "p2", Reason: "lease expired"})
		}},
		{"skip-without-attempt", "SKIPPED", func(id string, at time.Time) {
			retried(id, at)
			skipped(id, at, 0)
		}},
		{"skip-of-the-retry", "SKIPPED", func(id string, at time.Time) {
			retried(id, at)
			skipped(id, at, 2)
		}},
		{"skip-of-a-pending-one", "SKIPPED", func(id string, at time.Time) {
			skipped(id, at, 1)
		}},
	} {
		at := h10.Add(time.Duration(i) * 10 * time.Minute)
		publish(t, env.JS, streams.SubjectNodeDue(olt), at, nodeDue(c.id, olt, at))
		c.events(c.id, at)
		want[c.id] = c.outcome
	}
	stop := startAuditor(t, env.JS, db, auditor.Config{LogFile: "-"}, func() time.Time { return h10.Add(30 * time.Minute) })
	waitQuotaConsumers(ctx, t, env.JS, db)
	stop()
	check := func(when string) {
		t.Helper()
		for id, outcome := range want {
			var got string
			if err := db.QueryRow(ctx, `SELECT outcome FROM quota_executions WHERE execution_id = $1`, id).Scan(&got); err != nil || got != outcome {
				t.Errorf("%s: %s is %s (%v), want %s", when, id, got, err, outcome)
			}
		}
		r, _ := trackerOf(t, db, olt, "discovery", h10)
		if r.pending != 1 || r.failed != 1 || r.skipped != 3 {
			t.Errorf("%s: tracker %+v, want 1 pending, 1 failed (interrupted), 3 skipped", when, r)
		}
	}
	check("live")
	models, err := auditor.ReadModels(auditor.Config{}, zerolog.Nop(), func() time.Time { return h10.Add(30 * time.Minute) })
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models {
		if m.Name != auditor.ReadModelQuotas {
			continue
		}
		rep, err := replay.Rebuild(ctx, env.JS, db, m, replay.RebuildOptions{DryRun: true, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Identical {
			t.Errorf("quotas rebuilt differ from live: %s", rep.String())
		}
		// Swapped in (the live tables emptied first): the rebuild's own rows.
		for _, table := range []string{"quota_tracker", "quota_executions"} {
			if _, err := db.Exec(ctx, `DELETE FROM `+table); err != nil {
				t.Fatal(err)
			}
		}
		if rep, err = replay.Rebuild(ctx, env.JS, db, m, replay.RebuildOptions{Log: zerolog.Nop()}); err != nil || !rep.Swapped {
			t.Fatalf("rebuild not swapped in: %v %s", err, rep.String())
		}
		check("rebuilt")
	}
}
