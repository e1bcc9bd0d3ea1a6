package projector

import (
	"context"
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// An interrupted attempt (its lease expired without a terminal event) ends
// INTERRUPTED with the reason; a late terminal event of the same attempt
// does not resurrect it; the next attempt of the execution still runs and
// ends; an interruption projected after the next attempt started ends only
// its own attempt row.
func TestInterruptedExecutions(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	subj := func(phase string) string { return streams.SubjectExec("olt-a", phase) }
	started := func(exec string, attempt int, rev uint64, poller string) streams.ExecutionStarted {
		return streams.ExecutionStarted{ExecutionID: exec, JobID: "job-1", OLTID: "olt-a", PollerID: poller, Attempt: attempt, LeaseRevision: rev, StartedAt: t0}
	}
	interrupted := func(exec string, attempt int, rev uint64) streams.ExecutionInterrupted {
		return streams.ExecutionInterrupted{ExecutionID: exec, JobID: "job-1", OLTID: "olt-a", PollerID: "doomed", Attempt: attempt, LeaseRevision: rev,
			StartedAt: t0, InterruptedAt: t0.Add(40 * time.Second), DetectedBy: "p2", Reason: "lease of poller doomed expired"}
	}
	succeeded := func(exec string, attempt int, rev uint64, poller string) streams.ExecutionSucceeded {
		return streams.ExecutionSucceeded{ExecutionID: exec, JobID: "job-1", OLTID: "olt-a", PollerID: poller, Attempt: attempt, LeaseRevision: rev,
			StartedAt: t0, FinishedAt: t0.Add(time.Hour), DurationMS: 5, Varbinds: 3}
	}
	failed := streams.ExecutionFailed{ExecutionID: "i1", JobID: "job-1", OLTID: "olt-a", PollerID: "doomed", Attempt: 1, LeaseRevision: 5,
		StartedAt: t0, FinishedAt: t0.Add(time.Hour), Error: "lease lost"}

	steps := []struct {
		name, phase string
		ev          streams.Event
		exec        string
		status      string
		attempt     int
		attempts    map[int]string
	}{
		{"started", streams.PhaseStarted, started("i1", 1, 5, "doomed"), "i1", StatusRunning, 1, map[int]string{1: StatusRunning}},
		{"interrupted", streams.PhaseInterrupted, interrupted("i1", 1, 5), "i1", StatusInterrupted, 1, map[int]string{1: StatusInterrupted}},
		{"duplicate interrupted", streams.PhaseInterrupted, interrupted("i1", 1, 5), "i1", StatusInterrupted, 1, map[int]string{1: StatusInterrupted}},
		{"late success of the dead attempt", streams.PhaseSucceeded, succeeded("i1", 1, 5, "doomed"), "i1", StatusInterrupted, 1, map[int]string{1: StatusInterrupted}},
		{"late failure of the dead attempt", streams.PhaseFailed, failed, "i1", StatusInterrupted, 1, map[int]string{1: StatusInterrupted}},
		{"redelivered: attempt 2 started", streams.PhaseStarted, started("i1", 2, 9, "p2"), "i1", StatusRunning, 2, map[int]string{1: StatusInterrupted, 2: StatusRunning}},
		{"attempt 2 succeeded", streams.PhaseSucceeded, succeeded("i1", 2, 9, "p2"), "i1", StatusSuccess, 2, map[int]string{1: StatusInterrupted, 2: StatusSuccess}},

		// The NodeDue came back to another poller before the interruption
		// was published: the execution follows attempt 2, attempt 1's row
		// still ends.
		{"i2 started", streams.PhaseStarted, started("i2", 1, 11, "doomed"), "i2", StatusRunning, 1, map[int]string{1: StatusRunning}},
		{"i2 attempt 2 started", streams.PhaseStarted, started("i2", 2, 14, "p2"), "i2", StatusRunning, 2, map[int]string{1: StatusRunning, 2: StatusRunning}},
		{"i2 attempt 1 interrupted late", streams.PhaseInterrupted, interrupted("i2", 1, 11), "i2", StatusRunning, 2, map[int]string{1: StatusInterrupted, 2: StatusRunning}},
		{"i2 attempt 2 succeeded", streams.PhaseSucceeded, succeeded("i2", 2, 14, "p2"), "i2", StatusSuccess, 2, map[int]string{1: StatusInterrupted, 2: StatusSuccess}},

		// An attempt that ended before its lease expired keeps its outcome.
		{"i3 started", streams.PhaseStarted, started("i3", 1, 20, "p1"), "i3", StatusRunning, 1, map[int]string{1: StatusRunning}},
		{"i3 succeeded", streams.PhaseSucceeded, succeeded("i3", 1, 20, "p1"), "i3", StatusSuccess, 1, map[int]string{1: StatusSuccess}},
		{"i3 interrupted after its success", streams.PhaseInterrupted, interrupted("i3", 1, 20), "i3", StatusSuccess, 1, map[int]string{1: StatusSuccess}},
	}
	for _, s := range steps {
		seq := r.publish(subj(s.phase), s.ev)
		r.waitCheckpoint(streams.ConsumerProjectorExec, seq)
		e := r.execution(s.exec)
		if e.Status != s.status || e.Attempt != s.attempt {
			t.Fatalf("%s: execution %+v, want %s attempt %d", s.name, e, s.status, s.attempt)
		}
		a := r.attempts(s.exec)
		if len(a) != len(s.attempts) {
			t.Fatalf("%s: attempts %v, want %v", s.name, a, s.attempts)
		}
		for n, st := range s.attempts {
			if a[n] != st {
				t.Fatalf("%s: attempts %v, want %v", s.name, a, s.attempts)
			}
		}
		if s.name == "interrupted" {
			if e.Error != "lease of poller doomed expired" || e.Finished == nil || !e.Finished.Equal(t0.Add(40*time.Second)) ||
				e.Duration == nil || *e.Duration != 40000 || e.PollerID != "doomed" {
				t.Fatalf("interrupted execution %+v", e)
			}
		}
	}
}

// An execution whose varbind batches were dead-lettered is FAILED, not
// SUCCESS, whichever of the dead letter and execution.succeeded the
// projector sees first; the real dead-letter path is used (a malformed
// batch refused by projector-varbinds).
func TestDeadLetteredBatchesFailTheExecution(t *testing.T) {
	r := newRig(t)
	r.start()
	t0 := time.Now().UTC()
	subj := func(phase string) string { return streams.SubjectExec("olt-a", phase) }
	started := func(exec string) streams.ExecutionStarted {
		return streams.ExecutionStarted{ExecutionID: exec, JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, LeaseRevision: 4, StartedAt: t0}
	}
	succeeded := func(exec string) streams.ExecutionSucceeded {
		return streams.ExecutionSucceeded{ExecutionID: exec, JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: 1, LeaseRevision: 4,
			StartedAt: t0, FinishedAt: t0.Add(time.Second), DurationMS: 1000, Varbinds: 10, Batches: 3}
	}
	// No collected_at: the projector refuses the batch as malformed.
	badBatch := func(exec string, n int) streams.VarbindBatch {
		return streams.VarbindBatch{ExecutionID: exec, JobID: "job-1", OLTID: "olt-a", IndexScheme: SchemePonONU, LeaseRevision: 4, Batch: n, Columns: huaweiColumns}
	}
	deadLettered := func(exec string, want int) {
		t.Helper()
		r.eventually("dead letters of "+exec+" projected", func() bool {
			var n int
			err := r.pool.QueryRow(context.Background(), `SELECT dead_lettered_batches FROM executions WHERE id = $1`, exec).Scan(&n)
			return err == nil && n == want
		})
	}

	// Succeeded first, then two batches dead-lettered.
	r.waitCheckpoint(streams.ConsumerProjectorExec, r.publish(subj(streams.PhaseStarted), started("d1")))
	r.waitCheckpoint(streams.ConsumerProjectorExec, r.publish(subj(streams.PhaseSucceeded), succeeded("d1")))
	if e := r.execution("d1"); e.Status != StatusSuccess {
		t.Fatalf("before the dead letters: %+v", e)
	}
	r.publish(streams.SubjectVarbinds("olt-a"), badBatch("d1", 1))
	deadLettered("d1", 1)
	if e := r.execution("d1"); e.Status != StatusFailed || e.Error != "1 varbind batch dead-lettered" {
		t.Fatalf("after one dead letter: %+v", e)
	}
	r.publish(streams.SubjectVarbinds("olt-a"), badBatch("d1", 2))
	deadLettered("d1", 2)
	if e := r.execution("d1"); e.Status != StatusFailed || e.Error != "2 varbind batches dead-lettered" {
		t.Fatalf("after two dead letters: %+v", e)
	}
	if a := r.attempts("d1"); a[1] != StatusFailed {
		t.Fatalf("attempt of d1: %v", a)
	}

	// Dead letter first, then succeeded.
	r.waitCheckpoint(streams.ConsumerProjectorExec, r.publish(subj(streams.PhaseStarted), started("d2")))
	r.publish(streams.SubjectVarbinds("olt-a"), badBatch("d2", 1))
	deadLettered("d2", 1)
	if e := r.execution("d2"); e.Status != StatusRunning {
		t.Fatalf("a dead letter moved a running execution: %+v", e)
	}
	r.waitCheckpoint(streams.ConsumerProjectorExec, r.publish(subj(streams.PhaseSucceeded), succeeded("d2")))
	if e := r.execution("d2"); e.Status != StatusFailed || e.Error != "1 varbind batch dead-lettered" || e.Varbinds != 10 {
		t.Fatalf("success after a dead letter: %+v", e)
	}
	if a := r.attempts("d2"); a[1] != StatusFailed {
		t.Fatalf("attempt of d2: %v", a)
	}

	// The dead letter comes before the execution is known at all.
	r.publish(streams.SubjectVarbinds("olt-a"), badBatch("d3", 1))
	r.eventually("dead letter of d3 recorded", func() bool {
		var n int
		err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM execution_dead_letters WHERE execution_id = 'd3'`).Scan(&n)
		return err == nil && n == 1
	})
	r.waitCheckpoint(streams.ConsumerProjectorExec, r.publish(subj(streams.PhaseStarted), started("d3")))
	r.waitCheckpoint(streams.ConsumerProjectorExec, r.publish(subj(streams.PhaseSucceeded), succeeded("d3")))
	if e := r.execution("d3"); e.Status != StatusFailed {
		t.Fatalf("d3: %+v", e)
	}

	// A failed execution keeps its own error.
	r.waitCheckpoint(streams.ConsumerProjectorExec, r.publish(subj(streams.PhaseStarted), started("d4")))
	r.waitCheckpoint(streams.ConsumerProjectorExec, r.publish(subj(streams.PhaseFailed), streams.ExecutionFailed{ExecutionID: "d4", JobID: "job-1", OLTID: "olt-a",
		PollerID: "p1", Attempt: 1, LeaseRevision: 4, StartedAt: t0, FinishedAt: t0, Error: "request timeout"}))
	r.publish(streams.SubjectVarbinds("olt-a"), badBatch("d4", 1))
	deadLettered("d4", 1)
	if e := r.execution("d4"); e.Status != StatusFailed || e.Error != "request timeout" {
		t.Fatalf("d4: %+v", e)
	}

	// The same dead letter twice (a re-publish after the duplicate
	// window) counts once.
	dlq, err := r.js.Stream(context.Background(), streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	last, err := dlq.GetLastMsgForSubject(context.Background(), streams.SubjectDLQ(streams.ConsumerProjectorVarbinds))
	if err != nil {
		t.Fatal(err)
	}
	seq := r.publishRaw(streams.SubjectDLQ(streams.ConsumerProjectorVarbinds), last.Data)
	r.waitCheckpoint(streams.ConsumerProjectorDLQ, seq)
	if e := r.execution("d4"); e.Error != "request timeout" {
		t.Fatalf("d4 after a duplicate dead letter: %+v", e)
	}
	var n int
	if err := r.pool.QueryRow(context.Background(), `SELECT dead_lettered_batches FROM executions WHERE id = 'd4'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("d4 dead-lettered batches %d (%v)", n, err)
	}
}
