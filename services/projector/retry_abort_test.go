package projector

import (
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// Attempt 1 of an execution fails (retryable), or is lost with its poller
// (INTERRUPTED), and while the retry (or the redelivery) is pending the
// operator disables the OLT or the task: the poller given the next
// delivery finds the cancellation and publishes execution.aborted, which
// carries no attempt. The planner ends the execution there (no retry), so
// the row ends ABORTED, naming the last attempt that ran, whose attempt
// row keeps its own outcome; the aborted delivery has no attempt row. The
// same when the abort is read before the NodeDue, after two failures, and
// when an attempt still RUNNING lost its lease to the aborting poller (its
// interruption, read after, ends only its attempt row). An abort after a
// success is stale (a duplicate delivery; the planner had ended it) and
// the success stands. Late events move none of them, and the rebuild
// (fold and batch form) leaves the same rows as the live projection.
func TestAbortOfTheRetryEndsTheExecution(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	l := lifecycle{t: t, r: r, t0: t0}
	exec, due, started, failed, interrupted, succeeded := l.exec, l.due, l.started, l.failed, l.interrupted, l.succeeded
	abortAt := t0.Add(20 * time.Minute)
	aborted := func(id string) {
		t.Helper()
		exec(streams.PhaseAborted, streams.ExecutionAborted{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p9",
			Reason: "OLT disabled", AbortedAt: abortAt})
	}
	// wantAborted: the abort ended the execution; the row still names the
	// last attempt that ran (lastRan) and its lease, whose attempt row
	// ended lastStatus and is the last one.
	wantAborted := func(id string, lastRan int, lastStatus string) {
		t.Helper()
		e := r.execution(id)
		if e.Status != StatusAborted || e.PollerID != "p9" || e.Attempt != lastRan || e.Rev != int64(4+lastRan) ||
			e.Error != "OLT disabled" || e.Finished == nil || !e.Finished.Equal(abortAt) || e.Scheduled == nil || !e.Scheduled.Equal(t0) {
			t.Fatalf("%s: %+v, want ABORTED by p9 at the abort, attempt %d", id, e, lastRan)
		}
		if a := r.attempts(id); len(a) != lastRan || a[lastRan] != lastStatus {
			t.Fatalf("%s attempts %v, want %d ending %s (none for the aborted delivery)", id, a, lastRan, lastStatus)
		}
	}
	want := func(id, when, status string, attempt int) {
		t.Helper()
		if e := r.execution(id); e.Status != status || e.Attempt != attempt || e.PollerID != "p1" {
			t.Fatalf("%s %s: %+v, want %s of p1's attempt %d", id, when, e, status, attempt)
		}
	}

	// started(1) -> failed(1, retryable) -> aborted: ABORTED.
	due("retry-aborted")
	started("retry-aborted", 1)
	failed("retry-aborted", 1)
	want("retry-aborted", "after attempt 1 failed", StatusFailed, 1)
	aborted("retry-aborted")
	wantAborted("retry-aborted", 1, StatusFailed)
	// A duplicate abort, attempt 1's failure again, a stale start of
	// attempt 1, a start and a skip of a retry and the NodeDue again leave
	// it.
	aborted("retry-aborted")
	failed("retry-aborted", 1)
	started("retry-aborted", 1)
	started("retry-aborted", 2)
	exec(streams.PhaseSkipped, streams.ExecutionSkipped{ExecutionID: "retry-aborted", JobID: "job-1", OLTID: "olt-a", PollerID: "p8", Attempt: 2,
		ScheduledAt: t0, SkippedAt: abortAt.Add(time.Minute), Reason: "stale"})
	due("retry-aborted")
	wantAborted("retry-aborted", 1, StatusFailed)

	// The abort read before the execution's NodeDue (the streams are
	// independent): the same.
	started("retry-aborted-before-due", 1)
	failed("retry-aborted-before-due", 1)
	aborted("retry-aborted-before-due")
	due("retry-aborted-before-due")
	wantAborted("retry-aborted-before-due", 1, StatusFailed)

	// The third attempt's abort, after two failures.
	due("second-retry-aborted")
	started("second-retry-aborted", 1)
	failed("second-retry-aborted", 1)
	started("second-retry-aborted", 2)
	failed("second-retry-aborted", 2)
	aborted("second-retry-aborted")
	wantAborted("second-retry-aborted", 2, StatusFailed)

	// interrupted(1) (lost with its poller) -> aborted: its redelivery
	// was cancelled. A late failure of the lost attempt leaves it.
	due("lost-then-aborted")
	started("lost-then-aborted", 1)
	interrupted("lost-then-aborted", 1)
	want("lost-then-aborted", "after attempt 1 was lost", StatusInterrupted, 1)
	aborted("lost-then-aborted")
	wantAborted("lost-then-aborted", 1, StatusInterrupted)
	failed("lost-then-aborted", 1)
	wantAborted("lost-then-aborted", 1, StatusInterrupted)

	// The abort read before the lost attempt's interruption: the aborting
	// poller took the lease the running attempt lost. ABORTED at once;
	// the interruption then ends attempt 1's row only.
	due("running-then-aborted")
	started("running-then-aborted", 1)
	aborted("running-then-aborted")
	if e := r.execution("running-then-aborted"); e.Status != StatusAborted || e.Attempt != 1 || e.PollerID != "p9" {
		t.Fatalf("running-then-aborted after the abort: %+v, want ABORTED", e)
	}
	interrupted("running-then-aborted", 1)
	wantAborted("running-then-aborted", 1, StatusInterrupted)

	// Stale: an abort after the success (a duplicate delivery the planner
	// had already ended); the success stands.
	due("aborted-after-success")
	started("aborted-after-success", 1)
	failed("aborted-after-success", 1)
	started("aborted-after-success", 2)
	succeeded("aborted-after-success", 2)
	aborted("aborted-after-success")
	want("aborted-after-success", "after a stale abort", StatusSuccess, 2)
	if a := r.attempts("aborted-after-success"); len(a) != 2 || a[1] != StatusFailed || a[2] != StatusSuccess {
		t.Fatalf("aborted-after-success attempts %v", a)
	}

	if rep := r.rebuild(ReadModelExecutions, true); !rep.Identical {
		t.Errorf("executions rebuilt differ from live: %s", rep.String())
	}
}
