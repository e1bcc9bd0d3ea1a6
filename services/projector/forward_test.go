package projector

import (
	"errors"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

func TestForward(t *testing.T) {
	for _, tc := range []struct {
		name       string
		curAttempt int
		curStatus  string
		attempt    int
		status     string
		want       bool
	}{
		{"pending to running", 0, StatusPending, 1, StatusRunning, true},
		{"running to success", 1, StatusRunning, 1, StatusSuccess, true},
		{"running to failed", 1, StatusRunning, 1, StatusFailed, true},
		{"success back to running", 1, StatusSuccess, 1, StatusRunning, false},
		{"failed to success, same attempt", 1, StatusFailed, 1, StatusSuccess, false},
		{"duplicate success", 1, StatusSuccess, 1, StatusSuccess, true},
		{"later attempt after failed", 1, StatusFailed, 2, StatusRunning, true},
		{"earlier attempt", 2, StatusRunning, 1, StatusSuccess, false},
		{"aborted is final", 1, StatusAborted, 1, StatusSuccess, false},
		{"running to interrupted", 1, StatusRunning, 1, StatusInterrupted, true},
		{"duplicate interrupted", 1, StatusInterrupted, 1, StatusInterrupted, true},
		{"late success of the interrupted attempt", 1, StatusInterrupted, 1, StatusSuccess, false},
		{"late failure of the interrupted attempt", 1, StatusInterrupted, 1, StatusFailed, false},
		{"interrupted after the attempt succeeded", 1, StatusSuccess, 1, StatusInterrupted, false},
		{"interrupted after the attempt failed", 1, StatusFailed, 1, StatusInterrupted, false},
		{"next attempt after interrupted", 1, StatusInterrupted, 2, StatusRunning, true},
		{"interrupted of an older attempt", 2, StatusRunning, 1, StatusInterrupted, false},

		{"pending to skipped", 0, StatusPending, 0, StatusSkipped, true},
		{"duplicate skipped", 0, StatusSkipped, 0, StatusSkipped, true},
		{"skipped does not overwrite running", 1, StatusRunning, 0, StatusSkipped, false},
		{"skipped does not overwrite running of attempt 0", 0, StatusRunning, 0, StatusSkipped, false},
		{"skipped does not overwrite success", 1, StatusSuccess, 0, StatusSkipped, false},
		{"skipped does not overwrite failed", 1, StatusFailed, 0, StatusSkipped, false},
		{"skipped does not overwrite aborted", 0, StatusAborted, 0, StatusSkipped, false},
		{"skipped does not overwrite interrupted", 0, StatusInterrupted, 0, StatusSkipped, false},
		{"skipped is not regressed to pending", 0, StatusSkipped, 0, StatusPending, false},
		{"skipped is not replaced by a later started", 0, StatusSkipped, 1, StatusRunning, false},
		{"skipped is not replaced by a later success", 0, StatusSkipped, 2, StatusSuccess, false},
		{"skipped is not replaced by failed", 0, StatusSkipped, 1, StatusFailed, false},

		// A skip carries the skipped NodeDue's attempt (the planner's
		// dispatch). Above the recorded attempt, after that attempt ended
		// failed or interrupted, it is the retry's: it ends the execution,
		// as the planner ends it.
		{"skip of the retry after failed", 1, StatusFailed, 2, StatusSkipped, true},
		{"skip of a later retry after failed", 2, StatusFailed, 4, StatusSkipped, true},
		{"skip of the retry after interrupted", 1, StatusInterrupted, 2, StatusSkipped, true},
		{"duplicate skip of the retry", 1, StatusSkipped, 2, StatusSkipped, true},
		{"skip of the failed attempt's own dispatch (stale)", 1, StatusFailed, 1, StatusSkipped, false},
		{"skip of an older attempt than the failed one (stale)", 3, StatusFailed, 2, StatusSkipped, false},
		{"skip of the interrupted attempt's dispatch (its redelivery)", 1, StatusInterrupted, 1, StatusSkipped, false},
		{"skip of an older attempt than the one running (stale)", 2, StatusRunning, 1, StatusSkipped, false},
		{"skip of the running attempt", 2, StatusRunning, 2, StatusSkipped, false},
		{"skip above the running attempt", 1, StatusRunning, 2, StatusSkipped, false},
		{"skip above the succeeded attempt", 1, StatusSuccess, 2, StatusSkipped, false},
		{"skip of the retry after aborted", 0, StatusAborted, 2, StatusSkipped, false},
		{"late failure of the skipped retry's previous attempt", 1, StatusSkipped, 1, StatusFailed, false},
		{"started after the retry's skip", 1, StatusSkipped, 2, StatusRunning, false},

		// An abort carries no attempt: the planner cancelled a delivery
		// before it started and ends the execution in flight on it. After
		// a failed or interrupted attempt it is the retry's (or the lost
		// attempt's redelivery's); after running, the running attempt
		// lost the lease the aborting poller took; after success it is
		// stale.
		{"pending to aborted", 0, StatusPending, 0, StatusAborted, true},
		{"abort above the failed attempt", 1, StatusFailed, 2, StatusAborted, true},
		{"abort of the retry after failed", 1, StatusFailed, 0, StatusAborted, true},
		{"abort of a later retry after failed", 3, StatusFailed, 0, StatusAborted, true},
		{"abort of the redelivery after interrupted", 1, StatusInterrupted, 0, StatusAborted, true},
		{"abort after the running attempt lost its lease", 1, StatusRunning, 0, StatusAborted, true},
		{"abort after success (stale)", 1, StatusSuccess, 0, StatusAborted, false},
		{"abort after skipped", 1, StatusSkipped, 0, StatusAborted, false},
		{"duplicate abort of the retry", 1, StatusAborted, 0, StatusAborted, true},
		{"late failure of the aborted retry's previous attempt", 1, StatusAborted, 1, StatusFailed, false},
		{"late interruption of the attempt running when aborted", 1, StatusAborted, 1, StatusInterrupted, false},
		{"started after the retry's abort", 1, StatusAborted, 2, StatusRunning, false},
		{"skip of the retry after its abort", 1, StatusAborted, 2, StatusSkipped, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := forward(tc.curAttempt, tc.curStatus, tc.attempt, tc.status); got != tc.want {
				t.Fatalf("forward(%d %s -> %d %s) = %v, want %v", tc.curAttempt, tc.curStatus, tc.attempt, tc.status, got, tc.want)
			}
		})
	}
}

func TestDecodeSkippedEvent(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	skipped := streams.ExecutionSkipped{ExecutionID: "x", JobID: "j", OLTID: "o", PollerID: "p1",
		ScheduledAt: at, SkippedAt: at.Add(10 * time.Minute), Reason: "stale"}
	b, err := streams.Encode("test", at, skipped)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := decodeExecEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Status != StatusSkipped || ev.Attempt != 0 || ev.LeaseRevision != 0 || ev.Error != "stale" || ev.PollerID != "p1" ||
		ev.StartedAt != nil || ev.ScheduledAt == nil || !ev.ScheduledAt.Equal(at) || ev.FinishedAt == nil || !ev.FinishedAt.Equal(at.Add(10*time.Minute)) {
		t.Fatalf("decoded %+v", ev)
	}

	skipped.JobID = ""
	b, _ = streams.Encode("test", at, skipped)
	if _, err := decodeExecEvent(b); !errors.Is(err, streams.ErrMalformed) {
		t.Fatalf("skipped without job_id: err %v, want malformed", err)
	}
}
