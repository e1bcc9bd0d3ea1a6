package projector

import (
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// Attempt 1 of an execution fails and the planner retries it (attempt 2,
// the same execution id). While the retry runs, a poller skips a stale
// delivery of attempt 1's NodeDue (execution.skipped of attempt 1): the
// execution is not SKIPPED, it stays RUNNING in attempt 2 and ends with
// attempt 2's own outcome. The same for a skip read between attempt 1's
// failure and the retry's start, and for a skip without attempt (an event
// from before the field). The rebuild (the fold and the batch form)
// leaves the same rows.
func TestLateSkipOfAnEarlierAttemptDoesNotEndTheRetry(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	exec := func(phase string, ev streams.Event) {
		t.Helper()
		r.waitCheckpoint(streams.ConsumerProjectorExec, r.publish(streams.SubjectExec("olt-a", phase), ev))
	}
	started := func(id string, attempt int) {
		t.Helper()
		exec(streams.PhaseStarted, streams.ExecutionStarted{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: attempt,
			LeaseRevision: uint64(4 + attempt), StartedAt: t0.Add(time.Duration(attempt) * time.Minute)})
	}
	failed := func(id string) {
		t.Helper()
		exec(streams.PhaseFailed, streams.ExecutionFailed{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, LeaseRevision: 5,
			StartedAt: t0.Add(time.Minute), FinishedAt: t0.Add(time.Minute + time.Second), DurationMS: 1000, Error: "timeout", Retryable: true})
	}
	skipped := func(id string, attempt int) {
		t.Helper()
		exec(streams.PhaseSkipped, streams.ExecutionSkipped{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p9", Attempt: attempt,
			ScheduledAt: t0, SkippedAt: t0.Add(3 * time.Minute), Reason: "stale"})
	}
	succeeded := func(id string) {
		t.Helper()
		exec(streams.PhaseSucceeded, streams.ExecutionSucceeded{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 2, LeaseRevision: 6,
			StartedAt: t0.Add(2 * time.Minute), FinishedAt: t0.Add(4 * time.Minute), DurationMS: 2000, Varbinds: 8})
	}
	want := func(id, when, status string, attempt int) {
		t.Helper()
		if e := r.execution(id); e.Status != status || e.Attempt != attempt || e.PollerID != "p1" {
			t.Fatalf("%s %s: %+v, want %s of p1's attempt %d", id, when, e, status, attempt)
		}
	}
	for _, tc := range []struct {
		id string
		// skipAttempt: the late skip's attempt; beforeRetry: read
		// between attempt 1's failure and the retry's start.
		skipAttempt int
		beforeRetry bool
	}{
		{"late-skip", 1, false},
		{"late-skip-before-the-retry", 1, true},
		{"late-skip-without-attempt", 0, false},
	} {
		r.waitCheckpoint(streams.ConsumerProjectorSchedule, r.publish(streams.SubjectNodeDue("olt-a"), nodeDue(tc.id, t0)))
		started(tc.id, 1)
		failed(tc.id)
		if tc.beforeRetry {
			skipped(tc.id, tc.skipAttempt)
			want(tc.id, "after the late skip", StatusFailed, 1)
		}
		started(tc.id, 2)
		if !tc.beforeRetry {
			skipped(tc.id, tc.skipAttempt)
		}
		want(tc.id, "after the late skip", StatusRunning, 2)
		succeeded(tc.id)
		want(tc.id, "after the retry's success", StatusSuccess, 2)
		if a := r.attempts(tc.id); len(a) != 2 || a[1] != StatusFailed || a[2] != StatusSuccess {
			t.Fatalf("%s attempts %v", tc.id, a)
		}
	}
	if rep := r.rebuild(ReadModelExecutions, true); !rep.Identical {
		t.Errorf("executions rebuilt differ from live: %s", rep.String())
	}
}
