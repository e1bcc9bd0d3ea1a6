package projector

import (
	"testing"
	"time"

	"github.com/facho-olt/facho/streams"
)

// lifecycle publishes the events of executions of job-1 on olt-a through
// the rig's live projector, each waited for until projected: attempt n
// of every execution starts n minutes after t0 with lease revision 4+n.
type lifecycle struct {
	t  *testing.T
	r  *rig
	t0 time.Time
}

func (l lifecycle) at(attempt int) time.Time { return l.t0.Add(time.Duration(attempt) * time.Minute) }

func (l lifecycle) exec(phase string, ev streams.Event) {
	l.t.Helper()
	l.r.waitCheckpoint(streams.ConsumerProjectorExec, l.r.publish(streams.SubjectExec("olt-a", phase), ev))
}

func (l lifecycle) due(id string) {
	l.t.Helper()
	l.r.waitCheckpoint(streams.ConsumerProjectorSchedule, l.r.publish(streams.SubjectNodeDue("olt-a"), nodeDue(id, l.t0)))
}

func (l lifecycle) started(id string, attempt int) {
	l.t.Helper()
	l.exec(streams.PhaseStarted, streams.ExecutionStarted{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: attempt,
		LeaseRevision: uint64(4 + attempt), StartedAt: l.at(attempt)})
}

// failed is a retryable failure: a retry follows.
func (l lifecycle) failed(id string, attempt int) {
	l.t.Helper()
	l.exec(streams.PhaseFailed, streams.ExecutionFailed{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: attempt,
		LeaseRevision: uint64(4 + attempt), StartedAt: l.at(attempt), FinishedAt: l.at(attempt).Add(time.Second), DurationMS: 1000,
		Error: "timeout", Retryable: true})
}

func (l lifecycle) interrupted(id string, attempt int) {
	l.t.Helper()
	l.exec(streams.PhaseInterrupted, streams.ExecutionInterrupted{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: attempt,
		LeaseRevision: uint64(4 + attempt), StartedAt: l.at(attempt), InterruptedAt: l.at(attempt).Add(2 * time.Second), DetectedBy: "p2",
		Reason: "lease expired"})
}

func (l lifecycle) succeeded(id string, attempt int) {
	l.t.Helper()
	l.exec(streams.PhaseSucceeded, streams.ExecutionSucceeded{ExecutionID: id, JobID: "job-1", OLTID: "olt-a", PollerID: "p1", Attempt: attempt,
		LeaseRevision: uint64(4 + attempt), StartedAt: l.at(attempt), FinishedAt: l.at(attempt).Add(2 * time.Second), DurationMS: 2000, Varbinds: 8})
}
