package auditor

import (
	"context"
	"fmt"
	"testing"

	"github.com/facho-olt/facho/pkg/pgtest"
	"github.com/facho-olt/facho/streams"
)

// The live consumer decides with each event's SQL condition (cond) in
// Postgres, the rebuild's batch form with replaces in memory: for every
// event over every stored outcome and attempt they must agree, on the
// outcome and on the attempt left.
func TestReplacesIsCond(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	ids := func(id string) (string, string, string) { return id, "olt-a", "job-1" }
	var events []execQuotaEvent
	for _, a := range []int{0, 1, 2, 3} {
		id, olt, job := ids("e")
		events = append(events,
			startedQuota(streams.ExecutionStarted{ExecutionID: id, OLTID: olt, JobID: job, Attempt: a}),
			succeededQuota(streams.ExecutionSucceeded{ExecutionID: id, OLTID: olt, JobID: job, Attempt: a, DurationMS: 7}),
			failedQuota(streams.ExecutionFailed{ExecutionID: id, OLTID: olt, JobID: job, Attempt: a, DurationMS: 7, Retryable: true}),
			failedQuota(streams.ExecutionFailed{ExecutionID: id, OLTID: olt, JobID: job, Attempt: a, DurationMS: 7}),
			skippedQuota(streams.ExecutionSkipped{ExecutionID: id, OLTID: olt, JobID: job, Attempt: a}),
			interruptedQuota(streams.ExecutionInterrupted{ExecutionID: id, OLTID: olt, JobID: job, Attempt: a}))
	}
	events = append(events, abortedQuota(streams.ExecutionAborted{ExecutionID: "e", OLTID: "olt-a", JobID: "job-1"}))
	outcomes := []string{outcomePending, outcomeRunning, outcomeSuccess, outcomeFailed, outcomeSkipped, outcomeInterrupted, outcomeAborted}
	for _, q := range events {
		for _, stored := range outcomes {
			for _, attempt := range []int32{0, 1, 2, 3} {
				name := fmt.Sprintf("%s(%d) over %s(%d)", q.outcome, q.attempt, stored, attempt)
				tx, err := db.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(ctx, `INSERT INTO quota_executions (execution_id, olt_id, task_type, outcome, attempt) VALUES ('e', 'olt-a', 'job-1', $1, $2)`, stored, attempt); err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(ctx, q.sql(), q.args()...); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var outcome string
				var got int32
				if err := tx.QueryRow(ctx, `SELECT outcome, attempt FROM quota_executions WHERE execution_id = 'e'`).Scan(&outcome, &got); err != nil {
					t.Fatal(err)
				}
				if err := tx.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
				wantOutcome, wantAttempt := stored, attempt
				if q.replaces(stored, attempt) {
					wantOutcome, wantAttempt = q.outcome, max(attempt, int32(q.attempt))
				}
				if outcome != wantOutcome || got != wantAttempt {
					t.Errorf("%s: SQL left %s(%d), replaces says %s(%d)", name, outcome, got, wantOutcome, wantAttempt)
				}
			}
		}
	}
}

// The quotas follow the executions read model where the planner ends an
// execution after a failed or lost attempt: the skip of the retry and an
// abort end it (SKIPPED counts in quota_skipped, ABORTED in no bucket), a
// stale skip of the failed attempt itself does not, and nothing but a
// duplicate replaces an abort.
func TestRetryEndsInQuotas(t *testing.T) {
	id, olt, job := "e", "olt-a", "job-1"
	for _, tc := range []struct {
		name    string
		stored  string
		attempt int32
		ev      execQuotaEvent
		want    bool
	}{
		{"skip of the retry after a failure", outcomeFailed, 1, skippedQuota(streams.ExecutionSkipped{ExecutionID: id, OLTID: olt, JobID: job, Attempt: 2}), true},
		{"skip of the retry after a lost attempt", outcomeInterrupted, 1, skippedQuota(streams.ExecutionSkipped{ExecutionID: id, OLTID: olt, JobID: job, Attempt: 2}), true},
		{"stale skip of the failed attempt", outcomeFailed, 1, skippedQuota(streams.ExecutionSkipped{ExecutionID: id, OLTID: olt, JobID: job, Attempt: 1}), false},
		{"skip without attempt after a failure", outcomeFailed, 1, skippedQuota(streams.ExecutionSkipped{ExecutionID: id, OLTID: olt, JobID: job}), false},
		{"abort of the retry", outcomeFailed, 1, abortedQuota(streams.ExecutionAborted{ExecutionID: id, OLTID: olt, JobID: job}), true},
		{"abort after a lost attempt", outcomeInterrupted, 1, abortedQuota(streams.ExecutionAborted{ExecutionID: id, OLTID: olt, JobID: job}), true},
		{"abort of a pending run", outcomePending, 0, abortedQuota(streams.ExecutionAborted{ExecutionID: id, OLTID: olt, JobID: job}), true},
		{"abort after a success", outcomeSuccess, 1, abortedQuota(streams.ExecutionAborted{ExecutionID: id, OLTID: olt, JobID: job}), false},
		{"late failure after an abort", outcomeAborted, 1, failedQuota(streams.ExecutionFailed{ExecutionID: id, OLTID: olt, JobID: job, Attempt: 1}), false},
		{"late start after an abort", outcomeAborted, 1, startedQuota(streams.ExecutionStarted{ExecutionID: id, OLTID: olt, JobID: job, Attempt: 2}), false},
		{"late failure after the retry's skip", outcomeSkipped, 2, failedQuota(streams.ExecutionFailed{ExecutionID: id, OLTID: olt, JobID: job, Attempt: 1}), false},
	} {
		if got := tc.ev.replaces(tc.stored, tc.attempt); got != tc.want {
			t.Errorf("%s: replaces %v, want %v", tc.name, got, tc.want)
		}
	}
}
