package projector

import (
	"strings"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// Attempt 1 of an execution fails (retryable) and the planner re-dispatches
// the same execution as attempt 2, which a poller skips: the planner ends
// the execution there (services/planner: a skip of the dispatch in flight
// ends it), so the executions row ends SKIPPED, with no attempt row for
// the retry (nothing ran) and attempt 1's row FAILED. The same after an
// attempt lost with its poller (INTERRUPTED), where the skip of the lost
// attempt's own redelivery (attempt 1) is not the end: the planner retries
// it. Late and stale events move neither, a stale skip of attempt 1 while
// the retry runs is ignored, and the rebuild (fold and batch form) leaves
// the same rows as the live projection.
func TestSkipOfTheRetryEndsTheExecution(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	l := lifecycle{t: t, r: r, t0: t0}
	exec, due, started, failed, interrupted, succeeded := l.exec, l.due, l.started, l.failed, l.interrupted, l.succeeded
	skipAt := t0.Add(20 * time.Minute)
	skipped := func(id string, attempt int) {
		t.Helper()
		exec(streams.PhaseSkipped, streams.ExecutionSkipped{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p9", Attempt: attempt,
			ScheduledAt: t0, SkippedAt: skipAt, Reason: "stale: a newer run supersedes it"})
	}
	// wantSkipped: the skip ended the execution; the row still names the
	// last attempt that ran (lastRan) and its lease, whose attempt row is
	// the only one.
	wantSkipped := func(id string, lastRan int, lastStatus string) {
		t.Helper()
		e := r.execution(id)
		if e.Status != StatusSkipped || e.PollerID != "p9" || e.Attempt != lastRan || e.Rev != int64(4+lastRan) ||
			!strings.HasPrefix(e.Error, "stale: ") || e.Finished == nil || !e.Finished.Equal(skipAt) || e.Scheduled == nil || !e.Scheduled.Equal(t0) {
			t.Fatalf("%s: %+v, want SKIPPED by p9 at the skip, attempt %d", id, e, lastRan)
		}
		if a := r.attempts(id); len(a) != lastRan || a[lastRan] != lastStatus {
			t.Fatalf("%s attempts %v, want %d ending %s (none for the skipped retry)", id, a, lastRan, lastStatus)
		}
	}
	want := func(id, when, status string, attempt int) {
		t.Helper()
		if e := r.execution(id); e.Status != status || e.Attempt != attempt || e.PollerID != "p1" {
			t.Fatalf("%s %s: %+v, want %s of p1's attempt %d", id, when, e, status, attempt)
		}
	}

	// started(1) -> failed(1, retryable) -> skipped(2): SKIPPED.
	due("retry-skipped")
	started("retry-skipped", 1)
	failed("retry-skipped", 1)
	want("retry-skipped", "after attempt 1 failed", StatusFailed, 1)
	skipped("retry-skipped", 2)
	wantSkipped("retry-skipped", 1, StatusFailed)
	// A duplicate skip, attempt 1's failure again, a stale skip and a
	// stale start of attempt 1 leave it.
	skipped("retry-skipped", 2)
	failed("retry-skipped", 1)
	skipped("retry-skipped", 1)
	started("retry-skipped", 1)
	due("retry-skipped")
	wantSkipped("retry-skipped", 1, StatusFailed)

	// The skip of the retry read before the execution's NodeDue (the
	// streams are independent): the same.
	started("retry-skipped-before-due", 1)
	failed("retry-skipped-before-due", 1)
	skipped("retry-skipped-before-due", 2)
	due("retry-skipped-before-due")
	wantSkipped("retry-skipped-before-due", 1, StatusFailed)

	// The third attempt's skip, after two failures.
	due("second-retry-skipped")
	started("second-retry-skipped", 1)
	failed("second-retry-skipped", 1)
	started("second-retry-skipped", 2)
	failed("second-retry-skipped", 2)
	skipped("second-retry-skipped", 2) // attempt 2's own dispatch: stale
	want("second-retry-skipped", "after a stale skip of attempt 2", StatusFailed, 2)
	skipped("second-retry-skipped", 3)
	wantSkipped("second-retry-skipped", 2, StatusFailed)

	// Attempt 1 lost with its poller; its redelivery is skipped (the
	// planner makes that INTERRUPTED and retries), then the retry too.
	due("lost-then-retry-skipped")
	started("lost-then-retry-skipped", 1)
	interrupted("lost-then-retry-skipped", 1)
	skipped("lost-then-retry-skipped", 1)
	want("lost-then-retry-skipped", "after the redelivery's skip", StatusInterrupted, 1)
	skipped("lost-then-retry-skipped", 2)
	wantSkipped("lost-then-retry-skipped", 1, StatusInterrupted)

	// A stale skip of attempt 1 while the retry runs is ignored: the retry
	// ends with its own outcome.
	due("stale-skip")
	started("stale-skip", 1)
	failed("stale-skip", 1)
	started("stale-skip", 2)
	skipped("stale-skip", 1)
	want("stale-skip", "after a stale skip of attempt 1", StatusRunning, 2)
	succeeded("stale-skip", 2)
	want("stale-skip", "after the retry's success", StatusSuccess, 2)
	if a := r.attempts("stale-skip"); len(a) != 2 || a[1] != StatusFailed || a[2] != StatusSuccess {
		t.Fatalf("stale-skip attempts %v", a)
	}

	if rep := r.rebuild(ReadModelExecutions, true); !rep.Identical {
		t.Errorf("executions rebuilt differ from live: %s", rep.String())
	}
}
